#!/usr/bin/env bash
# parallel_for's persistent workers against a thread per chunk and loop (TCSOLVE_HOST_POOL=0),
# interleaved in one call, on the host (--device cpu): seconds.total of each row, 3 runs each.
# On the device machine after `scripts/device_session.sh stage` (graph Laplacians as in
# bench/e2e/host_vs_gpu_sweep.sh):  bash bench/e2e/host_pool_ab.sh
D=${D:-.device-data/s4}; T=$D/tcsolve; M=$D/matrices
mkdir -p /tmp/deps /tmp/s4; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache
$T eigs gen:lap2d:50 --k 4 -q --device cpu >/dev/null 2>&1
python3 - "$T" "$M" <<'PY'
import subprocess, json, sys, os, statistics
T, M = sys.argv[1], sys.argv[2]
rows = [("bcsstk21", ["eigs", M + "/bcsstk21.mtx", "--k", "10"]),
        ("crack", ["eigs", M + "/crack_laplacian.mtx.gz", "--k", "8"]),
        ("fe4elt2", ["eigs", M + "/fe_4elt2_laplacian.mtx.gz", "--k", "8"]),
        ("lap2d100", ["eigs", "gen:lap2d:100", "--k", "16"]), ("lap2d200", ["eigs", "gen:lap2d:200", "--k", "16"]),
        ("lap3d30", ["eigs", "gen:lap3d:30", "--k", "16"]), ("lap3d40L", ["eigs", "gen:lap3d:40", "--k", "16", "--which", "largest"]),
        ("solve3d30", ["solve", "gen:lap3d:30", "--rhs", "random:32"]),
        ("lux", ["eigs", M + "/luxembourg_laplacian.mtx.gz", "--k", "8"])]
for name, args in rows:
    res = {"pool": [], "threads": []}
    for rep in range(3):
        for mode in ("pool", "threads"):
            env = dict(os.environ)
            if mode == "threads": env["TCSOLVE_HOST_POOL"] = "0"
            p = subprocess.run([T] + args + ["--device", "cpu", "--json"], capture_output=True, text=True, env=env)
            d = json.loads(p.stdout); s = d["seconds"]
            res[mode].append((s["total"], s["solve"], d["status"]))
    f = lambda m: " ".join(f"{t:.4f}" for t, _, _ in res[m])
    print(f"{name:10s} pool {f('pool')}  threads {f('threads')}  median ratio {statistics.median(t for t,_,_ in res['pool'])/statistics.median(t for t,_,_ in res['threads']):.2f}  {sorted({st for m in res for _,_,st in res[m]})}")
PY
