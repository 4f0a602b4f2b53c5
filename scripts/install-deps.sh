#!/usr/bin/env bash
# Installs tcsolve's build and test dependencies from Debian packages.
# Idempotent: when every package is already installed it does nothing (no apt-get update).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libeigen3-dev libhdf5-dev libboost-program-options-dev
      libgtest-dev zlib1g-dev python3-h5py python3-scipy python3-numpy
      # sparse direct solvers for shift-invert and certified counts (factor/), and an optimized
      # BLAS for their supernodal/multifrontal kernels (README: Dependencies)
      libsuitesparse-dev libmumps-seq-dev libopenblas-pthread-dev
      # more than one process (distributed/): MPI for ranks and host collectives, mpirun for the
      # tests; NCCL for GPU buffers comes with the CUDA toolkit when it is installed
      libopenmpi-dev openmpi-bin
      # METIS k-way partitions of the rows over the ranks (--partition metis|auto)
      libmetis-dev
      # the Python module (python/) and its tests
      python3-dev pybind11-dev python3-pybind11 python3-pytest)
# clang + its runtime build the libFuzzer targets; optional for users, used by the fuzz smoke test.
if [ "${TCSOLVE_WITH_FUZZ:-0}" = 1 ]; then pkgs+=(clang libclang-rt-dev); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: all packages present"; exit 0; fi
echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
