// A small RAII layer over the HDF5 C API, shared by the matrix I/O and the apps' result files.
//
//   Hdf5File f = Hdf5File::create(tmp_path);            // or Hdf5File::open(path) to read
//   Hdf5Group g = f.create_group("eigs");
//   g.write("eigenvalues", values);                       // 1-D [k] float64
//   g.write_2d("eigenvectors", v.data(), k, n);           // 2-D [k][n], row-major
//   g.set_attr("solver", "lobpcg");  g.set_attr("tol", 1e-8);
//   f.close();                                            // reports write errors; dtor never throws
//
// Handles are reference counted; a group keeps the file open after the Hdf5File goes away.
// Every failure throws: InputError(file, 0, "/object: what: hdf5 detail") for reads (opening for
// reading, reading datasets/attributes, missing objects), tcsolve::Error("HDF5: file: /object:
// ...") for writes. HDF5's own error-stack printing is switched off (one clean message instead);
// the message keeps HDF5's outermost and innermost descriptions.
// Threads: Debian's and Ubuntu's libhdf5 are built thread-safe (calls are serialized inside
// HDF5); the error-printing switch is per thread, so every entry point re-applies it.
// Datasets are stored little-endian (float64, int64, int32); reading converts float32/float64 to
// double and any 32/64-bit integer to int64/int32 (narrowing is range-checked).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tcsolve {

// Element type of a stored dataset or attribute, as far as tcsolve distinguishes them.
enum class Hdf5Type { int32, int64, uint32, uint64, float32, float64, string, other };
const char* to_string(Hdf5Type t);

struct Hdf5DatasetInfo {
  std::vector<std::int64_t> dims;  // row-major extents; empty for a scalar dataset
  Hdf5Type type = Hdf5Type::other;
  std::int64_t size() const;       // product of dims (1 for a scalar)
};

struct Hdf5WriteOptions {
  bool compress = false;        // chunked layout + shuffle + deflate
  int level = 4;                // deflate level 1..9
  std::int64_t chunk_bytes = 1 << 20;  // target chunk size when compressing (rows of 2-D kept whole)
};

