// RAII wrapper over the HDF5 C API (see io/hdf5_file.hpp for the contract): groups, datasets,
// attributes, opening files. Creating and closing them (the in-memory image): hdf5_file_image.cpp.
#include "io/hdf5_file.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "io/hdf5_internal.hpp"

namespace tcsolve {

static_assert(std::is_same<hid_t, std::int64_t>::value, "hid_t is int64_t since HDF5 1.10");

const char* to_string(Hdf5Type t) {
  switch (t) {
    case Hdf5Type::int32: return "int32";
    case Hdf5Type::int64: return "int64";
    case Hdf5Type::uint32: return "uint32";
    case Hdf5Type::uint64: return "uint64";
    case Hdf5Type::float32: return "float32";
    case Hdf5Type::float64: return "float64";
    case Hdf5Type::string: return "string";
    case Hdf5Type::other: return "unsupported type";
  }
  return "?";
}

std::int64_t Hdf5DatasetInfo::size() const {
  std::int64_t s = 1;
  for (auto d : dims) s *= d;
  return s;
}

// ---- the layer's shared helpers (io/hdf5_internal.hpp) ------------------------------------

namespace hdf5_layer {

void quiet() {
  static const bool opened = (H5open() >= 0);
  (void)opened;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {
herr_t collect_error(unsigned n, const H5E_error2_t* err, void* data) {
  auto* v = static_cast<std::vector<std::string>*>(data);
  if (err && err->desc && *err->desc) v->push_back(err->desc);
  return 0;
}
}  // namespace

std::string hdf5_detail() {
  std::vector<std::string> d;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &d);
  H5Eclear2(H5E_DEFAULT);
  if (d.empty()) return "";
  std::string s = " (HDF5: " + d.front();
  if (d.size() > 1 && d.back() != d.front()) s += "; " + d.back();
  return s + ")";
}

}  // namespace hdf5_layer

namespace {

using detail::Hdf5Handle;

using hdf5_layer::hdf5_detail;
using hdf5_layer::Hid;
using hdf5_layer::quiet;

Hdf5Type classify(hid_t type) {
  const size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
      if (size == 4) return is_signed ? Hdf5Type::int32 : Hdf5Type::uint32;
      if (size == 8) return is_signed ? Hdf5Type::int64 : Hdf5Type::uint64;
      return Hdf5Type::other;
    }
    case H5T_FLOAT:
      if (size == 4) return Hdf5Type::float32;
      if (size == 8) return Hdf5Type::float64;
      return Hdf5Type::other;
    case H5T_STRING: return Hdf5Type::string;
    default: return Hdf5Type::other;
  }
}

bool is_integer(Hdf5Type t) {
  return t == Hdf5Type::int32 || t == Hdf5Type::int64 || t == Hdf5Type::uint32 || t == Hdf5Type::uint64;
}
bool is_float(Hdf5Type t) { return t == Hdf5Type::float32 || t == Hdf5Type::float64; }

template <class T> hid_t mem_type();
template <> hid_t mem_type<double>() { return H5T_NATIVE_DOUBLE; }
template <> hid_t mem_type<std::int64_t>() { return H5T_NATIVE_INT64; }
template <> hid_t mem_type<std::int32_t>() { return H5T_NATIVE_INT32; }
template <> hid_t mem_type<std::uint64_t>() { return H5T_NATIVE_UINT64; }
template <class T> hid_t file_type();
template <> hid_t file_type<double>() { return H5T_IEEE_F64LE; }
template <> hid_t file_type<std::int64_t>() { return H5T_STD_I64LE; }
template <> hid_t file_type<std::int32_t>() { return H5T_STD_I32LE; }

// Whether integer w is representable as T.
template <class T, class W>
bool fits(W w) {
  if constexpr (std::is_signed<W>::value)
    return w >= static_cast<W>(std::numeric_limits<T>::min()) && w <= static_cast<W>(std::numeric_limits<T>::max());
  else
    return w <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
}

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t b = 0;
  while (b <= name.size()) {
    std::size_t e = name.find('/', b);
    if (e == std::string::npos) e = name.size();
    if (e > b) parts.push_back(name.substr(b, e - b));
    b = e + 1;
  }
  return parts;
}

}  // namespace

// ---- Hdf5Group ----------------------------------------------------------------------------

