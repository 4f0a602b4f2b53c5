#!/usr/bin/env bash
# The CLI per problem size on the host and on the GPU (DEVICES="cpu cuda", the default; 2
# alternating runs each) or on the default path (DEVICES=auto REPS=3 ROWS=real: the real
# matrices only), `--json`: seconds.total and its phases, the process wall, the plan's
# prediction. Measured the threshold of --device auto's host rule (apps/cmd_eigs.cpp
# choose_small_eigs_device). On the device machine after `scripts/device_session.sh stage` (with
# the graph Laplacians bench/e2e/run_e2e.py writes, gzipped into $D/matrices):
#   bash bench/e2e/host_vs_gpu_sweep.sh
D=${D:-.device-data/s4}; T=$D/tcsolve; M=$D/matrices
mkdir -p /tmp/deps /tmp/s4; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache
$T eigs gen:lap2d:50 --k 4 -q >/dev/null 2>&1; $T eigs gen:lap2d:50 --k 4 -q --device cpu >/dev/null 2>&1
DEVICES=${DEVICES:-"cpu cuda"} REPS=${REPS:-2} ROWS=${ROWS:-all} python3 - "$T" "$M" <<'PY'
import subprocess, json, sys, time, os
T, M = sys.argv[1], sys.argv[2]
devices, reps, only_real = os.environ["DEVICES"].split(), int(os.environ["REPS"]), os.environ["ROWS"] == "real"
real = [("bcsstk21", [M + "/bcsstk21.mtx", "--k", "10"]), ("bcsstk10", [M + "/bcsstk10.mtx", "--k", "10"]),
        ("bcsstk19m", [M + "/bcsstk19.mtx", "--mass", M + "/bcsstm19.mtx", "--k", "10"]),
        ("dwt_2680", [M + "/dwt_2680.mtx", "--k", "10"]), ("1138LA", [M + "/1138_bus.mtx", "--k", "10", "--which", "largest"]),
        ("662", [M + "/662_bus.mtx", "--k", "6"]),
        ("crack", [M + "/crack_laplacian.mtx.gz", "--k", "8"]), ("fe4elt2", [M + "/fe_4elt2_laplacian.mtx.gz", "--k", "8"]),
        ("lux", [M + "/luxembourg_laplacian.mtx.gz", "--k", "8"])]
generated = [("lap2d100", ["gen:lap2d:100", "--k", "16"]), ("lap2d150", ["gen:lap2d:150", "--k", "16"]),
        ("lap2d200", ["gen:lap2d:200", "--k", "16"]), ("lap3d20", ["gen:lap3d:20", "--k", "16"]),
        ("lap3d30", ["gen:lap3d:30", "--k", "16"]), ("lap3d40L", ["gen:lap3d:40", "--k", "16", "--which", "largest"]),
        ("solve3d30", ["gen:lap3d:30", "--rhs", "random:32"])]
for name, args in real + ([] if only_real else generated):
    task = "solve" if "--rhs" in args else "eigs"
    out, reason = [], ""
    for rep in range(reps):
        for dev in devices:
            t0 = time.time(); p = subprocess.run([T, task] + args + ["--device", dev, "--json"], capture_output=True, text=True); w = time.time() - t0
            try:
                d = json.loads(p.stdout); s = d["seconds"]; reason = d.get("device_reason", "")
                out.append(f"{dev}->{d['backend']} {d['status'][:4]} total {s['total']:.4f} plan {s.get('plan',0):.4f} "
                           f"setup {s['setup']:.4f} solve {s['solve']:.4f} verify {s.get('verify',0):.4f} wall {w:.3f} "
                           f"pred {d.get('predicted_seconds',0):.4f} {d.get('method','')}/{d.get('transform','')}/{d.get('verification','')}")
            except Exception:
                out.append(f"{dev} rc {p.returncode} {p.stderr[-200:]}")
    print(f"== {name}  {reason[:60]}"); print("\n".join("   " + x for x in out))
PY
