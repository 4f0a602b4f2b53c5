// What this process holds on a GPU as nvidia-smi counts it: the CUDA context, the libraries'
// handles, workspaces and loaded kernels, and every allocation (issue 18 §8: a device-memory cap
// that holds when measured outside the process). Read through NVML, loaded at run time
// (libnvidia-ml.so.1, part of the driver): no link dependency, so builds and hosts without a
// driver are unaffected and simply report "unknown".
//
// Two ways, the first that works:
//   1. per process: NVML's running-process list holds this process id (its usedGpuMemory);
//   2. per device: the device's used memory now less what it was at the baseline, taken before
//      this process created its CUDA context (note_device_baseline(), called by the first
//      device_count()). Other processes that allocate on the same GPU meanwhile are counted as
//      ours (inside a container NVML may report host process ids, so 1. finds nothing).
// Both count from the baseline: in a Python process whose CuPy already held memory when tcsolve
// first looked at the GPU, what CuPy held then is not counted, what it takes later is.
#pragma once
#include <cstddef>
#include <string>

namespace tcsolve {

struct ProcessDeviceMemory {
  bool known = false;
  std::size_t bytes = 0;  // acquired since the baseline
  std::string how;        // "NVML, this process" / "NVML, device-wide since start" / why unknown
};

// Device-wide used memory of every GPU NVML sees, remembered once (later calls do nothing).
// Cheap when NVML is absent (one failed dlopen).
void note_device_baseline();

// The GPU with this PCI bus id (cudaDeviceGetPCIBusId's "0000:3b:00.0" form). Costs one NVML
// query (tens of microseconds): for set-up, not for iteration loops.
ProcessDeviceMemory process_device_memory(const std::string& pci_bus_id);

}  // namespace tcsolve
