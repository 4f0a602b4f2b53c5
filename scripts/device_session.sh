#!/usr/bin/env bash
# One device call of the GPU checks and benchmarks (Recipe B of ../shared/docs/gpu.md): binaries
# and static libraries built here (cmake -S . -B build -DTCSOLVE_STATIC_BOOST=ON) are staged by
#   scripts/device_session.sh stage
# into $D (.device-data/s4) with the engines' shared libraries (CHOLMOD, MUMPS, OpenBLAS and
# theirs, resolved from the binary's ldd) and the SuiteSparse matrices, then carried:
#   run(command="STEPS='tests bench' bash scripts/device_session.sh", carry=[".device-data/s4"])
# STEPS (any of): tests memcheck python bench pybench issue42 ab. Logs and results under $OUT.
#   issue43   issue 43's GPU rows: bench/krylov/krylov_cupy_ratio.py (3D convection-diffusion
#             with GMRES, 3D Helmholtz with MINRES, against 32 cupyx calls), the direct-wins row
#             (lap2d:1000, 128 rhs: auto, direct, cg) and bench/krylov/solve_coverage.py on the GPU
#   polysweep issue 43: the GMRES polynomial's degree on the two 1M-row Krylov rows (POLY_DEGREES,
#             POLY_SPECS as SPEC:METHOD), jacobi beside it; wall, phases, iterations, residuals
#   issue45   issue 45 on 2 GPUs: test_thread_ranks_gpu, cli_gpus.sh, scaling.sh (ROWS45, REPS45) with
#             --gpus 2 beside one GPU and mpirun, the thread fence on and off with a trace
#   svds44    issue 44: the svds set-up traced on SVDS_SPECS (k = 50, centered)
#   svdscupy  issue 44: bench/svds/svds_cupy_ratio.py (the command's wall and phases against cupyx
#             svds on the same matrix, k = 50; SVDS_CUPY_SPEC, SVDS_CUPY_REPS, SVDS_CUPY_LIMIT)
#   issue42   issue 42's two held-out cases, this build and the baseline (BASE=path at staging)
#   ab        bench/ab.py of the baseline against this build on bench/e2e/ab_rows_gpu.txt
#   tests     every GPU test binary (label gpu); TEST_FILTER narrows test_solvers_gpu, FILTER_<binary>
#             narrows that binary (e.g. FILTER_test_spmm_large_gpu='Zero*')
#   memcheck  compute-sanitizer memcheck on the planner/re-check/device-check paths
#   python    compiles the module for the machine's python3, runs the pytest gpu tests
#   pymod     only compiles the module (for scripts run after this one)
#   pybench   the Python rows of the end-to-end benchmark (bench/e2e/python_rows.py gpu)
#   bench     the end-to-end benchmark (bench/e2e/run_e2e.py; ROWS narrows it)
#   extras    issue 18 on the GPU: the device-memory cap on a 1M-row solve with 128 right-hand
#             sides (peak against the cap, time against no cap), Ctrl-C (SIGINT) of a long solve,
#             SIGTERM of eigs and solve (partial results read by h5py)
#   checkpoint  issue 18: bench/checkpoint_cost.py (kill -9 and --resume-from, lap3d:200 k = 16,
#             CK_EVERY s), then a Chebyshev run of ~CK_LONG s (lap2d sized from a calibration run)
#             with and without --checkpoint at the default interval
set -u -o pipefail
D=${D:-.device-data/s4}
if [ "${1:-}" = stage ]; then
  B=${BUILD:-build}
  rm -rf "$D" && mkdir -p "$D/tests" "$D/lib" "$D/deps"
  cp "$B/apps/tcsolve" "$D/"
  [ -n "${BASE:-}" ] && cp "$BASE" "$D/base"
  cp "$B"/tests/*/test_*_gpu "$D/tests/"
  cp "$B"/{core,io,preprocess,spmm,factor,solvers,results}/libtcsolve_*.a "$D/lib/"
  for l in $(ldd "$B/apps/tcsolve" | awk '/=>/{print $3}' | grep -v /cuda/ |
             grep -E 'cholmod|mumps|amd|colamd|camd|suitesparse|metis|lapack|blas|gomp|gfortran|quadmath|scotch|umfpack|spqr|klu|btf'); do
    cp -L "$l" "$D/deps/"
  done
  tar -cJf "$D/deps.tar.xz" -C "$D/deps" . && rm -rf "$D/deps"
  cp -r ../shared/matrices/suitesparse "$D/matrices"
  cp -r ../shared/matrices/general "$D/matrices/general"
  strip --strip-debug "$D"/tests/* "$D/tcsolve" "$D"/lib/*.a 2>/dev/null
  # the carry holds 64 MiB: the binaries travel compressed
  tar -cJf "$D/bins.tar.xz" -C "$D" tests lib tcsolve $( [ -f "$D/base" ] && echo base ) && rm -rf "$D/tests" "$D/lib" "$D/base" "$D/tcsolve"
  du -sh "$D"; exit 0
fi
OUT=${OUT:-device-out}
mkdir -p "$OUT" /tmp/deps /tmp/s4
tar -xJf "$D/deps.tar.xz" -C /tmp/deps
[ -f "$D/bins.tar.xz" ] && [ ! -d "$D/tests" ] && tar -xJf "$D/bins.tar.xz" -C "$D"
export LD_LIBRARY_PATH=/tmp/deps:${LD_LIBRARY_PATH:-}
export TCSOLVE_MATRICES=$PWD/$D/matrices TCSOLVE_MATRICES_GENERAL=$PWD/$D/matrices/general TCSOLVE_TEST_BIN=$PWD/$D/tcsolve
export TCSOLVE_CACHE_DIR=/tmp/s4/cache
# NVLink multicast stays off on the shared hosts (device KINDS.md), whatever the image sets
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T=$D/tcsolve
step() { echo "== $* $(date +%T)"; }
has() { case " ${STEPS:-tests} " in *" $1 "*) return 0;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
nproc; free -g | head -2
$T --version

if has tests; then
  for t in ${TESTS:-test_apps_gpu test_factor_gpu test_solvers_gpu test_spmm_gpu test_spmm_large_gpu}; do
    step "$t"
    f=""
    [ "$t" = test_solvers_gpu ] && [ -n "${TEST_FILTER:-}" ] && f="--gtest_filter=$TEST_FILTER"
    v="FILTER_$t"; [ -n "${!v:-}" ] && f="--gtest_filter=${!v}"  # FILTER_<binary>: that binary's filter
    timeout ${TEST_LIMIT:-480} "$D/tests/$t" $f > "$OUT/$t.log" 2>&1; echo "$t rc=$?"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/$t.log" | head -12
    grep -A6 "Failure$" "$OUT/$t.log" | cut -c1-400 | head -${FAIL_LINES:-40}
  done
  [ -n "${NO_SMOKE:-}" ] || { step gpu_smoke
  timeout 300 bash tests/apps/gpu_smoke.sh "$T" "$OUT" | tail -15; echo "gpu_smoke rc=${PIPESTATUS[0]}"; }
fi
if has memcheck; then
  step memcheck
  timeout 200 compute-sanitizer --tool memcheck --leak-check no "$D/tests/test_solvers_gpu" \
    --gtest_filter="${MEMCHECK_FILTER:-Eigs.VerificationModes:Eigs.ReCheck*:Eigs.HundredFold*:Chebyshev.GivenBounds*:Chebyshev.Locked*:BlockCgMixed.*:MinresKernels*:MinresSteps*:GmresKernels*:GmresSteps*:Minres.ZeroRightHandSide*:Gmres.ZeroAndBadlyScaled*}" \
    > "$OUT/memcheck_solvers.log" 2>&1
  echo "memcheck solvers rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck_solvers.log" | tail -4
fi
if has python || has pybench || has pymod; then
  step "python module"
  PY=${PYTHON:-python3}
  PKG=/tmp/s4/pkg/tcsolve; mkdir -p "$PKG"; cp python/tcsolve/*.py "$PKG/"
  EXT=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  CUDA=${CUDA_HOME:-/usr/local/cuda}
  c++ -O2 -std=c++17 -shared -fPIC -fvisibility=hidden $($PY -m pybind11 --includes) -I. \
    -DTCSOLVE_VERSION=\"0.1.0\" python/src/*.cpp -o "$PKG/_tcsolve$EXT" \
    -Wl,--start-group "$D"/lib/libtcsolve_*.a -Wl,--end-group \
    /tmp/deps/libcholmod.so.3 $(ls /tmp/deps/libumfpack.so.? /tmp/deps/libklu.so.? /tmp/deps/libbtf.so.? /tmp/deps/libspqr.so.? /tmp/deps/libsuitesparseconfig.so.? 2>/dev/null) /tmp/deps/libdmumps_seq-5.5.so /tmp/deps/libmumps_common_seq-5.5.so /tmp/deps/libopenblas.so.0 $(ls /lib/x86_64-linux-gnu/libhdf5_serial.so.* /usr/lib/x86_64-linux-gnu/libhdf5_serial.so.* 2>/dev/null | head -1) -Wl,-rpath,/tmp/deps \
    -L"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib64" -lcusolver -lcublas -lcusparse -lcudart -ldl -lpthread > "$OUT/py_compile.log" 2>&1
  echo "compile rc=$?"; tail -5 "$OUT/py_compile.log"
  export PYTHONPATH=/tmp/s4/pkg PYTHONDONTWRITEBYTECODE=1
  $PY -c "import tcsolve; print('cuda', tcsolve.built_with_cuda(), 'gpus', tcsolve.device_count())"
  if has python; then
    (cd /tmp && timeout 200 $PY -m pytest -q -p no:cacheprovider -m gpu -rs "$OLDPWD/python/tests" 2>&1) | tee "$OUT/pytest_gpu.log" | tail -12
  fi
  if has pybench; then
    step "python rows"
    timeout 240 $PY bench/e2e/python_rows.py gpu "$OUT/python_rows_gpu.json" 2>&1 | tail -4
  fi
fi
if has extras; then
  step "memory cap: solve gen:lap3d:100 --rhs random:128"
  # the process's footprint seen by the driver (nvidia-smi, every 20 ms): a trivial run first
  # (CUDA context and library handles), then the solve without and with the cap
  watch() { nvidia-smi --query-compute-apps=used_memory --format=csv,noheader,nounits -lms 20 > "$1" 2>/dev/null & echo $!; }
  w=$(watch "$OUT/smi_idle.txt"); $T solve gen:lap3d:6 --rhs random:128 -q; sleep 0.1; kill $w
  echo "trivial run: nvidia-smi peak $(sort -n "$OUT/smi_idle.txt" | tail -1) MiB"
  for lim in "" 1000000000; do
    w=$(watch "$OUT/smi_${lim:-none}.txt")
    /usr/bin/time -f "wall %e s, host peak %M kB" env ${lim:+TCSOLVE_DEVICE_MEMORY_LIMIT=$lim TCSOLVE_TRACE=mem} \
      $T solve gen:lap3d:100 --rhs random:128 --json > "$OUT/memcap_${lim:-none}.json" 2> "$OUT/memcap_${lim:-none}.err"
    echo "limit=${lim:-none} rc=$?"; grep -E "trace" "$OUT/memcap_${lim:-none}.err" | awk 'NR%4==1' | cut -c1-200 | tail -12
    tail -1 "$OUT/memcap_${lim:-none}.err"; sleep 0.1; kill $w
    echo "nvidia-smi peak $(sort -n "$OUT/smi_${lim:-none}.txt" | tail -1) MiB"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('status','peak_device_bytes','process_device_bytes','message','iterations')}, d.get('seconds'))" "$OUT/memcap_${lim:-none}.json"
  done
  step "SIGINT after 4 s of a long Chebyshev run"
  timeout -s INT 4 $T eigs gen:lap3d:160 --k 32 --which largest --method chebyshev --tol 1e-13 \
    --out "$OUT/interrupted.h5" --json > "$OUT/interrupt.json" 2> "$OUT/interrupt.err"
  echo "interrupt rc=$? (130 expected)"; tail -2 "$OUT/interrupt.err"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], d['iterations'], d['message'][:200])" "$OUT/interrupt.json"
  ls -la "$OUT"/interrupted.h5* 2>&1 | head -3
  # SIGTERM (a scheduler's stop) of eigs and solve: exit 143 and a partial result h5py reads
  for cmd in "eigs gen:lap3d:160 --k 32 --which largest --method chebyshev --tol 1e-13" \
             "solve gen:lap3d:200 --rhs random:64 --tol 1e-13 --precond jacobi"; do
    step "SIGTERM after 4 s: $cmd"
    timeout --preserve-status -s TERM 4 $T $cmd --out /tmp/s4/term.h5 --json > /tmp/s4/term.json 2> /tmp/s4/term.err
    echo "rc=$? (143 expected)"; tail -1 /tmp/s4/term.err | cut -c1-300
    python3 -c "
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    a = dict(f.attrs); print({k: a[k] for k in ('status', 'task', 'iterations') if k in a}, {k: f[k].shape for k in f.keys() if hasattr(f[k], 'shape')})
" /tmp/s4/term.h5 2>&1 | tail -1
    echo "temporaries left: $(ls /tmp/s4 | grep -c 'tmp-')"; rm -f /tmp/s4/term.h5
  done
fi
if has checkpoint; then
  step "checkpoint: kill -9 and resume, lap3d:200 k = 16 largest, every ${CK_EVERY:-3} s"
  python3 bench/checkpoint_cost.py "$T" /tmp/s4/ck 200 16 ${CK_EVERY:-3} 0.6 > "$OUT/checkpoint_kill.json" 2> "$OUT/checkpoint_kill.err"
  echo "rc=$?"; tail -3 "$OUT/checkpoint_kill.err"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({k: d[k] for k in ('plain','checkpointed','killed','resumed','lost_seconds')})[:1500])" "$OUT/checkpoint_kill.json"
  if [ -n "${CK_LONG:-}${CK_SIDE:-}" ]; then
    step "checkpoint at the default interval (60 s): a ~${CK_LONG:-?} s Chebyshev solve"
    side=${CK_SIDE:-}
    if [ -z "$side" ]; then
      t=$($T eigs gen:lap2d:2000 --k 32 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['seconds']['solve'])")
      side=$(python3 -c "print(min(5000, int(round(2000*($CK_LONG/$t)**(1/3)/100))*100))")
      echo "calibration: lap2d:2000 k 32 solve $t s -> lap2d:$side"
    fi
    rm -rf /tmp/s4/ckl; mkdir -p /tmp/s4/ckl
    for mode in plain checkpointed; do
      extra=""; [ $mode = checkpointed ] && extra="--checkpoint /tmp/s4/ckl/ck.h5"
      timeout 280 $T eigs gen:lap2d:$side --k 32 --json $extra > "$OUT/ck_long_$mode.json" 2> "$OUT/ck_long_$mode.err"
      echo "$mode rc=$?"; tail -2 "$OUT/ck_long_$mode.err"
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], d['iterations'], d['seconds'], d.get('checkpoints'), d['method_reason'][:300])" "$OUT/ck_long_$mode.json"
    done
    ls -la /tmp/s4/ckl
  fi
fi
if has issue43; then
  step "issue43 krylov against cupyx"
  timeout ${I43_LIMIT:-300} python3 bench/krylov/krylov_cupy_ratio.py $T /tmp/s4/kr ${I43_ROWS:-} 2>&1 | tail -12
  step "issue43 direct row: lap2d:1000, 128 rhs"
  for m in auto direct cg; do
    /usr/bin/time -f "wall %e s" $T solve gen:lap2d:1000 --rhs random:128 --method $m --json > /tmp/s4/d.json 2> /tmp/s4/d.err
    echo "method $m rc=$? $(tail -1 /tmp/s4/d.err)"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('status'), d.get('method'), d.get('iterations'), d.get('seconds',{}).get('total'), max(d.get('backward_errors') or [0]), str(d.get('method_reason'))[:400])" /tmp/s4/d.json
  done
  step "issue43 coverage on the GPU"
  TCSOLVE_MATRICES_ROOT=$D/matrices timeout 300 python3 bench/krylov/solve_coverage.py $T "$OUT/coverage_gpu.md" --device cuda 2>&1 | tail -3
fi
if has polysweep; then
  step "issue43 GMRES polynomial degree sweep"
  for sm in ${POLY_SPECS:-gen:convdiff3d:100:gmres gen:helmholtz3d:100:minres}; do
    spec=${sm%:*}; meth=${sm##*:}
    for pc in jacobi ${POLY_DEGREES:-5 10 15 20 30}; do
      if [ $pc = jacobi ]; then extra="--precond jacobi"; else extra="--precond poly --precond-degree $pc"; fi
      for rep in 1 2; do
        /usr/bin/time -f "%e" -o /tmp/s4/w.txt $T solve $spec --rhs random:32 --tol 1e-8 --method $meth $extra --json > /tmp/s4/p.json 2> /tmp/s4/p.err
        rc=$?
        [ $rep = 1 ] && continue
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); s=d.get('seconds',{}); print('%-26s %-7s %-6s rc=%s wall %s s  total %.3f setup %.3f solve %.3f  it %s  %s  max res %.2e  %s' % (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], open(sys.argv[6]).read().strip(), s.get('total',0), s.get('setup',0), s.get('solve',0), d.get('iterations'), d.get('status'), max(d.get('residual_norms') or [0]), d.get('method')))" /tmp/s4/p.json $spec $meth $pc $rc /tmp/s4/w.txt || tail -3 /tmp/s4/p.err
      done
    done
  done
fi
if has issue45; then
  # issue 45 on the two-GPU kind: --gpus N (rank threads of one process) against one GPU and
  # mpirun (bench/distributed/scaling.sh, ROWS45), the CLI equality test, the svds set-up trace
  step "issue 45: test_thread_ranks_gpu, cli_gpus.sh"
  timeout 200 "$D/tests/test_thread_ranks_gpu" > "$OUT/test_thread_ranks_gpu.log" 2>&1; echo "test_thread_ranks_gpu rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/test_thread_ranks_gpu.log" | head -8
  PYTHON=python3 timeout 300 bash tests/distributed/cli_gpus.sh "$T" > "$OUT/cli_gpus.log" 2>&1; echo "cli_gpus rc=$?"; tail -6 "$OUT/cli_gpus.log"
  step "issue 45: scaling rows"
  OUT=$OUT T=$T REPS=${REPS45:-3} ROWS="${ROWS45:-eigs200 solve200}" timeout ${LIMIT45:-300} bash bench/distributed/scaling.sh 2>&1 | tee "$OUT/scaling.log"
  for v in 1 0; do
    TCSOLVE_THREAD_FENCE=$v TCSOLVE_TRACE=1 "$T" solve gen:lap3d:200 --rhs random:32 --gpus 2 --json > "$OUT/fence$v.json" 2> "$OUT/fence$v.err"
    echo "fence=$v rc=$?"; python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['seconds'], d['iterations']); print(d.get('distributed','')[:600])" "$OUT/fence$v.json"
  done
  grep -i "trace" "$OUT/fence1.err" | cut -c1-160 | head -40
fi
if has trace45; then
  # issue 45: where the wall clock of --gpus 2 goes (TCSOLVE_TRACE marks of every rank thread),
  # NCCL's own init timings, and the variants in VARS45 (env assignments, ';'-separated)
  for cmd in "solve gen:lap3d:200 --rhs random:32" "eigs gen:lap3d:200 --k 16 --which largest"; do
    for g in 1 2; do
      step "trace: $cmd --gpus $g"
      TCSOLVE_TRACE=1 /usr/bin/time -f "process wall %e s" $T $cmd --gpus $g --json > "$OUT/t45.json" 2> "$OUT/t45.err"
      echo "rc=$?"; tail -1 "$OUT/t45.err"
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: round(v, 3) for k, v in d['seconds'].items() if v})" "$OUT/t45.json"
      grep "tcsolve trace" "$OUT/t45.err" | cut -c15-110
    done
  done
  step "batch of 8 (lap3d:150 k 16) with one worker and a worker per GPU, traced"
  TA=$PWD/$T; mkdir -p /tmp/s4/b8 && : > /tmp/s4/b8/jobs.ini
  for j in 1 2 3 4 5 6 7 8; do printf '[job.j%d]\ntask = eigs\nmatrix = gen:lap3d:150\nk = 16\nwhich = largest\nseed = %d\nout = j%d.h5\n\n' $j $j $j >> /tmp/s4/b8/jobs.ini; done
  for g in 1 2; do
    rm -f /tmp/s4/b8/j*.h5
    (cd /tmp/s4/b8 && TCSOLVE_TRACE=1 /usr/bin/time -f "batch --gpus $g wall %e s" $TA batch jobs.ini --gpus $g -q 2> trace.err); tail -1 /tmp/s4/b8/trace.err
    grep -E "batch:|job: start|job: matrix read|job: CUDA|job: solve starts|eigs: solved|eigs: finished|job: written" /tmp/s4/b8/trace.err | cut -c15-80 | head -90
  done
  step "NCCL init timings (NCCL_DEBUG=INFO)"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT $T solve gen:lap3d:100 --rhs random:4 --gpus 2 -q 2>&1 | grep -iE "timings|Init COMPLETE|version" | cut -c1-220 | head -8
  IFS=';' read -ra VS <<< "${VARS45:-}"
  for v in "${VS[@]}"; do
    for r in 1 2; do
      env $v /usr/bin/time -f "%e" $T solve gen:lap3d:200 --rhs random:32 --gpus 2 --json > "$OUT/v45.json" 2> "$OUT/v45.err"
      echo "variant [$v] rc=$? wall $(tail -1 $OUT/v45.err) $(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['seconds']; print('init', round(d['init'], 3), 'setup', round(d['setup'], 3), 'process', round(d['process'], 3))" "$OUT/v45.json")"
    done
  done
fi
if has svds44; then
  # issue 44: where the svds set-up goes (trace), then the 1M x 30k row (tcsolve alone, SVDS_BIG=1)
  for spec in ${SVDS_SPECS:-gen:counts:200000:20000}; do
    step "svds $spec --k 50 --center"
    PERF=""; [ -n "${SVDS_PERF:-}" ] && command -v perf > /dev/null && PERF="perf record -F 99 -g -o $OUT/svds.perf"
    TCSOLVE_TRACE=1 /usr/bin/time -f "wall %e s" timeout 200 $PERF "$T" svds "$spec" --k 50 --center --json > "$OUT/svds.json" 2> "$OUT/svds.err"
    echo "rc=$?"; tail -1 "$OUT/svds.err"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['status'], d['seconds']); print('kernel', d.get('kernel'), '|', d.get('kernel_reason','')[:400])" "$OUT/svds.json"
    grep "tcsolve trace" "$OUT/svds.err" | cut -c1-150 | head -30
    [ -n "$PERF" ] && perf report -i "$OUT/svds.perf" --no-children --sort symbol 2>/dev/null | grep -E "^ +[0-9.]+%" | head -25 | cut -c1-170
    [ -n "$PERF" ] && perf report -i "$OUT/svds.perf" --children --sort symbol 2>/dev/null | grep -E "^ +[0-9.]+%" | grep tcsolve | head -25 | cut -c1-170
    [ -n "${SVDS_PERF:-}" ] && [ -z "$PERF" ] && echo "no perf on this machine"
  done
fi
if has svdscupy; then
  # issue 44: the 1M x 30k PCA row against cupyx svds in one run (bench/svds/svds_cupy_ratio.py)
  step "svds against cupyx: ${SVDS_CUPY_SPEC:-gen:counts:1000000:30000}"
  mkdir -p /tmp/s4/svds
  timeout ${SVDS_CUPY_LIMIT:-480} python3 bench/svds/svds_cupy_ratio.py $T /tmp/s4/svds ${SVDS_CUPY_SPEC:-gen:counts:1000000:30000} 50 ${SVDS_CUPY_REPS:-2} 2>&1 | tail -20
fi
if has issue42; then
  # issue 42's held-out cases with no options, the baseline binary (BASE, staged as $D/base) beside
  # this one: the matrices written once by this binary (the baseline predates the generators)
  for spec in "gen:stiff:12:74 10" "gen:rgg:200000:2 8"; do
    set -- $spec; f=/tmp/s4/$(echo $1 | tr ':' '_').mtx
    [ -f $f ] || $T generate $1 $f -q
    for bin in $D/base $T; do
      [ -x $bin ] || continue
      step "issue42 $bin $1 --k $2"
      /usr/bin/time -f "wall %e s" $bin eigs $f --k $2 --json > /tmp/s4/i42.json 2> /tmp/s4/i42.err
      echo "rc=$?"; tail -1 /tmp/s4/i42.err
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('status'), d.get('method'), d.get('transform'), d.get('iterations'), d.get('seconds'), str(d.get('method_reason'))[:600], str(d.get('message'))[:300])" /tmp/s4/i42.json
    done
  done
fi
if has sweep; then
  # issue 42's planner sweep (bench/planner_sweep.py) on SWEEP_DEVICE (cuda); rows of an earlier
  # call carried as $D/sweep_DEV.jsonl are kept (--resume)
  dev=${SWEEP_DEVICE:-cuda}
  step "planner sweep on $dev"
  [ -f "$D/sweep_$dev.jsonl" ] && cp "$D/sweep_$dev.jsonl" "$OUT/sweep_$dev.jsonl"
  timeout ${SWEEP_LIMIT:-540} ${PYTHON:-python3} bench/planner_sweep.py $T $D/matrices "$OUT/sweep_$dev.jsonl" \
    "$OUT/sweep_$dev.md" --device $dev --timeout ${SWEEP_ROW_LIMIT:-60} --resume ${SWEEP_FLAGS:-} 2>&1 | tail -5
  echo "sweep rc=$?"; head -8 "$OUT/sweep_$dev.md" 2>/dev/null
fi
if has ab; then
  step "A/B: base against this build, fast-by-default rows"
  timeout ${AB_LIMIT:-420} /usr/bin/python3 bench/ab.py --a $D/base --b $T --reps ${AB_REPS:-3} --metric wall \
    --rows-file ${AB_ROWS:-bench/e2e/ab_rows_gpu.txt} --json "$OUT/ab.json" 2>&1 | tee "$OUT/ab.log" | tail -40
fi
if has bench; then
  step "end-to-end benchmark"
  PY=${PYTHON:-python3}
  timeout ${BENCH_LIMIT:-560} $PY bench/e2e/run_e2e.py "$T" /tmp/s4/e2e ${ROWS:+--rows $ROWS} ${BENCH_FLAGS:-} 2>&1 | tee "$OUT/e2e.log"
  cp /tmp/s4/e2e/e2e.json "$OUT/e2e.json" 2>/dev/null
fi
step done
