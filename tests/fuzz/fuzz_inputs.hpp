// Inputs of the fuzz jobs, shared by the mutation runner (fuzz_mutate.cpp) and the libFuzzer
// targets: byte-level mutations of a text seed, gzip-wrapped inputs, and HDF5 CSR groups with
// mutated content (fuzz_mutate.cpp says what each does).
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/hdf5_matrix.hpp"
#include "tests/fuzz/fuzz_guard.hpp"

namespace tcsolve::fuzz {

using Rng = std::mt19937_64;

inline std::uint64_t pick(Rng& r, std::uint64_t n) { return n ? r() % n : 0; }

// ---- byte-level mutations of a text ----

inline const char* const kNumbers[] = {"0",          "-1",          "1",    "2147483647", "2147483648", "-2147483648",
                                "4294967296", "9223372036854775807", "99999999999999999999", "1e308", "1e309",
                                "-1e-320",    "nan",         "inf",  "-0",         "1.",         ".5e",
                                "0x10",       "1e+",         "+",    "00000000000000000000000000001"};
inline const char kBytes[] = {'\0', '\n', '\r', ' ', '\t', '%', '-', '+', '.', 'e', 'E', 'D', '9', '0', '(', ')', ',', '\xff'};

inline void replace_number(Rng& r, std::string& s) {
  std::vector<std::pair<std::size_t, std::size_t>> nums;
  for (std::size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '+' || s[j] == '-')) ++j;
      nums.push_back({i, j - i});
      i = j;
    } else {
      ++i;
    }
  }
  if (nums.empty()) return;
  const auto [at, len] = nums[pick(r, nums.size())];
  s.replace(at, len, kNumbers[pick(r, sizeof kNumbers / sizeof *kNumbers)]);
}

inline void line_op(Rng& r, std::string& s) {
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == '\n') starts.push_back(i + 1);
  const std::size_t k = pick(r, starts.size());
  const std::size_t b = starts[k], e = k + 1 < starts.size() ? starts[k + 1] : s.size();
  const std::string line = s.substr(b, e - b);
  switch (pick(r, 3)) {
    case 0: s.insert(b, line); break;                                // duplicate
    case 1: s.erase(b, e - b); break;                                // drop
    default: s.insert(b, line.empty() ? "\n" : std::string(1 + pick(r, 3), line[0])); break;
  }
}

inline void mutate_once(Rng& r, std::string& s, const std::vector<std::string>& others) {
  const std::size_t n = s.size();
  switch (pick(r, 9)) {
    case 0: if (n) s[pick(r, n)] ^= static_cast<char>(1u << pick(r, 8)); break;
    case 1: if (n) s[pick(r, n)] = kBytes[pick(r, sizeof kBytes)]; break;
    case 2: if (n) { const std::size_t at = pick(r, n); s.erase(at, 1 + pick(r, std::min<std::size_t>(16, n - at))); } break;
    case 3: if (n) { const std::size_t at = pick(r, n), len = 1 + pick(r, std::min<std::size_t>(64, n - at));
                     s.insert(pick(r, n + 1), s.substr(at, len)); } break;
    case 4: s.insert(pick(r, n + 1), std::string(1 + pick(r, 4), kBytes[pick(r, sizeof kBytes)])); break;
    case 5: replace_number(r, s); break;
    case 6: line_op(r, s); break;
    case 7: if (n) s.resize(pick(r, n)); break;
    default: if (!others.empty()) {  // splice: this seed's head, another's tail
      const std::string& o = others[pick(r, others.size())];
      s = s.substr(0, pick(r, n + 1)) + o.substr(pick(r, o.size() + 1));
    } break;
  }
  if (s.size() > (std::size_t(1) << 16)) s.resize(std::size_t(1) << 16);
}

inline std::string mutated(Rng& r, const std::vector<std::string>& seeds) {
  std::string s = seeds[pick(r, seeds.size())];
  for (std::uint64_t m = 1 + pick(r, 4); m > 0; --m) mutate_once(r, s, seeds);
  return s;
}

// ---- gzip inputs ----

inline std::string gz_input(Rng& r, const std::vector<std::string>& seeds) {
  if (pick(r, 16) == 0) {  // a small bomb: a seed's first line, then one long run (≤ 2 MiB inflated)
    std::string s = seeds[pick(r, seeds.size())];
    s = s.substr(0, s.find('\n') == std::string::npos ? s.size() : s.find('\n') + 1);
    s += std::string(pick(r, 2) ? "% " : "") + std::string(1 + pick(r, 2 << 20), pick(r, 2) ? ' ' : '\n');
    return gzip_bytes(s, 9);
  }
  std::string gz = gzip_bytes(mutated(r, seeds), 1 + static_cast<int>(pick(r, 9)));
  switch (pick(r, 6)) {
    case 0: if (gz.size() > 2) gz[2 + pick(r, gz.size() - 2)] ^= static_cast<char>(1u << pick(r, 8)); break;
    case 1: gz.resize(pick(r, gz.size() + 1)); break;
    case 2: gz += gzip_bytes(seeds[pick(r, seeds.size())]); break;   // a second member
    case 3: gz += std::string(1 + pick(r, 8), pick(r, 2) ? '\0' : 'x'); break;
    default: break;                                                      // intact stream
  }
  return gz;
}

