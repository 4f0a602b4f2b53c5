// Owning device allocation (RAII over core/device.hpp): the SpMM operators' uploaded matrices and
// workspaces, the triangular solves' factors, the Chebyshev steps' copies of A. Host-compilable:
// no CUDA headers.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "core/device.hpp"

namespace tcsolve {

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) : n_(n) {
    if (n) p_ = static_cast<T*>(device_malloc(n * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (n_) copy_bytes(p_, Space::device, host.data(), Space::host, n_ * sizeof(T));
  }
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    DeviceArray tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { device_free(p_); }

  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }

 private:
  void swap(DeviceArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tcsolve
