#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CI's second step, after
# the README's test command): a CPU-only build (no CUDA, no Python module: the interpreter is not
# instrumented) in build-asan, then every test labelled cpu. Any sanitizer report fails its test.
# Usage: scripts/sanitize.sh [BUILD_DIR]   (dependencies: scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-asan}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCSOLVE_ENABLE_CUDA=OFF \
  -DTCSOLVE_BUILD_PYTHON=OFF -DTCSOLVE_SANITIZE=address,undefined
cmake --build "$B"
# detect_leaks: a leak fails too; the command's std::_Exit skips the leak check by design (its
# output files are closed by then; the OS frees the rest).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The fuzz job is among the cpu tests: io_fuzz_mutate, at least 1000 mutated inputs over every
# reader (Matrix Market, Rutherford-Boeing, both gzip-wrapped, HDF5) within 150 s, each under ASan
# and UBSan here (tests/fuzz/fuzz_mutate.cpp; its memory bound is ASan's hard RSS limit).
# Left out under the sanitizers, with the reason:
#   *_under_ulimit: they cap the address space (ulimit -v), which ASan's shadow memory cannot live in;
#   Eigs/RealSmallest.*: dense LAPACK references of SuiteSparse matrices through an instrumented
#     Eigen (bcsstk21, n = 3600: more than 10 minutes each under ASan, 2026-11-24); the same
#     solver paths run in the smaller tests;
#   install_consumer: the installed static libraries carry the instrumentation, which a consumer
#     built without -fsanitize cannot link.
ctest --test-dir "$B" -L cpu -LE python --output-on-failure -j "$(nproc)" --timeout 1500 \
  -E '_under_ulimit|^Eigs/RealSmallest\.|^install_consumer$'

