# the default path (--device auto) of the small rows, 3 runs each: total and process wall
# The default path (--device auto) of the small real rows, 3 runs each (bench/e2e/host_vs_gpu_sweep.sh has the set-up).
D=${D:-.device-data/s4}; T=$D/tcsolve; M=$D/matrices
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache
python3 - "$T" "$M" <<'PY'
import subprocess, json, sys, time
T, M = sys.argv[1], sys.argv[2]
rows = [("bcsstk21", [M + "/bcsstk21.mtx", "--k", "10"]), ("bcsstk10", [M + "/bcsstk10.mtx", "--k", "10"]),
        ("bcsstk19m", [M + "/bcsstk19.mtx", "--mass", M + "/bcsstm19.mtx", "--k", "10"]),
        ("dwt_2680", [M + "/dwt_2680.mtx", "--k", "10"]), ("1138LA", [M + "/1138_bus.mtx", "--k", "10", "--which", "largest"]),
        ("662", [M + "/662_bus.mtx", "--k", "6"]),
        ("crack", [M + "/crack_laplacian.mtx.gz", "--k", "8"]), ("fe4elt2", [M + "/fe_4elt2_laplacian.mtx.gz", "--k", "8"]),
        ("lux", [M + "/luxembourg_laplacian.mtx.gz", "--k", "8"])]
for name, args in rows:
    out = []
    for rep in range(3):
        t0 = time.time(); p = subprocess.run([T, "eigs"] + args + ["--json"], capture_output=True, text=True); w = time.time() - t0
        d = json.loads(p.stdout); s = d["seconds"]
        out.append(f"{d['backend']} {d['status'][:4]} total {s['total']:.4f} plan {s['plan']:.4f} setup {s['setup']:.4f} solve {s['solve']:.4f} verify {s['verify']:.4f} wall {w:.3f} pred {d['predicted_seconds']:.4f} {d['method']}/{d['transform']}/{d['verification']}")
    print(f"== {name}  {d['device_reason'][:60]}"); print("\n".join("   " + x for x in out))
PY
