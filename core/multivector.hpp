// Multivectors: column-major blocks of vectors with a leading dimension, on host or device.
//
// Contract: MvView<T> is a non-owning view (data, rows, cols, ld >= rows, space) whose element
// (i, j) is data[i + j·ld]; views of column ranges share the memory. MultiVector<T> owns one
// allocation (host: operator new aligned to kHostAlign = 64 bytes, a cache line; device:
// device_malloc, which throws OutOfDeviceMemory with the size), is move-only, has ld == rows, and frees its memory on destruction; its contents are
// uninitialized after construction. Nothing here synchronizes: copies between spaces go through
// core/device.hpp's copy_bytes (synchronous).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/types.hpp"

namespace tcsolve {

// Host blocks start on a cache line: with rows a multiple of 8 (fp64), every column does, and the
// CPU kernels' streamed stores of Y write whole lines (glibc's malloc gives 16 mod 64 for large
// blocks: 32-column SpMM on lap3d:100, 2-core Xeon, 57 ms against 45 ms aligned with the same kernel).
inline constexpr std::size_t kHostAlign = 64;

// Non-owning view: element (i, j) at data[i + j·ld]. Column ranges are views without copies.
template <class T>
struct MvView {
  T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  Space space = Space::host;

  T* col(std::int64_t j) const { return data + j * ld; }
  MvView columns(std::int64_t first, std::int64_t count) const {
    TCSOLVE_REQUIRE(first >= 0 && count >= 0 && first + count <= cols, "column range out of bounds");
    return {data + first * ld, rows, count, ld, space};
  }
  // Read-only view of a writable one (only for non-const T: MvView<const T> needs no conversion).
  // (U = T only: a view of doubles never converts to one of floats, so fp64 and fp32 overloads
  // of one operation stay distinct.)
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U> && std::is_same_v<U, T>>>
  operator MvView<const U>() const {
    return {data, rows, cols, ld, space};
  }
};

// Owning multivector (ld = rows). Allocated once; move-only.
template <class T>
class MultiVector {
 public:
  MultiVector() = default;
  MultiVector(std::int64_t rows, std::int64_t cols, Space space = Space::host)
      : rows_(rows), cols_(cols), space_(space) {
    TCSOLVE_REQUIRE(rows >= 0 && cols >= 0, "negative multivector shape");
    std::size_t bytes = sizeof(T) * static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    if (bytes == 0) return;
    if (space == Space::host) {
      data_ = static_cast<T*>(::operator new(bytes, std::align_val_t{kHostAlign}));
    } else {
      data_ = static_cast<T*>(device_malloc(bytes));
    }
  }
  MultiVector(MultiVector&& o) noexcept { swap(o); }
  MultiVector& operator=(MultiVector&& o) noexcept {
    MultiVector tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  MultiVector(const MultiVector&) = delete;
  MultiVector& operator=(const MultiVector&) = delete;
  ~MultiVector() { release(); }

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t ld() const { return rows_; }
  Space space() const { return space_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t bytes() const { return sizeof(T) * static_cast<std::size_t>(rows_ * cols_); }

  MvView<T> view() { return {data_, rows_, cols_, rows_, space_}; }
  MvView<const T> view() const { return {data_, rows_, cols_, rows_, space_}; }
  MvView<T> columns(std::int64_t first, std::int64_t count) { return view().columns(first, count); }

  // Copy of the whole block into another space.
  MultiVector to(Space dst) const {
    MultiVector out(rows_, cols_, dst);
    if (bytes()) copy_bytes(out.data_, dst, data_, space_, bytes());
    return out;
  }

 private:
  void swap(MultiVector& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(rows_, o.rows_);
    std::swap(cols_, o.cols_);
    std::swap(space_, o.space_);
  }
  void release() noexcept {
    if (!data_) return;
    if (space_ == Space::host) ::operator delete(data_, std::align_val_t{kHostAlign});
    else device_free(data_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  Space space_ = Space::host;
};

}  // namespace tcsolve
