#include "core/types.hpp"

#include "core/device.hpp"
#include "core/error.hpp"

namespace tcsolve {

Precision parse_precision(const std::string& s) {
  if (s == "fp64") return Precision::fp64;
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  if (s == "bf16") return Precision::bf16;
  throw InvalidArgument("unknown precision '" + s + "' (expected fp64, fp32, tf32, fp16 or bf16)");
}

Precision parse_storage_precision(const std::string& s) {
  return s == "auto" ? Precision::fp64 : parse_precision(s);
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp64: return "fp64";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

const char* to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

Backend resolve_backend(const std::string& device) {
  if (device == "cpu") return Backend::cpu;
  if (device == "auto") return device_count() > 0 ? Backend::cuda : Backend::cpu;
  if (device == "cuda") {
    if (!built_with_cuda()) throw NotCompiled("--device cuda: tcsolve was built without CUDA");
    if (device_count() == 0) throw InvalidArgument("--device cuda: no CUDA device is present");
    return Backend::cuda;
  }
  throw InvalidArgument("unknown device '" + device + "' (expected auto, cpu or cuda)");
}

}  // namespace tcsolve
