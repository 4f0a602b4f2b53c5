#!/usr/bin/env bash
# Prepares the one device call of the Python GPU test (python/benchmarks/device_run.sh).
# The GPU machine has Python 3.12 (CuPy, SciPy, pybind11 from pip) but none of our Debian
# packages, and a full CUDA build there costs device time; so the static libraries are built
# HERE (CUDA, sm_90, no CHOLMOD/MUMPS: the machine has neither), from the committed HEAD, and
# carried with the sources they were built from; there only the extension is compiled, for its
# interpreter, and linked against them.
#   python/benchmarks/device_prepare.sh [D]      (default D = .device-data/py, ignored by git)
# then:  run(command="bash python/benchmarks/device_run.sh", carry=[".device-data/py"])
set -eu -o pipefail
D=${1:-.device-data/py}
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
rm -rf "$D" && mkdir -p "$D/src" "$D/lib" "$D/matrices"
git archive HEAD | tar -x -C "$D/src"
B=${BUILD:-/tmp/tcsolve-devpy-build}
cmake -S "$D/src" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTCSOLVE_ENABLE_FACTOR=OFF -DTCSOLVE_BUILD_TESTS=OFF -DTCSOLVE_BUILD_PYTHON=OFF > "$D/configure.log"
grep -q "CUDA backend ON" "$D/configure.log" || { echo "no CUDA here: the carried libraries would be CPU-only" >&2; exit 1; }
cmake --build "$B" --target tcsolve_solvers tcsolve_spmm tcsolve_preprocess tcsolve_factor tcsolve_core
cp "$B"/{core,preprocess,spmm,factor,solvers}/libtcsolve_*.a "$D/lib/"
M=${TCSOLVE_MATRICES:-$ROOT/../shared/matrices/suitesparse}
for f in bcsstk02 bcsstk05 bcsstm05 bcsstk08 bcsstk09 bcsstm09 bcsstk22 bcsstm22 nos5 662_bus can_1072 \
         Trefethen_2000 dwt_2680 zenios sherman1 luxembourg; do
  [ -f "$M/$f.mtx" ] && cp "$M/$f.mtx" "$D/matrices/"
done
rm -rf "$D/src/docs" "$D/src/bench"   # not needed there
du -sh "$D"