// ---- HDF5 inputs: a CSR group with mutated content ----

template <class T>
inline void mutate_vector(Rng& r, std::vector<T>& v, const std::vector<T>& edge) {
  switch (pick(r, 5)) {
    case 0: if (!v.empty()) v[pick(r, v.size())] = edge[pick(r, edge.size())]; break;
    case 1: if (!v.empty()) v.erase(v.begin() + static_cast<std::ptrdiff_t>(pick(r, v.size()))); break;
    case 2: v.insert(v.begin() + static_cast<std::ptrdiff_t>(pick(r, v.size() + 1)), edge[pick(r, edge.size())]); break;
    case 3: if (v.size() > 1) std::swap(v[pick(r, v.size())], v[pick(r, v.size())]); break;
    default: break;
  }
}

struct H5Spec {
  std::vector<std::int64_t> shape, indptr, indices;
  std::vector<double> data;
  int shape_kind = 0, enc_kind = 0, sym_kind = 0, int_width = 64, data_kind = 0, drop = -1;
  bool compress = false, in_root = false;
};

inline H5Spec h5_spec(Rng& r, const Csr<double>& a) {
  H5Spec h;
  h.shape = {a.nrows, a.ncols};
  h.indptr.assign(a.row_ptr.begin(), a.row_ptr.end());
  h.indices.assign(a.col_idx.begin(), a.col_idx.end());
  h.data = a.values;
  const std::vector<std::int64_t> ie{0, -1, 1, 2, 3, 2147483647, 2147483648LL, -2147483648LL, INT64_MAX, INT64_MIN};
  const std::vector<double> de{0.0, -1.0, NAN, INFINITY, -INFINITY, 1e308, 5e-324};
  for (std::uint64_t m = 1 + pick(r, 3); m > 0; --m) {
    switch (pick(r, 10)) {
      case 0: mutate_vector(r, h.shape, ie); break;
      case 1: case 2: mutate_vector(r, h.indptr, ie); break;
      case 3: case 4: mutate_vector(r, h.indices, ie); break;
      case 5: mutate_vector(r, h.data, de); break;
      case 6: h.shape_kind = static_cast<int>(pick(r, 4)), h.enc_kind = static_cast<int>(pick(r, 5)); break;
      case 7: h.sym_kind = static_cast<int>(pick(r, 5)), h.int_width = pick(r, 2) ? 32 : 64; break;
      case 8: h.data_kind = static_cast<int>(pick(r, 3)), h.drop = static_cast<int>(pick(r, 4)) - 1; break;
      default: h.compress = pick(r, 2), h.in_root = pick(r, 4) == 0; break;
    }
  }
  return h;
}

inline void write_ints(Hdf5Group& g, const char* name, const std::vector<std::int64_t>& v, int width, const Hdf5WriteOptions& o) {
  if (width == 64) return g.write(name, v, o);
  std::vector<std::int32_t> w(v.begin(), v.end());  // (wraps: hostile values stay hostile)
  g.write(name, w, o);
}

// Writes the spec to `path`; false when the writing layer itself refuses it (not an input then).
inline bool write_h5(const H5Spec& h, const std::string& path) {
  try {
    Hdf5File f = Hdf5File::create(path);
    {
      Hdf5Group g = h.in_root ? static_cast<Hdf5Group>(f) : f.create_group("matrix");
      const char* enc[] = {"csr_matrix", "csc_matrix", "coo", ""};
      if (h.enc_kind < 4) g.set_attr("encoding-type", enc[h.enc_kind]);
      else g.set_attr("encoding-type", 3.0);
      g.set_attr("encoding-version", "0.1.0");
      switch (h.shape_kind) {
        case 0: g.set_attr("shape", h.shape); break;
        case 1: g.set_attr("shape", std::vector<double>(h.shape.begin(), h.shape.end())); break;
        case 2: g.set_attr("shape", "[3, 3]"); break;
        default: if (!h.shape.empty()) g.set_attr("shape", h.shape[0]); break;
      }
      const char* sym[] = {"general", "symmetric", "skew-symmetric", "hermitian"};
      if (h.sym_kind < 4) g.set_attr("symmetry", sym[h.sym_kind]);
      Hdf5WriteOptions o;
      o.compress = h.compress;
      if (h.drop != 0) {
        if (h.data_kind == 0) g.write("data", h.data, o);
        else if (h.data_kind == 1) g.write("data", std::vector<std::int32_t>(h.data.size(), 1), o);
        else g.write_2d("data", h.data.data(), 1, static_cast<std::int64_t>(h.data.size()), o);
      }
      if (h.drop != 1) write_ints(g, "indices", h.indices, h.int_width, o);
      if (h.drop != 2) write_ints(g, "indptr", h.indptr, 64, o);
    }
    f.close();
    return true;
  } catch (const Error&) {
    return false;
  }
}

inline void run_h5(const std::string& path) {
  try {
    const Csr<double> a = read_hdf5_matrix(path, "matrix");
    validate(a);
  } catch (const InvalidArgument& e) {
    throw std::logic_error(std::string("HDF5 reader returned an invalid CSR: ") + e.what());
  } catch (const Error&) {
  }
}

}  // namespace tcsolve::fuzz
