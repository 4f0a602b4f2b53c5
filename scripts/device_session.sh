#!/usr/bin/env bash
# One device call of the GPU checks and the scale runs (Recipe B of ../shared/docs/gpu.md):
# binaries and static libraries built here (cmake -S . -B build-dev -DTCSOLVE_STATIC_BOOST=ON
# -DTCSOLVE_BUILD_PYTHON=OFF) are staged by `scripts/device_session.sh stage` into $D with the
# CHOLMOD/MUMPS/OpenBLAS shared libraries and the SuiteSparse matrices, then carried:
#   run(command="STEPS='tests python' bash scripts/device_session.sh", carry=[".device-data/s3"])
# STEPS (any of): tests memcheck python scale shift. Logs under $OUT.
#   tests     every GPU test binary (label gpu)
#   memcheck  compute-sanitizer memcheck on the solver/driver tests changed last
#   python    compiles the module for the machine's python3 against the carried libraries, runs
#             the pytest gpu tests (CuPy inputs)
#   scale     issue 11: tcsolve solve/eigs gen:lap3d:400 (card memory sampled by nvidia-smi)
#   shift     issue 10: shift-invert eigs on gen:elast3d:40 with its lumped mass, k = 10 and 200
set -u -o pipefail
D=${D:-.device-data/s3}
if [ "${1:-}" = stage ]; then
  B=${BUILD:-build-dev}
  rm -rf "$D" && mkdir -p "$D/tests" "$D/lib"
  cp "$B/apps/tcsolve" "$D/"
  cp "$B"/tests/*/test_*_gpu "$D/tests/"
  cp "$B"/{core,preprocess,spmm,factor,solvers}/libtcsolve_*.a "$D/lib/"
  cp .device-data/si/deps.tar.xz "$D/" && cp -r .device-data/si/matrices "$D/"
  strip --strip-debug "$D"/tests/* "$D/tcsolve" "$D"/lib/*.a 2>/dev/null
  du -sh "$D"; exit 0
fi
OUT=${OUT:-device-out}
mkdir -p "$OUT" /tmp/deps /tmp/s3
tar -xJf "$D/deps.tar.xz" -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps:${LD_LIBRARY_PATH:-}
export TCSOLVE_MATRICES=$PWD/$D/matrices TCSOLVE_TEST_BIN=$PWD/$D/tcsolve
T=$D/tcsolve
step() { echo "== $* $(date +%T)"; }
has() { case " ${STEPS:-tests} " in *" $1 "*) return 0;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
nproc; free -g | head -2

if has tests; then
  for t in test_apps_gpu test_factor_gpu test_solvers_gpu test_spmm_gpu test_spmm_large_gpu; do
    step "$t"
    timeout ${TEST_LIMIT:-200} "$D/tests/$t" > "$OUT/$t.log" 2>&1; echo "$t rc=$?"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/$t.log" | head -12
  done
fi
if has memcheck; then
  step memcheck
  timeout 150 compute-sanitizer --tool memcheck --leak-check no "$D/tests/test_solvers_gpu" \
    --gtest_filter='Eigs.Workspace*:Eigs.LumpedMass*:Eigs.Nearest*:Chebyshev*:BlockCg.Random*' > "$OUT/memcheck_solvers.log" 2>&1
  echo "memcheck solvers rc=$?"; tail -2 "$OUT/memcheck_solvers.log"
  timeout 120 compute-sanitizer --tool memcheck --leak-check no --target-processes all "$D/tests/test_apps_gpu" \
    --gtest_filter='AppsGpu.Reorder*:AppsGpu.Fits*' > "$OUT/memcheck_apps.log" 2>&1
  echo "memcheck apps rc=$?"; grep -E "ERROR SUMMARY" "$OUT/memcheck_apps.log" | sort | uniq -c; tail -3 "$OUT/memcheck_apps.log"
fi
if has python; then
  step "python module"
  PY=${PYTHON:-python3}
  $PY -c "import sys, numpy, scipy, cupy; print(sys.version.split()[0], numpy.__version__, scipy.__version__, cupy.__version__)"
  PKG=/tmp/s3/pkg/tcsolve; mkdir -p "$PKG"; cp python/tcsolve/*.py "$PKG/"
  EXT=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  CUDA=${CUDA_HOME:-/usr/local/cuda}
  c++ -O2 -std=c++17 -shared -fPIC -fvisibility=hidden $($PY -m pybind11 --includes) -I. \
    -DTCSOLVE_VERSION=\"0.1.0\" python/src/module.cpp -o "$PKG/_tcsolve$EXT" \
    -Wl,--start-group "$D"/lib/libtcsolve_*.a -Wl,--end-group \
    /tmp/deps/libcholmod.so.3 /tmp/deps/libdmumps_seq-5.5.so /tmp/deps/libmumps_common_seq-5.5.so -Wl,-rpath,/tmp/deps \
    -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcusolver -lcublas -lcusparse -lcudart -ldl -lpthread > "$OUT/py_compile.log" 2>&1
  echo "compile rc=$?"; tail -5 "$OUT/py_compile.log"
  export PYTHONPATH=/tmp/s3/pkg PYTHONDONTWRITEBYTECODE=1
  $PY -c "import tcsolve; print('cuda', tcsolve.built_with_cuda(), 'gpus', tcsolve.device_count())"
  (cd /tmp && timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu -rs "$OLDPWD/python/tests" 2>&1) | tee "$OUT/pytest_gpu.log" | tail -15
fi
sample() {  # card memory in use, every 200 ms, while $1 runs
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/$2.smi" 2>/dev/null & local s=$!
  if [ -x /usr/bin/time ]; then /usr/bin/time -v -o "$OUT/$2.time" bash -c "$1" > "$OUT/$2.json" 2> "$OUT/$2.err"
  else bash -c "$1" > "$OUT/$2.json" 2> "$OUT/$2.err"; fi; local rc=$?
  touch "$OUT/$2.time"
  kill $s 2>/dev/null; wait $s 2>/dev/null
  echo "$2 rc=$rc; card peak $(sort -n "$OUT/$2.smi" | tail -1) MiB; host peak $(grep -E 'Maximum resident' "$OUT/$2.time" | awk '{print $NF}') kB"
  tail -c 600 "$OUT/$2.err"; head -c 3000 "$OUT/$2.json"; echo
}
if has scale; then
  step "solve lap3d:400"
  sample "timeout ${SOLVE_LIMIT:-280} $T solve gen:lap3d:400 --rhs random:16 --json --quiet" solve_lap3d400
  step "refusal: eigs gen:lap3d:200 --k 400"
  $T eigs gen:lap3d:200 --k 400 --device cuda --quiet; echo "rc=$?"
  step "eigs lap3d:400"
  sample "timeout ${EIGS_LIMIT:-280} $T eigs gen:lap3d:400 --k 16 --which largest --json --quiet" eigs_lap3d400
fi
if has shift; then
  step "shift-invert elast3d:40"
  timeout ${SHIFT_LIMIT:-300} python3 bench/shift_invert/run_bench.py "$T" cuda /tmp/s3/si --no-scipy 1 \
    --cases ${SHIFT_CASES:-gen:elast3d:40+lumped:10,gen:elast3d:40+lumped:200} 2>&1 | tee "$OUT/shift_gpu.log"
  cp /tmp/s3/si/shift_invert.csv "$OUT/shift_gpu.csv" 2>/dev/null
fi
step done
