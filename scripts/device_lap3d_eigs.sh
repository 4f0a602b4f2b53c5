T=.device-data/s3/tcsolve; mkdir -p /tmp/deps; tar -xJf .device-data/s3/deps.tar.xz -C /tmp/deps; export LD_LIBRARY_PATH=/tmp/deps
check() {  # closed form of gen:lap3d:N, largest k
python3 - "$1" "$2" <<'PY'
import json, sys, math, itertools
j = json.loads(open(sys.argv[1]).readline()); N = int(sys.argv[2])
c = [2*math.cos(i*math.pi/(N+1)) for i in range(1, N+1)]
top = sorted((6 - c[i] - c[jj] - c[k] for i, jj, k in itertools.product(range(N-12, N), repeat=3)), reverse=True)[:len(j["eigenvalues"])]
err = max(abs(a-b) for a, b in zip(j["eigenvalues"], top))
print("N=%d status %s iterations %d; max |lambda - closed form| = %.3g; max residual %.3g; seconds %s; peak_device_bytes %.4g; certificate: %s" % (
  N, j["status"], j["iterations"], err, max(j["residual_norms"]), j["seconds"], j["peak_device_bytes"], j["certificate"]))
PY
}
timeout 120 $T eigs gen:lap3d:200 --k 16 --which largest --json --quiet > $OUT/e200.json 2>&1; echo rc=$?; check $OUT/e200.json 200
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > $OUT/e400.smi & S=$!
/usr/bin/time -v -o $OUT/e400.time timeout ${E400_LIMIT:-400} $T eigs gen:lap3d:400 --k 16 --which largest --json --quiet ${E400_ARGS:-} > $OUT/e400.json 2>&1; echo rc=$?
kill $S; echo "card peak $(sort -n $OUT/e400.smi | tail -1) MiB"; grep Maximum $OUT/e400.time; check $OUT/e400.json 400; tail -c 400 $OUT/e400.json
