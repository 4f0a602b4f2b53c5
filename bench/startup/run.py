"""Runs the start-up floor variants (startup_floor.c) 5 rounds, interleaved, and prints each one's
wall time as the parent sees it with the program's own phase times. Usage: run.py BUILD_DIR [TCSOLVE]"""
import json
import subprocess
import sys
import time

b = sys.argv[1]
cases = [("bare", [f"{b}/startup_bare"]), ("libraries loaded", [f"{b}/startup_linked"]),
         ("context alone", [f"{b}/startup_dl", "ctx"]), ("libraries, then context + handles", [f"{b}/startup_linked", "serial"]),
         ("context on a thread while loading", [f"{b}/startup_dl", "overlap"])]
if len(sys.argv) > 2:
    t = sys.argv[2]
    cases += [("tcsolve --version", [t, "--version"]),
              ("tcsolve eigs gen:lap2d:200 --k 16", [t, "eigs", "gen:lap2d:200", "--k", "16", "--json"])]
for rnd in range(5):
    for name, cmd in cases:
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        out = r.stdout.strip().replace("\n", " ")
        if "--json" in cmd:
            s = json.loads(r.stdout).get("seconds", {})
            out = "total %.3f init %.3f process %.3f" % (s.get("total", 0), s.get("init", 0), s.get("process", 0))
        print(f"round {rnd}  {name:36s} rc {r.returncode}  wall {wall:.3f}  {out[:160]}", flush=True)
