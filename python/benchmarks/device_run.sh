#!/usr/bin/env bash
# On the GPU machine (see device_prepare.sh): compiles tcsolve._tcsolve for its python3 against
# the carried static libraries, runs the Python tests (the gpu ones and the CPU suite, on
# Python 3.12 / NumPy 2 there) and the SciPy comparison on the CPU and the GPU. Logs in $OUT.
set -u -o pipefail
D=${D:-.device-data/py}
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
step() { echo "== $* $(date +%T)"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
PY=${PYTHON:-python3}
$PY -c "import sys, numpy, scipy, cupy; print(sys.version.split()[0], numpy.__version__, scipy.__version__, cupy.__version__)"
step compile
PKG=/tmp/tcsolve-pkg/tcsolve
mkdir -p "$PKG"
cp "$D"/src/python/tcsolve/*.py "$PKG/"
EXT=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
CUDA=${CUDA_HOME:-/usr/local/cuda}
time c++ -O2 -std=c++17 -shared -fPIC -fvisibility=hidden $($PY -m pybind11 --includes) -I"$D/src" \
  -DTCSOLVE_VERSION=\"0.1.0\" "$D/src/python/src/module.cpp" -o "$PKG/_tcsolve$EXT" \
  -Wl,--start-group "$D"/lib/libtcsolve_*.a -Wl,--end-group \
  -L"$CUDA/lib64" -L"$CUDA/lib" -Wl,-rpath,"$CUDA/lib64" -Wl,-rpath,"$CUDA/lib" -lcusolver -lcublas -lcusparse -lcudart -lpthread > "$OUT/compile.log" 2>&1
echo "compile rc=$?"; tail -5 "$OUT/compile.log"
export PYTHONPATH=/tmp/tcsolve-pkg TCSOLVE_MATRICES=$PWD/$D/matrices PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
$PY -c "import tcsolve; print('tcsolve', tcsolve.__version__, 'cuda', tcsolve.built_with_cuda(), 'gpus', tcsolve.device_count())"
step "pytest gpu"
(cd /tmp && timeout 110 $PY -m pytest -q -p no:cacheprovider -m gpu -rs "$OLDPWD/$D/src/python/tests" 2>&1) | tee "$OUT/pytest_gpu.log" | tail -25
step "pytest cpu"
(cd /tmp && timeout 75 $PY -m pytest -q -p no:cacheprovider -m "not gpu" "$OLDPWD/$D/src/python/tests" 2>&1) > "$OUT/pytest_cpu.log"; tail -5 "$OUT/pytest_cpu.log"
step "compare gpu"
timeout 100 $PY "$D/src/python/benchmarks/compare_scipy.py" --repeat 2 --device cuda --cupy 2>&1 | grep -v Warning | tee "$OUT/compare_gpu.log"
step "compare cpu"
timeout 50 $PY "$D/src/python/benchmarks/compare_scipy.py" --repeat 1 --device cpu 2>&1 | grep -v Warning | tee "$OUT/compare_cpu.log"
step done
