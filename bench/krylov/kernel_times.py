#!/usr/bin/env python3
"""Per-kernel GPU time of one command from `ncu --csv --metrics gpu__time_duration.sum` output:
summed by kernel name, largest first, with launch counts. usage: kernel_times.py NCU_CSV [TOP]"""
import csv
import sys
from collections import defaultdict

tot, cnt = defaultdict(float), defaultdict(int)
with open(sys.argv[1]) as f:
    rows = [l for l in f if l.startswith('"')]
for r in csv.DictReader(rows):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"].split("(")[0][:70]
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "ns")
    v *= {"ns": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "nsecond": 1e-9}.get(unit, 1e-9)
    tot[name] += v
    cnt[name] += 1
all_t = sum(tot.values())
print(f"total kernel time {all_t:.4f} s over {sum(cnt.values())} launches")
for k in sorted(tot, key=tot.get, reverse=True)[: int(sys.argv[2]) if len(sys.argv) > 2 else 15]:
    print(f"{tot[k]:9.4f} s {100 * tot[k] / all_t:5.1f} %  {cnt[k]:6d} x {1e6 * tot[k] / cnt[k]:9.1f} us  {k}")
