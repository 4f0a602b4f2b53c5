#!/usr/bin/env bash
# The CLI on the host against the GPU, per problem size, 2 alternating runs each (--device cpu /
# cuda, --json): seconds.total, verify, solve and the process wall. Measured the threshold of
# --device auto's host rule (apps/cmd_eigs.cpp choose_small_eigs_device). On the device machine
# after `scripts/device_session.sh stage` (with the graph Laplacians bench/e2e/run_e2e.py writes,
# gzipped into $D/matrices):  bash bench/e2e/host_vs_gpu_sweep.sh
D=${D:-.device-data/s4}; T=$D/tcsolve; M=$D/matrices
mkdir -p /tmp/deps /tmp/s4; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache
$T eigs gen:lap2d:50 --k 4 -q >/dev/null 2>&1; $T eigs gen:lap2d:50 --k 4 -q --device cpu >/dev/null 2>&1
python3 - "$T" "$M" <<'PY'
import subprocess, json, sys, time
T, M = sys.argv[1], sys.argv[2]
rows = [("bcsstk21", [M + "/bcsstk21.mtx", "--k", "10"]), ("bcsstk10", [M + "/bcsstk10.mtx", "--k", "10"]),
        ("bcsstk19m", [M + "/bcsstk19.mtx", "--mass", M + "/bcsstm19.mtx", "--k", "10"]),
        ("dwt_2680", [M + "/dwt_2680.mtx", "--k", "10"]), ("1138LA", [M + "/1138_bus.mtx", "--k", "10", "--which", "largest"]),
        ("662", [M + "/662_bus.mtx", "--k", "6"]),
        ("crack", [M + "/crack_laplacian.mtx.gz", "--k", "8"]), ("fe4elt2", [M + "/fe_4elt2_laplacian.mtx.gz", "--k", "8"]),
        ("lux", [M + "/luxembourg_laplacian.mtx.gz", "--k", "8"]),
        ("lap2d100", ["gen:lap2d:100", "--k", "16"]), ("lap2d150", ["gen:lap2d:150", "--k", "16"]),
        ("lap2d200", ["gen:lap2d:200", "--k", "16"]), ("lap3d20", ["gen:lap3d:20", "--k", "16"]),
        ("lap3d30", ["gen:lap3d:30", "--k", "16"]), ("lap3d40L", ["gen:lap3d:40", "--k", "16", "--which", "largest"]),
        ("solve3d30", ["gen:lap3d:30", "--rhs", "random:32"])]
for name, args in rows:
    task = "solve" if "--rhs" in args else "eigs"
    out = []
    for rep in range(2):
        for dev in ("cpu", "cuda"):
            t0 = time.time(); p = subprocess.run([T, task] + args + ["--device", dev, "--json"], capture_output=True, text=True); w = time.time() - t0
            try:
                d = json.loads(p.stdout); s = d["seconds"]
                out.append(f"{dev} {d['status'][:4]} tot {s['total']:.4f} ver {s.get('verify',0):.4f} sol {s['solve']:.4f} wall {w:.3f} " + (d.get('method','') + '/' + str(d.get('transform',''))))
            except Exception as e:
                out.append(f"{dev} rc {p.returncode} {p.stderr[-200:]}")
    print(f"== {name}"); print("\n".join("   " + x for x in out))
PY