// The bytes of an in-memory HDF5 file (Hdf5File::take_image), owned: move-only, freed with it.
class FileImage {
 public:
  FileImage() = default;
  FileImage(char* data, std::size_t size) : data_(data), size_(size) {}  // takes a malloc'd block
  ~FileImage();
  FileImage(FileImage&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  FileImage& operator=(FileImage&& o) noexcept;
  FileImage(const FileImage&) = delete;
  FileImage& operator=(const FileImage&) = delete;
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace detail {
struct Hdf5Handle;  // one open hid_t and its close function
struct CoreImage;   // the core driver's buffer, kept at close by take_image (hdf5_file.cpp)
struct Hdf5Context {
  std::string file;
  bool read_only;
  bool in_memory = false;  // created on HDF5's core driver: close() writes the image to `file`
  std::shared_ptr<CoreImage> image;  // in_memory: the driver's buffer (callbacks' state)
};
}  // namespace detail

class Hdf5Group {
 public:
  Hdf5Group() = default;

  const std::string& file_name() const;
  const std::string& path() const { return path_; }  // "/" or "/a/b"

  // Existence checks; `name` may be nested ("a/b"). False (not an error) when a parent is missing.
  bool has(const std::string& name) const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  bool has_attr(const std::string& name) const;

  // Opens an existing group (InputError when it is missing or not a group).
  Hdf5Group group(const std::string& name) const;
  // Creates a group, with missing parents (Error when it exists).
  Hdf5Group create_group(const std::string& name);
  // Opens the group, creating it when missing.
  Hdf5Group require_group(const std::string& name);

  // ---- datasets (an existing dataset of the same name is replaced) ----
  void write(const std::string& name, const std::vector<double>& v, const Hdf5WriteOptions& o = {});
  void write(const std::string& name, const std::vector<std::int64_t>& v, const Hdf5WriteOptions& o = {});
  void write(const std::string& name, const std::vector<std::int32_t>& v, const Hdf5WriteOptions& o = {});
  void write_1d(const std::string& name, const double* data, std::int64_t n, const Hdf5WriteOptions& o = {});
  void write_1d(const std::string& name, const std::int64_t* data, std::int64_t n, const Hdf5WriteOptions& o = {});
  void write_1d(const std::string& name, const std::int32_t* data, std::int64_t n, const Hdf5WriteOptions& o = {});
  // data holds rows × cols values, row-major (row r starts at data + r·cols).
  void write_2d(const std::string& name, const double* data, std::int64_t rows, std::int64_t cols, const Hdf5WriteOptions& o = {});
  void write_2d(const std::string& name, const std::int64_t* data, std::int64_t rows, std::int64_t cols, const Hdf5WriteOptions& o = {});
  void write_2d(const std::string& name, const std::int32_t* data, std::int64_t rows, std::int64_t cols, const Hdf5WriteOptions& o = {});

  Hdf5DatasetInfo dataset_info(const std::string& name) const;
  // Whole dataset, row-major, any rank; dims (if given) receives the extents. Float data cannot be
  // read into integers; numeric conversions otherwise follow the header comment.
  std::vector<double> read_doubles(const std::string& name, std::vector<std::int64_t>* dims = nullptr) const;
  std::vector<std::int64_t> read_int64s(const std::string& name, std::vector<std::int64_t>* dims = nullptr) const;
  std::vector<std::int32_t> read_int32s(const std::string& name, std::vector<std::int64_t>* dims = nullptr) const;
  // Elements [offset, offset + count) of a 1-D dataset (a hyperslab: a rank of a distributed run
  // reads its rows only). InputError when the range leaves the extent.
  std::vector<double> read_doubles_range(const std::string& name, std::int64_t offset, std::int64_t count) const;
  std::vector<std::int64_t> read_int64s_range(const std::string& name, std::int64_t offset, std::int64_t count) const;
  std::vector<std::int32_t> read_int32s_range(const std::string& name, std::int64_t offset, std::int64_t count) const;

  // ---- attributes (an existing attribute of the same name is replaced) ----
  void set_attr(const std::string& name, const std::string& value);  // variable-length UTF-8
  void set_attr(const std::string& name, const char* value) { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, double value);
  void set_attr(const std::string& name, std::int64_t value);
  void set_attr(const std::string& name, int value) { set_attr(name, static_cast<std::int64_t>(value)); }
  void set_attr(const std::string& name, const std::vector<double>& value);        // 1-D array
  void set_attr(const std::string& name, const std::vector<std::int64_t>& value);  // 1-D array

  Hdf5Type attr_type(const std::string& name) const;
  // Fixed- or variable-length string, scalar or one-element array.
  std::string attr_string(const std::string& name) const;
  double attr_double(const std::string& name) const;         // exactly one numeric element
  std::int64_t attr_int64(const std::string& name) const;    // exactly one integer element
  std::vector<double> attr_doubles(const std::string& name) const;
  std::vector<std::int64_t> attr_int64s(const std::string& name) const;  // integer elements only

  // Throws the layer's exception for this object (InputError when reading, Error otherwise).
  [[noreturn]] void fail(const std::string& object, const std::string& what, bool reading) const;

 protected:
  Hdf5Group(std::shared_ptr<const detail::Hdf5Context> ctx, std::shared_ptr<detail::Hdf5Handle> h,
            std::string path)
      : ctx_(std::move(ctx)), h_(std::move(h)), path_(std::move(path)) {}
  std::string child_path(const std::string& name) const;
  // InputError unless the dataset `ds` (open id) stores the bytes its n declared elements need.
  void check_storage(std::int64_t ds, const std::string& obj, std::int64_t n) const;
  std::int64_t id() const;

  std::shared_ptr<const detail::Hdf5Context> ctx_;
  std::shared_ptr<detail::Hdf5Handle> h_;
  std::string path_;

 private:
  template <class T>
  void write_nd(const std::string& name, const T* data, const std::vector<std::int64_t>& dims,
                const Hdf5WriteOptions& o);
  // count < 0: the whole dataset; else elements [offset, offset + count) of a 1-D one.
  template <class T>
  std::vector<T> read_nd(const std::string& name, std::vector<std::int64_t>* dims,
                         std::int64_t offset = 0, std::int64_t count = -1) const;
  template <class T>
  void write_attr(const std::string& name, const T* data, std::int64_t n, bool scalar);
  template <class T>
  std::vector<T> read_attr(const std::string& name) const;
};

// The file is the root group "/".
class Hdf5File : public Hdf5Group {
 public:
  Hdf5File() = default;
  // Opens an existing file, read-only unless `writable`. InputError when it is missing or not HDF5.
  static Hdf5File open(const std::string& path, bool writable = false);
  // Creates (truncating) a file. Error when it cannot be created.
  // Files up to kInMemoryBytes (expected_bytes: the data the caller will write; 0 = small/unknown)
  // are built in memory (HDF5's core driver) and put on disk by close() with plain writes: a full
  // disk or a write error is then our error, with a plain message ("no space left on device
  // writing r.h5"), and never a file that HDF5 failed to close — HDF5 1.10 keeps such a file in its
  // tables and crashes in its exit handler (H5F__close_cb from H5_term_library: exit 139 on a full
  // tmpfs). Larger files are written by HDF5 directly after a check of the free space.
  static constexpr double kInMemoryBytes = 1024.0 * 1024.0 * 1024.0;
  static Hdf5File create(const std::string& path, double expected_bytes = 0.0);
  // True when `path` exists and carries the HDF5 signature.
  static bool is_hdf5(const std::string& path);

  // Flushes and closes (an in-memory file: writes its image to the path); throws Error on
  // failure. Further use of this object is invalid; groups still open keep the file alive until
  // they go away. The destructor closes silently (an in-memory file is then discarded).
  void close();
  // In-memory files only (in_memory()): flushes and closes without touching the disk and returns
  // the file's image, for write_file_image() later, on any thread (no HDF5 call is left to make).
  // The image is the core driver's own buffer, kept at the close (file image callbacks), not a
  // copy: a 432 MB result took 0.29 s to copy out on the H200 host. (Where objects of the file
  // are still open, the close would not happen: the bytes are copied then.) Error for a file
  // written directly.
  FileImage take_image();
  bool in_memory() const;

 private:
  using Hdf5Group::Hdf5Group;
};

// Writes an image from Hdf5File::take_image() to `path` (truncating it) with plain writes.
// OutputError with a plain message ("no space left on device writing r.h5") on failure.
void write_file_image(const std::string& path, const FileImage& image);

}  // namespace tcsolve
