// Scalar precisions and backends shared by all layers.
//
// Contract: the enums are the vocabulary of every layer's options. parse_precision() and
// resolve_backend() are the only places that turn user strings into them; both throw (with the
// offending value) instead of guessing: InvalidArgument for an unknown name, NotCompiled or
// DeviceError when "cuda" is asked of a build or a machine that cannot provide it.
#pragma once
#include <cstdint>
#include <string>

namespace tcsolve {

// Precision in which an operator stores A (and X on the GPU). Solvers always work in fp64 or fp32.
enum class Precision { fp64, fp32, tf32, fp16, bf16 };

enum class Backend { cpu, cuda };

// Where a buffer lives.
enum class Space { host, device };

// "fp64" -> Precision::fp64 ...; throws InvalidArgument naming the bad value.
Precision parse_precision(const std::string& s);
// The storage of A for a user's precision option: "auto" (the default: fp64 storage, the
// precision ladder in the iteration, solvers/eigs/eigs.hpp) -> fp64, else parse_precision.
Precision parse_storage_precision(const std::string& s);
const char* to_string(Precision p);
const char* to_string(Backend b);

// Resolves --device auto|cpu|cuda. "auto" picks cuda when this build has CUDA and a GPU is present.
// "cuda" without a usable GPU throws NotCompiled (CPU-only build) or DeviceError (no device).
Backend resolve_backend(const std::string& device);

}  // namespace tcsolve
