// CPU-only build of core/device.hpp: no GPU; every device operation throws NotCompiled.
#include <cstring>

#include "core/device.hpp"
#include "core/error.hpp"

namespace tcsolve {

namespace {
[[noreturn]] void no_cuda() { throw NotCompiled("tcsolve was built without CUDA: no GPU support"); }
}  // namespace

bool built_with_cuda() { return false; }
int device_count() { return 0; }
int current_device() { return -1; }
std::string device_name() { return "cpu"; }
std::size_t device_free_bytes() { no_cuda(); }
DeviceFootprint device_footprint() {
  DeviceFootprint f;
  f.how = "a CPU build";
  return f;
}
void* device_malloc(std::size_t) { no_cuda(); }
void device_free(void*) noexcept {}
std::size_t device_allocated_bytes() { return 0; }  // nothing is ever allocated on a device
std::size_t device_peak_bytes() { return 0; }
void reset_device_peak() {}
void copy_bytes(void* dst, Space dst_space, const void* src, Space src_space, std::size_t bytes) {
  if (dst_space != Space::host || src_space != Space::host) no_cuda();
  if (bytes) std::memcpy(dst, src, bytes);
}
void device_synchronize() { no_cuda(); }
void use_device(int) { no_cuda(); }

}  // namespace tcsolve
