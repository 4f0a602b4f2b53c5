// tcsolve: block eigensolvers (LOBPCG, block Lanczos) and block CG for large sparse symmetric
// matrices, on the CPU or a CUDA GPU. The whole public API in four steps:
//
//   1. read a matrix        Csr<double> a = read_matrix("bcsstk01.mtx" or "gen:lap3d:50");
//                           (io/matrix_io.hpp; or fill Csr<double> yourself: core/csr.hpp)
//   2. build the operator   auto ops = make_dense_ops(Backend::cpu);     (solvers/dense_ops.hpp)
//                           auto op  = make_sparse_operator(a, Backend::cpu, {..., ops->stream()});
//                           (spmm/sparse_operator.hpp; any LinearOperator<double> works:
//                           core/operator.hpp is the whole contract)
//   3. call a solver        eigs(a, nullptr, EigsOptions{...})            (solvers/eigs.hpp)
//                           block_lanczos / lobpcg(*op, nullptr, *ops, EigenOptions{...})
//                           block_cg(*op, rhs, n, s, *ops, CgOptions{...}) (solvers/block_cg.hpp)
//   4. read the result      EigsResult / EigenResult / SolveResult        (solvers/result.hpp):
//                           status, values, vectors (n × k column-major), true residual norms,
//                           per-iteration history, timings.
//
// Errors are exceptions derived from tcsolve::Error (core/error.hpp): InvalidArgument and
// InputError for bad input (with the value and where), NotCompiled for a feature this build lacks
// (e.g. Backend::cuda without CUDA), DeviceError / OutOfDeviceMemory for the GPU. Not converging
// is not an error: it is a status with the partial result. Installed by `cmake --install`;
// CMake users write find_package(tcsolve) and link tcsolve::tcsolve (examples/consumer/).
#pragma once

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/multivector.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/result.hpp"
#include "spmm/sparse_operator.hpp"