const std::string& Hdf5Group::file_name() const {
  static const std::string none;
  return ctx_ ? ctx_->file : none;
}

std::int64_t Hdf5Group::id() const {
  if (!h_ || h_->id < 0) throw Error("HDF5: use of a closed or empty file/group object");
  return h_->id;
}

std::string Hdf5Group::child_path(const std::string& name) const {
  if (!name.empty() && name[0] == '/') return name;
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

void Hdf5Group::fail(const std::string& object, const std::string& what, bool reading) const {
  const std::string detail = hdf5_detail();
  if (reading) throw InputError(file_name(), 0, object + ": " + what + detail);
  throw Error("HDF5: " + file_name() + ": " + object + ": " + what + detail);
}

bool Hdf5Group::has(const std::string& name) const {
  quiet();
  const auto parts = split_path(name);
  if (parts.empty()) return false;
  std::string prefix = (!name.empty() && name[0] == '/') ? "/" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    prefix += (i ? "/" : "") + parts[i];
    if (H5Lexists(id(), prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

namespace {
H5I_type_t object_kind(hid_t loc, const std::string& name) {
  Hid o(H5Oopen(loc, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.ok()) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(o);
}
}  // namespace

bool Hdf5Group::has_group(const std::string& name) const {
  return has(name) && object_kind(id(), name) == H5I_GROUP;
}
bool Hdf5Group::has_dataset(const std::string& name) const {
  return has(name) && object_kind(id(), name) == H5I_DATASET;
}
bool Hdf5Group::has_attr(const std::string& name) const {
  quiet();
  htri_t e = H5Aexists(id(), name.c_str());
  if (e < 0) fail(path_, "cannot check attribute '" + name + "'", true);
  return e > 0;
}

Hdf5Group Hdf5Group::group(const std::string& name) const {
  quiet();
  if (!has(name)) fail(child_path(name), "no such group", true);
  if (object_kind(id(), name) != H5I_GROUP) fail(child_path(name), "is not a group", true);
  hid_t g = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
  if (g < 0) fail(child_path(name), "cannot open group", true);
  return Hdf5Group(ctx_, std::make_shared<Hdf5Handle>(g, H5Gclose), child_path(name));
}

Hdf5Group Hdf5Group::create_group(const std::string& name) {
  quiet();
  if (has(name)) fail(child_path(name), "cannot create group: the name exists", false);
  Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t g = H5Gcreate2(id(), name.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) fail(child_path(name), "cannot create group", false);
  return Hdf5Group(ctx_, std::make_shared<Hdf5Handle>(g, H5Gclose), child_path(name));
}

Hdf5Group Hdf5Group::require_group(const std::string& name) {
  return has(name) ? group(name) : create_group(name);
}

// ---- datasets -----------------------------------------------------------------------------

template <class T>
void Hdf5Group::write_nd(const std::string& name, const T* data, const std::vector<std::int64_t>& dims,
                         const Hdf5WriteOptions& o) {
  quiet();
  const std::string obj = child_path(name);
  std::vector<hsize_t> hd(dims.begin(), dims.end());
  std::int64_t total = 1;
  for (auto d : dims) {
    if (d < 0) fail(obj, "negative dataset extent", false);
    total *= d;
  }
  if (total > 0 && data == nullptr) fail(obj, "null data pointer", false);
  if (has(name) && H5Ldelete(id(), name.c_str(), H5P_DEFAULT) < 0)
    fail(obj, "cannot replace the existing object", false);
  Hid space(H5Screate_simple(static_cast<int>(hd.size()), hd.data(), nullptr), H5Sclose);
  if (!space.ok()) fail(obj, "cannot create dataspace", false);
  Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (o.compress && total > 0) {
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) fail(obj, "deflate filter not available", false);
    // Chunk: whole trailing dimensions, as many leading rows as fit in chunk_bytes.
    std::vector<hsize_t> chunk(hd);
    hsize_t inner = sizeof(T);
    for (std::size_t k = 1; k < hd.size(); ++k) inner *= hd[k];
    const hsize_t rows = std::max<hsize_t>(1, static_cast<hsize_t>(std::max<std::int64_t>(1, o.chunk_bytes)) / inner);
    chunk[0] = std::min<hsize_t>(hd[0], rows);
    if (H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) < 0 || H5Pset_shuffle(dcpl) < 0 ||
        H5Pset_deflate(dcpl, static_cast<unsigned>(std::min(9, std::max(1, o.level)))) < 0)
      fail(obj, "cannot set chunking/compression", false);
  }
  Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl, 1);
  Hid ds(H5Dcreate2(id(), name.c_str(), file_type<T>(), space, lcpl, dcpl, H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(obj, "cannot create dataset", false);
  if (total > 0 && H5Dwrite(ds, mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail(obj, "cannot write dataset", false);
}

void Hdf5Group::write(const std::string& name, const std::vector<double>& v, const Hdf5WriteOptions& o) {
  write_1d(name, v.data(), static_cast<std::int64_t>(v.size()), o);
}
void Hdf5Group::write(const std::string& name, const std::vector<std::int64_t>& v, const Hdf5WriteOptions& o) {
  write_1d(name, v.data(), static_cast<std::int64_t>(v.size()), o);
}
void Hdf5Group::write(const std::string& name, const std::vector<std::int32_t>& v, const Hdf5WriteOptions& o) {
  write_1d(name, v.data(), static_cast<std::int64_t>(v.size()), o);
}
void Hdf5Group::write_1d(const std::string& name, const double* d, std::int64_t n, const Hdf5WriteOptions& o) {
  write_nd(name, d, {n}, o);
}
void Hdf5Group::write_1d(const std::string& name, const std::int64_t* d, std::int64_t n, const Hdf5WriteOptions& o) {
  write_nd(name, d, {n}, o);
}
void Hdf5Group::write_1d(const std::string& name, const std::int32_t* d, std::int64_t n, const Hdf5WriteOptions& o) {
  write_nd(name, d, {n}, o);
}
void Hdf5Group::write_2d(const std::string& name, const double* d, std::int64_t r, std::int64_t c, const Hdf5WriteOptions& o) {
  write_nd(name, d, {r, c}, o);
}
void Hdf5Group::write_2d(const std::string& name, const std::int64_t* d, std::int64_t r, std::int64_t c, const Hdf5WriteOptions& o) {
  write_nd(name, d, {r, c}, o);
}
void Hdf5Group::write_2d(const std::string& name, const std::int32_t* d, std::int64_t r, std::int64_t c, const Hdf5WriteOptions& o) {
  write_nd(name, d, {r, c}, o);
}

namespace {
// Extents of a dataspace; H5S_NULL reads as a 1-D extent of 0.
bool space_dims(hid_t space, std::vector<std::int64_t>& dims) {
  if (H5Sget_simple_extent_type(space) == H5S_NULL) {
    dims.assign(1, 0);
    return true;
  }
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) return false;
  std::vector<hsize_t> hd(rank);
  if (rank > 0 && H5Sget_simple_extent_dims(space, hd.data(), nullptr) < 0) return false;
  dims.assign(hd.begin(), hd.end());
  return true;
}
}  // namespace

Hdf5DatasetInfo Hdf5Group::dataset_info(const std::string& name) const {
  quiet();
  const std::string obj = child_path(name);
  if (!has(name)) fail(obj, "no such dataset", true);
  if (object_kind(id(), name) != H5I_DATASET) fail(obj, "is not a dataset", true);
  Hid ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(obj, "cannot open dataset", true);
  Hid type(H5Dget_type(ds), H5Tclose);
  Hid space(H5Dget_space(ds), H5Sclose);
  Hdf5DatasetInfo info;
  if (!type.ok() || !space.ok() || !space_dims(space, info.dims)) fail(obj, "cannot read dataset header", true);
  info.type = classify(type);
  return info;
}

// The extent a dataset declares must be backed by bytes the file stores, before the reader
// allocates n elements: an unwritten dataset (late allocation) or one with unallocated chunks
// reads as fill values, so a few-hundred-byte file could otherwise declare an indptr of 2^31
// elements and make us allocate 16 GiB. Unfiltered (contiguous, chunked or compact) datasets
// must store at least n · element size bytes; filtered (compressed) ones at least 1/1100 of it
// (deflate cannot exceed 1032:1), so what the reader allocates stays within 1100 × the bytes
// the file holds, like inflating a .gz. Datasets of at most kStorageSlack bytes are exempt.
// External and virtual storage are refused (their bytes live outside this file).
void Hdf5Group::check_storage(std::int64_t ds, const std::string& obj, std::int64_t n) const {
  constexpr double kStorageSlack = 64.0 * 1024 * 1024;
  constexpr double kMaxFilterRatio = 1100.0;
  Hid type(H5Dget_type(ds), H5Tclose);
  Hid dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (!type.ok() || !dcpl.ok()) fail(obj, "cannot read dataset header", true);
  const double declared = static_cast<double>(n) * static_cast<double>(H5Tget_size(type));
  if (H5Pget_layout(dcpl) == H5D_VIRTUAL) fail(obj, "is a virtual dataset (not supported)", true);
  if (H5Pget_external_count(dcpl) > 0) fail(obj, "is stored in external files (not supported)", true);
  if (declared <= kStorageSlack) return;
  const double stored = static_cast<double>(H5Dget_storage_size(ds));
  const int nfilters = H5Pget_nfilters(dcpl);
  const bool ok = nfilters > 0 ? declared <= stored * kMaxFilterRatio : stored >= declared;
  if (ok) return;
  char what[320];
  std::snprintf(what, sizeof what,
                "declares %lld elements (%.0f bytes) but the file stores only %.0f bytes of it%s: "
                "refused before allocating %.1f GiB (truncated or unwritten dataset?)",
                static_cast<long long>(n), declared, stored,
                nfilters > 0 ? " (compressed, at most 1100:1 accepted)" : "",
                declared / 1073741824.0);
  fail(obj, what, true);
}

template <class T>
std::vector<T> Hdf5Group::read_nd(const std::string& name, std::vector<std::int64_t>* dims,
                                  std::int64_t offset, std::int64_t count) const {
  const std::string obj = child_path(name);
  const Hdf5DatasetInfo info = dataset_info(name);
  if (dims) *dims = info.dims;
  const bool want_int = std::is_integral<T>::value;
  if (!(is_integer(info.type) || (!want_int && is_float(info.type))))
    fail(obj, std::string("has element type ") + to_string(info.type) + ", expected " +
                  (want_int ? "integers" : "numbers"), true);
  const std::int64_t extent = info.size();
  Hid ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) fail(obj, "cannot open dataset", true);
  check_storage(ds, obj, extent);  // the whole extent must be backed, whatever part is read
  const bool ranged = count >= 0;
  if (ranged && (info.dims.size() != 1 || offset < 0 || offset + count > extent))
    fail(obj, "range [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                  ") outside its 1-D extent of " + std::to_string(extent), true);
  const std::int64_t n = ranged ? count : extent;
  const hsize_t start = static_cast<hsize_t>(std::max<std::int64_t>(offset, 0)),
                cnt = static_cast<hsize_t>(std::max<std::int64_t>(n, 1));
  Hid fspace(ranged ? H5Dget_space(ds) : H5I_INVALID_HID, H5Sclose);
  Hid mspace(ranged ? H5Screate_simple(1, &cnt, nullptr) : H5I_INVALID_HID, H5Sclose);
  if (ranged && n > 0 &&
      (!fspace.ok() || !mspace.ok() ||
       H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, nullptr, &cnt, nullptr) < 0))
    fail(obj, "cannot select a range of the dataset", true);
  auto read_into = [&](hid_t mt, void* buf) {
    if (n > 0 && H5Dread(ds, mt, ranged ? static_cast<hid_t>(mspace) : H5S_ALL,
                         ranged ? static_cast<hid_t>(fspace) : H5S_ALL, H5P_DEFAULT, buf) < 0)
      fail(obj, "cannot read dataset", true);
  };
  std::vector<T> out;
  // Direct read when no narrowing can overflow; otherwise through a wide buffer, range-checked.
  const bool direct = !want_int || info.type == Hdf5Type::int32 ||
                      (sizeof(T) == 8 && (info.type == Hdf5Type::int64 || info.type == Hdf5Type::uint32));
  if (direct) {
    resize_huge(out, static_cast<std::size_t>(n));  // (GB-sized blocks: 2 MiB pages to first-touch)
    read_into(mem_type<T>(), out.data());
    return out;
  }
  out.resize(n);
  auto narrow = [&](const auto& wide) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (!fits<T>(wide[i]))
        fail(obj, "element " + std::to_string(i) + " = " + std::to_string(wide[i]) +
                      " does not fit " + (sizeof(T) == 4 ? "int32" : "int64"), true);
      out[i] = static_cast<T>(wide[i]);
    }
  };
  if (info.type == Hdf5Type::uint64) {
    std::vector<std::uint64_t> wide(n);
    read_into(mem_type<std::uint64_t>(), wide.data());
    narrow(wide);
  } else {
    std::vector<std::int64_t> wide(n);
    read_into(mem_type<std::int64_t>(), wide.data());
    narrow(wide);
  }
  return out;
}

std::vector<double> Hdf5Group::read_doubles(const std::string& name, std::vector<std::int64_t>* dims) const {
  return read_nd<double>(name, dims);
}
std::vector<std::int64_t> Hdf5Group::read_int64s(const std::string& name, std::vector<std::int64_t>* dims) const {
  return read_nd<std::int64_t>(name, dims);
}
std::vector<std::int32_t> Hdf5Group::read_int32s(const std::string& name, std::vector<std::int64_t>* dims) const {
  return read_nd<std::int32_t>(name, dims);
}
std::vector<double> Hdf5Group::read_doubles_range(const std::string& name, std::int64_t offset,
                                                  std::int64_t count) const {
  return read_nd<double>(name, nullptr, offset, std::max<std::int64_t>(count, 0));
}
std::vector<std::int64_t> Hdf5Group::read_int64s_range(const std::string& name, std::int64_t offset,
                                                       std::int64_t count) const {
  return read_nd<std::int64_t>(name, nullptr, offset, std::max<std::int64_t>(count, 0));
}
std::vector<std::int32_t> Hdf5Group::read_int32s_range(const std::string& name, std::int64_t offset,
                                                       std::int64_t count) const {
  return read_nd<std::int32_t>(name, nullptr, offset, std::max<std::int64_t>(count, 0));
}

// ---- attributes ---------------------------------------------------------------------------

template <class T>
void Hdf5Group::write_attr(const std::string& name, const T* data, std::int64_t n, bool scalar) {
  quiet();
  const std::string obj = path_ + "@" + name;
  htri_t e = H5Aexists(id(), name.c_str());
  if (e < 0 || (e > 0 && H5Adelete(id(), name.c_str()) < 0)) fail(obj, "cannot replace attribute", false);
  hsize_t hn = static_cast<hsize_t>(n);
  Hid space(scalar ? H5Screate(H5S_SCALAR) : n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &hn, nullptr),
            H5Sclose);
  Hid a(space.ok() ? H5Acreate2(id(), name.c_str(), file_type<T>(), space, H5P_DEFAULT, H5P_DEFAULT) : -1,
        H5Aclose);
  if (!a.ok()) fail(obj, "cannot create attribute", false);
  if (n > 0 && H5Awrite(a, mem_type<T>(), data) < 0) fail(obj, "cannot write attribute", false);
}

