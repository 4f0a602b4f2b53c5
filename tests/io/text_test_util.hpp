// Helpers shared by the text-reader tests: exact CSR comparison, InputError expectations with the
// line number, gzip compression and temporary files.
#pragma once
#include "tests/temp_dir.hpp"
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"

namespace tcsolve::test {

inline void expect_csr(const Csr<double>& a, std::int64_t nrows, std::int64_t ncols,
                       const std::vector<std::int64_t>& row_ptr, const std::vector<std::int32_t>& col_idx,
                       const std::vector<double>& values) {
  EXPECT_EQ(a.nrows, nrows);
  EXPECT_EQ(a.ncols, ncols);
  EXPECT_EQ(a.row_ptr, row_ptr);
  EXPECT_EQ(a.col_idx, col_idx);
  ASSERT_EQ(a.values.size(), values.size());
  for (std::size_t k = 0; k < values.size(); ++k) EXPECT_EQ(a.values[k], values[k]) << "entry " << k;
  EXPECT_NO_THROW(validate(a));
}

// Runs f, expects InputError at `line` whose message names "NAME:LINE:" and contains `what`.
inline void expect_input_error(const std::function<void()>& f, const std::string& name, std::int64_t line,
                               const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no InputError (expected line " << line << ": " << what << ")";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.line(), line) << msg;
    EXPECT_EQ(e.file(), name) << msg;
    const std::string where = line > 0 ? name + ":" + std::to_string(line) + ": " : name + ": ";
    EXPECT_EQ(msg.rfind(where, 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "message '" << msg << "' lacks '" << what << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// gzip-format compression (zlib with the gzip wrapper).
inline std::string gzip_bytes(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}


// With TCSOLVE_DUMP_CORPUS=DIR set, the tests write each input they feed a reader (with default
// options) to DIR/FOLDER/{ok,bad}_HASH: how tests/fuzz/corpus was seeded.
inline void dump_corpus(const std::string& folder, const std::string& bytes, bool ok) {
  const char* root = std::getenv("TCSOLVE_DUMP_CORPUS");
  if (!root) return;
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof name, "%s_%016llx", ok ? "ok" : "bad", static_cast<unsigned long long>(h));
  const auto dir = std::filesystem::path(root) / folder;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace tcsolve::test
