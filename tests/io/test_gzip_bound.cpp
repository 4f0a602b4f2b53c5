// Gzip bombs (io/text_input.hpp, InflateLimit): a .mtx.gz or .rb.gz inflates only as far as its
// header allows. The bombs are made here, streamed through deflate from one repeated chunk (a few
// hundred KB compressed, never held inflated). This binary also runs under `ulimit -v 500000`
// (io_declared_sizes_under_ulimit): inflating the 128 MiB bomb whole (in a buffer that doubles)
// would not fit there.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "io/matrix_market.hpp"
#include "io/rutherford_boeing.hpp"
#include "io/text_input.hpp"
#include "tests/temp_dir.hpp"

namespace tcsolve::test {
namespace {

// gzip of head + chunk × times + tail, deflated as it streams (memory: the output only).
std::string gzip_stream(const std::string& head, const std::string& chunk, std::int64_t times,
                        const std::string& tail = "") {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 1, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out;
  char buf[1 << 16];
  auto feed = [&](const std::string& s, int flush) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
    zs.avail_in = static_cast<uInt>(s.size());
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      deflate(&zs, flush);
      out.append(buf, sizeof buf - zs.avail_out);
    } while (zs.avail_out == 0);
  };
  feed(head, Z_NO_FLUSH);
  for (std::int64_t t = 0; t < times; ++t) feed(chunk, Z_NO_FLUSH);
  feed(tail, Z_FINISH);
  deflateEnd(&zs);
  return out;
}

std::string lines_of(const std::string& line, std::size_t bytes) {
  std::string s;
  while (s.size() + line.size() <= bytes) s += line;
  return s;
}

const std::string kBanner = "%%MatrixMarket matrix coordinate real general\n";
const std::string kComments = lines_of("% a comment line of a gzip bomb, repeated\n", std::size_t(1) << 16);
const std::string kBlanks = lines_of("                                                               \n", std::size_t(1) << 16);

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f, expects an InputError whose message holds `what`, within `max_s` seconds.
template <class F>
void expect_refused(F&& f, const std::string& what, double max_s) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    f();
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  const double s = seconds_since(t0);
  EXPECT_LT(s, max_s);
  std::printf("[ refused ] in %.3f s: %s\n", s, what.c_str());
}

// 128 MiB of comment lines before the size line: refused at 64 MiB inflated.
TEST(GzipBound, CommentBombBeforeTheSizeLineIsRefusedAtTheHeaderCap) {
  const std::string gz = gzip_stream(kBanner, kComments, 2048, "3 3 1\n1 1 1\n");
  ASSERT_LT(gz.size(), std::size_t(2) << 20);
  expect_refused([&] { parse_matrix_market(gz.data(), gz.size(), "bomb.mtx.gz"); },
                 "64.0 MiB inflated (from", 10.0);
  expect_refused([&] { parse_matrix_market(gz.data(), gz.size(), "bomb.mtx.gz"); },
                 "the header is still incomplete", 10.0);
}

// The same through the file path (read_text_file).
TEST(GzipBound, CommentBombFileIsRefused) {
  TempDir d;
  const std::string path = d.write("bomb.mtx.gz", gzip_stream(kBanner, kComments, 2048, "3 3 1\n1 1 1\n"));
  expect_refused([&] { read_matrix_market(path); }, path + ": gzip: 64.0 MiB inflated", 10.0);
}

// After the size line: 1 entry may take at most 256 bytes + 16 MiB of text; 64 MiB of blank lines
// (which the plain reader accepts) are refused without inflating them.
TEST(GzipBound, TextBeyondWhatTheSizeLineDeclaresIsRefused) {
  const std::string gz = gzip_stream(kBanner + "% c\n3 3 1\n1 1 1\n", kBlanks, 1024);
  expect_refused([&] { parse_matrix_market(gz.data(), gz.size(), "tail.mtx.gz"); },
                 "the most that the header (", 10.0);
  expect_refused([&] { parse_matrix_market(gz.data(), gz.size(), "tail.mtx.gz"); },
                 "with the 1 entries its size line declares", 10.0);
}

// Within the slack the same text reads (trailing blank lines are legal).
TEST(GzipBound, BlankLinesWithinTheSlackStillRead) {
  const std::string gz = gzip_stream(kBanner + "3 3 2\n1 1 1\n3 2 -2.5\n", kBlanks, 32);  // 2 MiB
  const Csr<double> a = parse_matrix_market(gz.data(), gz.size(), "ok.mtx.gz");
  EXPECT_EQ(a.nrows, 3);
  EXPECT_EQ(a.nnz(), 2);
}

// A header error inside a gzip stream is the header's own message, not the bound's.
TEST(GzipBound, AMalformedSizeLineKeepsItsOwnMessage) {
  const std::string gz = gzip_stream(kBanner + "3 x 1\n", kComments, 8);
  try {
    parse_matrix_market(gz.data(), gz.size(), "bad.mtx.gz");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad size line"), std::string::npos) << e.what();
  }
}

// Rutherford-Boeing: the header's TOTCRD lines (each at most twice its widest record + 256 bytes)
// plus 16 MiB; 64 MiB of blank lines after the data are refused.
TEST(GzipBound, RutherfordBoeingTextBeyondItsCardsIsRefused) {
  const std::string rb =
      "Test matrix                                                             TESTKEY \n"
      "             3             1             1             1             0\n"
      "RUA                        2             2             2             0\n"
      "(3I3)           (2I3)           (2E10.3)            \n"
      "  1  2  3\n"
      "  1  2\n"
      " 1.000E+00 2.000E+00\n";
  const Csr<double> a = parse_rutherford_boeing(rb.data(), rb.size(), "ok.rb");
  ASSERT_EQ(a.nnz(), 2);
  const std::string gz = gzip_stream(rb, kBlanks, 1024);
  expect_refused([&] { parse_rutherford_boeing(gz.data(), gz.size(), "tail.rb.gz"); },
                 "with the 3 data lines its TOTCRD declares", 10.0);
  const std::string small = gzip_stream(rb, kBlanks, 16);  // 1 MiB: within the slack
  EXPECT_EQ(parse_rutherford_boeing(small.data(), small.size(), "ok.rb.gz").nnz(), 2);
}

}  // namespace
}  // namespace tcsolve::test
