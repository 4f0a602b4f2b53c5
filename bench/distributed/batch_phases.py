#!/usr/bin/env python3
"""Seconds between consecutive TCSOLVE_TRACE marks of the job threads of a batch, per job (mean), for each trace file given (bench/distributed/batch_phases.sh writes them): where a worker per
GPU in one process loses against one worker and against mpirun.
    python3 bench/distributed/batch_phases.py phases_one.txt phases_two.txt phases_mpi.txt"""
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^(\[\d+,(\d+)\]<stderr>:)?tcsolve trace\s+([\d.]+) ms t(\d+)\s+(.*)$")


def phases(path):
    marks = defaultdict(list)  # (rank, thread) -> [(ms, what)]
    for line in open(path):
        m = LINE.match(line.strip())
        if m:
            marks[(m.group(2) or "0", m.group(4))].append((float(m.group(3)), m.group(5)))
    out = defaultdict(float)
    threads = 0
    for key, ms in marks.items():
        if not any(w == "job: start" for _, w in ms):
            continue  # a helper thread (start-up, writes)
        threads += sum(1 for _, w in ms if w == "job: start")
        for (t0, a), (t1, b) in zip(ms, ms[1:]):
            if b == "job: start":
                continue
            out[f"{a} -> {b}"] += (t1 - t0) / 1e3 / 1.0
    return out, threads  # (threads: the jobs)


def main():
    rows = [phases(p) for p in sys.argv[1:]]
    keys = sorted({k for r, _ in rows for k in r}, key=lambda k: -max(r.get(k, 0) for r, _ in rows))
    print(f"{'between marks (s, summed over jobs; per job)':60s}" + "".join(f"{p.split('/')[-1]:>20s}" for p in sys.argv[1:]))
    print(f"{'jobs':60s}" + "".join(f"{n:20d}" for _, n in rows))
    for k in keys:
        vals = [r.get(k, 0.0) / max(n, 1) for r, n in rows]
        if max(vals) >= 0.01:
            print(f"{k[:60]:60s}" + "".join(f"{v:20.3f}" for v in vals))


if __name__ == "__main__":
    main()
