// NVML through dlopen (core/process_memory.hpp). Only the handful of NVML entry points used here
// are declared, with the signatures and structure layouts of nvml.h (stable ABI, versioned names).
#include "core/process_memory.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace tcsolve {

namespace {

using nvml_return = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using nvml_device = void*;  // nvmlDevice_t (an opaque pointer)
struct NvmlMemory {         // nvmlMemory_t
  unsigned long long total, free, used;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t (v2 layout, taken by the _v3 list call)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr unsigned long long kNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
constexpr nvml_return kInsufficientSize = 7;         // NVML_ERROR_INSUFFICIENT_SIZE

struct Nvml {
  bool ok = false;
  std::string why = "NVML not loaded";
  nvml_return (*init)() = nullptr;
  nvml_return (*count)(unsigned int*) = nullptr;
  nvml_return (*by_index)(unsigned int, nvml_device*) = nullptr;
  nvml_return (*by_pci)(const char*, nvml_device*) = nullptr;
  nvml_return (*memory)(nvml_device, NvmlMemory*) = nullptr;
  nvml_return (*processes)(nvml_device, unsigned int*, NvmlProcessInfo*) = nullptr;
  std::mutex m;  // NVML is thread-safe; the baseline table is not
  struct Baseline {
    nvml_device device;
    unsigned long long used;  // device-wide
    unsigned long long self;  // this process's (0 when not listed)
  };
  std::vector<Baseline> baseline;
  bool baseline_taken = false;
};

template <class F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(::dlsym(lib, name));
  return f != nullptr;
}

Nvml& nvml() {
  static Nvml* n = [] {
    auto* s = new Nvml;  // never destroyed: may be used from static destructors
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      s->why = "NVML (libnvidia-ml.so.1) not found";
      return s;
    }
    if (!bind(lib, "nvmlInit_v2", s->init) || !bind(lib, "nvmlDeviceGetCount_v2", s->count) ||
        !bind(lib, "nvmlDeviceGetHandleByIndex_v2", s->by_index) ||
        !bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", s->by_pci) ||
        !bind(lib, "nvmlDeviceGetMemoryInfo", s->memory) ||
        !bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", s->processes)) {
      s->why = "NVML lacks an entry point tcsolve uses (driver too old?)";
      return s;
    }
    if (s->init() != 0) {
      s->why = "nvmlInit failed";
      return s;
    }
    s->ok = true;
    s->why.clear();
    return s;
  }();
  return *n;
}

// This process's bytes on d from NVML's compute-process list: true and *bytes when listed, false
// when it is not (or the list cannot be read).
bool self_usage(Nvml& n, nvml_device d, unsigned long long* bytes) {
  std::vector<NvmlProcessInfo> list(16);
  for (int tries = 0; tries < 4; ++tries) {
    unsigned int cnt = static_cast<unsigned int>(list.size());
    const nvml_return e = n.processes(d, &cnt, list.data());
    if (e == kInsufficientSize) {
      list.resize(static_cast<std::size_t>(cnt) + 16);
      continue;
    }
    if (e != 0) return false;
    const auto self = static_cast<unsigned int>(::getpid());
    for (unsigned int i = 0; i < cnt; ++i)
      if (list[i].pid == self && list[i].used_gpu_memory != kNotAvailable) {
        *bytes = list[i].used_gpu_memory;
        return true;
      }
    return false;
  }
  return false;
}

}  // namespace

void note_device_baseline() {
  Nvml& n = nvml();
  if (!n.ok) return;
  std::lock_guard<std::mutex> lock(n.m);
  if (n.baseline_taken) return;
  n.baseline_taken = true;
  unsigned int count = 0;
  if (n.count(&count) != 0) return;
  for (unsigned int i = 0; i < count; ++i) {
    nvml_device d = nullptr;
    NvmlMemory mem{};
    if (n.by_index(i, &d) != 0 || n.memory(d, &mem) != 0) continue;
    unsigned long long self = 0;
    if (!self_usage(n, d, &self)) self = 0;
    n.baseline.push_back({d, mem.used, self});
  }
}

ProcessDeviceMemory process_device_memory(const std::string& pci_bus_id) {
  ProcessDeviceMemory r;
  Nvml& n = nvml();
  if (!n.ok) {
    r.how = n.why;
    return r;
  }
  nvml_device d = nullptr;
  if (n.by_pci(pci_bus_id.c_str(), &d) != 0) {
    r.how = "NVML does not know the GPU at PCI " + pci_bus_id;
    return r;
  }
  // 1. this process id in the device's compute-process list
  unsigned long long self = 0;
  const bool listed = self_usage(n, d, &self);
  NvmlMemory mem{};
  const bool have_mem = n.memory(d, &mem) == 0;
  std::lock_guard<std::mutex> lock(n.m);
  const Nvml::Baseline* base = nullptr;
  for (const auto& b : n.baseline)
    if (b.device == d) base = &b;
  if (listed) {
    const unsigned long long self0 = base ? base->self : 0;
    r.known = true;
    r.bytes = self > self0 ? static_cast<std::size_t>(self - self0) : 0;
    r.how = "NVML, this process";
    return r;
  }
  // 2. the device's used memory against the baseline
  if (!have_mem) {
    r.how = "NVML cannot read the device's memory";
    return r;
  }
  if (!base) {
    r.how = "no NVML baseline for the GPU at PCI " + pci_bus_id;
    return r;
  }
  r.known = true;
  r.bytes = mem.used > base->used ? static_cast<std::size_t>(mem.used - base->used) : 0;
  r.how = "NVML, device-wide since start";
  return r;
}

}  // namespace tcsolve
