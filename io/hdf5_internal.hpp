// Internal to the HDF5 layer (io/hdf5_file.cpp: groups, datasets, attributes, opening;
// io/hdf5_file_image.cpp: creating and closing, the in-memory image): the handle types and the
// error helpers both parts use. It includes <hdf5.h>: nothing outside io/hdf5_*.cpp includes it.
#pragma once
#include <hdf5.h>

#include <string>

namespace tcsolve {

namespace detail {
// One open hid_t and its close function, shared by the group objects (hdf5_file.hpp).
struct Hdf5Handle {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  Hdf5Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  ~Hdf5Handle() {
    if (id >= 0 && close) close(id);
  }
};
}  // namespace detail

namespace hdf5_layer {

// Scoped temporary id (dataspace, type, property list, attribute...).
struct Hid {
  hid_t id;
  herr_t (*close)(hid_t);
  Hid(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() {
    if (id >= 0) close(id);
  }
  bool ok() const { return id >= 0; }
  operator hid_t() const { return id; }
};

// Silences HDF5's automatic error printing (per thread in thread-safe builds: call on every entry).
void quiet();

// " (HDF5: outermost; innermost)" from the current error stack, then clears it.
std::string hdf5_detail();

}  // namespace hdf5_layer
}  // namespace tcsolve