void Hdf5Group::set_attr(const std::string& name, const std::string& value) {
  quiet();
  const std::string obj = path_ + "@" + name;
  htri_t e = H5Aexists(id(), name.c_str());
  if (e < 0 || (e > 0 && H5Adelete(id(), name.c_str()) < 0)) fail(obj, "cannot replace attribute", false);
  // Variable-length UTF-8 scalar: what h5py (and anndata) write for Python str attributes.
  Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type.ok() || H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
    fail(obj, "cannot build string type", false);
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid a(H5Acreate2(id(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.ok()) fail(obj, "cannot create attribute", false);
  const char* s = value.c_str();
  if (H5Awrite(a, type, &s) < 0) fail(obj, "cannot write attribute", false);
}
void Hdf5Group::set_attr(const std::string& name, double value) { write_attr(name, &value, 1, true); }
void Hdf5Group::set_attr(const std::string& name, std::int64_t value) { write_attr(name, &value, 1, true); }
void Hdf5Group::set_attr(const std::string& name, const std::vector<double>& v) {
  write_attr(name, v.data(), static_cast<std::int64_t>(v.size()), false);
}
void Hdf5Group::set_attr(const std::string& name, const std::vector<std::int64_t>& v) {
  write_attr(name, v.data(), static_cast<std::int64_t>(v.size()), false);
}

Hdf5Type Hdf5Group::attr_type(const std::string& name) const {
  if (!has_attr(name)) fail(path_ + "@" + name, "no such attribute", true);
  Hid a(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Hid t(a.ok() ? H5Aget_type(a) : -1, H5Tclose);
  if (!t.ok()) fail(path_ + "@" + name, "cannot open attribute", true);
  return classify(t);
}

template <class T>
std::vector<T> Hdf5Group::read_attr(const std::string& name) const {
  const std::string obj = path_ + "@" + name;
  const Hdf5Type ty = attr_type(name);
  const bool want_int = std::is_integral<T>::value;
  if (!(is_integer(ty) || (!want_int && is_float(ty))))
    fail(obj, std::string("has type ") + to_string(ty) + ", expected " + (want_int ? "integers" : "numbers"), true);
  Hid a(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Hid space(a.ok() ? H5Aget_space(a) : -1, H5Sclose);
  if (!space.ok()) fail(obj, "cannot open attribute", true);
  std::vector<std::int64_t> dims;
  std::int64_t n = 1;
  if (!space_dims(space, dims)) fail(obj, "cannot read attribute extent", true);
  for (auto d : dims) n *= d;
  std::vector<T> out(n);
  if (ty == Hdf5Type::uint64 && want_int) {
    std::vector<std::uint64_t> wide(n);
    if (n > 0 && H5Aread(a, mem_type<std::uint64_t>(), wide.data()) < 0) fail(obj, "cannot read attribute", true);
    for (std::int64_t i = 0; i < n; ++i) {
      if (wide[i] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(obj, "value does not fit int64", true);
      out[i] = static_cast<T>(wide[i]);
    }
  } else if (n > 0 && H5Aread(a, mem_type<T>(), out.data()) < 0) {
    fail(obj, "cannot read attribute", true);
  }
  return out;
}

std::vector<double> Hdf5Group::attr_doubles(const std::string& name) const { return read_attr<double>(name); }
std::vector<std::int64_t> Hdf5Group::attr_int64s(const std::string& name) const {
  return read_attr<std::int64_t>(name);
}
double Hdf5Group::attr_double(const std::string& name) const {
  auto v = read_attr<double>(name);
  if (v.size() != 1) fail(path_ + "@" + name, "expected one value, found " + std::to_string(v.size()), true);
  return v[0];
}
std::int64_t Hdf5Group::attr_int64(const std::string& name) const {
  auto v = read_attr<std::int64_t>(name);
  if (v.size() != 1) fail(path_ + "@" + name, "expected one value, found " + std::to_string(v.size()), true);
  return v[0];
}

std::string Hdf5Group::attr_string(const std::string& name) const {
  const std::string obj = path_ + "@" + name;
  if (attr_type(name) != Hdf5Type::string) fail(obj, "is not a string", true);
  Hid a(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Hid ft(a.ok() ? H5Aget_type(a) : -1, H5Tclose);
  Hid space(a.ok() ? H5Aget_space(a) : -1, H5Sclose);
  if (!ft.ok() || !space.ok()) fail(obj, "cannot open attribute", true);
  if (H5Sget_simple_extent_npoints(space) != 1) fail(obj, "expected a single string", true);
  Hid mt(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(mt, H5Tget_cset(ft));
  if (H5Tis_variable_str(ft) > 0) {
    H5Tset_size(mt, H5T_VARIABLE);
    char* s = nullptr;
    if (H5Aread(a, mt, &s) < 0) fail(obj, "cannot read attribute", true);
    std::string out = s ? s : "";
    if (s) H5free_memory(s);
    return out;
  }
  const size_t size = H5Tget_size(ft);
  H5Tset_size(mt, size + 1);
  H5Tset_strpad(mt, H5T_STR_NULLTERM);
  std::string buf(size + 1, '\0');
  if (H5Aread(a, mt, &buf[0]) < 0) fail(obj, "cannot read attribute", true);
  return std::string(buf.c_str());
}

// ---- Hdf5File -----------------------------------------------------------------------------

bool Hdf5File::is_hdf5(const std::string& path) {
  quiet();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

Hdf5File Hdf5File::open(const std::string& path, bool writable) {
  quiet();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, 0, "no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path, 0, "not a regular file");
  if (!is_hdf5(path)) throw InputError(path, 0, "not an HDF5 file (no HDF5 signature)");
  hid_t f = H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw InputError(path, 0, "cannot open HDF5 file" + hdf5_detail());
  auto ctx = std::make_shared<const detail::Hdf5Context>(detail::Hdf5Context{path, !writable});
  return Hdf5File(ctx, std::make_shared<Hdf5Handle>(f, H5Fclose), "/");
}

}  // namespace tcsolve
