// read_matrix / write_matrix: dispatch by spec and extension, require_square for every source,
// atomic writes, and the exact .mtx -> .h5 -> .mtx round trip on every SuiteSparse matrix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/hdf5_matrix.hpp"
#include "io/matrix_io.hpp"
#include "io/matrix_market.hpp"
#include "tests/io/csr_equal.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

using test::same;

Csr<double> rectangular(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Triplet<double>> t;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 4; ++j)
      if ((i + 2 * j + seed) % 3 == 0) t.push_back({i, j, u(rng)});
  return csr_from_triplets(7, 4, std::move(t));
}

template <class E>
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

TEST(MatrixIo, GeneratorSpecsAreMatrices) {
  Csr<double> a = read_matrix("gen:lap2d:5x3");
  EXPECT_TRUE(same(a, generate("gen:lap2d:5x3")));
  ReadOptions square;
  square.require_square = true;
  EXPECT_EQ(read_matrix("gen:rmat:6:3+scramble@2", square).nrows, 64);
  std::string m = message_of<InvalidArgument>([] { read_matrix("gen:nosuch:3"); });
  EXPECT_NE(m.find("unknown generator 'nosuch'"), std::string::npos) << m;
}

TEST(MatrixIo, WriteThenReadEveryFormat) {
  TempDir tmp;
  Csr<double> sym = generate("gen:band:41:3@8");
  Csr<double> gen = rectangular(5);
  for (const std::string name : {"a.mtx", "a.h5", "a.hdf5", "UPPER.MTX", "UPPER.H5"}) {
    write_matrix(tmp / name, sym);
    EXPECT_TRUE(same(read_matrix(tmp / name), sym)) << name;
    write_matrix(tmp / name, gen);  // overwrite an existing file
    EXPECT_TRUE(same(read_matrix(tmp / name), gen)) << name;
  }
  // FILE.h5:GROUP on both sides.
  write_matrix(tmp / "g.h5:results/A", sym);
  EXPECT_TRUE(same(read_matrix(tmp / "g.h5:results/A"), sym));
  EXPECT_TRUE(same(read_hdf5_matrix(tmp / "g.h5", "/results/A"), sym));
  std::string m = message_of<InputError>([&] { read_matrix(tmp / "g.h5"); });  // default group /matrix
  EXPECT_NE(m.find("/matrix: no such group"), std::string::npos) << m;
  // Gzip-compressed Matrix Market, detected by the .mtx.gz name.
  write_matrix(tmp / "z.mtx", sym);
  {
    std::ifstream in(tmp / "z.mtx", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    gzFile gz = gzopen((tmp / "z.mtx.gz").c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(gz);
  }
  EXPECT_TRUE(same(read_matrix(tmp / "z.mtx.gz"), sym));
  // No temporary files left behind.
  for (const auto& f : tmp.files()) EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
}

// The size hint (the command's host-or-GPU choice): the Matrix Market size line alone, plain or
// gzip, with a symmetric file's other triangle counted; nothing for other sources, a missing or
// malformed file or a pipe (which must not be consumed).
TEST(MatrixIo, SizeHintFromTheMatrixMarketSizeLine) {
  TempDir tmp;
  const std::string sym = "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n5 5 8\n";
  std::ofstream(tmp / "s.mtx") << sym << "this body is never read\n";
  auto h = matrix_size_hint(tmp / "s.mtx");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->rows, 5);
  EXPECT_EQ(h->entries, 2 * 8 - 5);
  std::ofstream(tmp / "g.mtx") << "%%MatrixMarket matrix coordinate real general\n7 7 19\n1 1 2.5\n";
  h = matrix_size_hint(tmp / "g.mtx");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->rows, 7);
  EXPECT_EQ(h->entries, 19);
  {
    gzFile gz = gzopen((tmp / "z.mtx.gz").c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    std::string text = sym;
    for (int i = 0; i < 20000; ++i) text += std::to_string(i % 5 + 1) + " 1 " + std::to_string(0.001 * i) + "\n";
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(gz);
  }
  h = matrix_size_hint(tmp / "z.mtx.gz");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->rows, 5);
  EXPECT_EQ(h->entries, 11);
  std::ofstream(tmp / "a.mtx") << "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n";
  EXPECT_FALSE(matrix_size_hint(tmp / "a.mtx").has_value());
  std::ofstream(tmp / "bad.mtx") << "not a header\n";
  EXPECT_FALSE(matrix_size_hint(tmp / "bad.mtx").has_value());
  EXPECT_FALSE(matrix_size_hint(tmp / "absent.mtx").has_value());
  EXPECT_FALSE(matrix_size_hint("gen:lap2d:10").has_value());
  write_matrix(tmp / "m.h5", generate("gen:lap2d:4"));
  EXPECT_FALSE(matrix_size_hint(tmp / "m.h5").has_value());
  // A FIFO is not read (the solver's read would find it empty).
  const std::string fifo = tmp / "p.mtx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(matrix_size_hint(fifo).has_value());
}

TEST(MatrixIo, BadSpecsAndMissingFiles) {
  TempDir tmp;
  std::string m = message_of<InvalidArgument>([&] { read_matrix(tmp / "a.csv"); });
  EXPECT_NE(m.find("unknown matrix file extension"), std::string::npos) << m;
  EXPECT_NE(m.find("a.csv"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { read_matrix(tmp / "noext"); });
  EXPECT_NE(m.find("unknown matrix file extension"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { read_matrix(""); });
  EXPECT_NE(m.find("empty"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { read_matrix(tmp / "a.h5.gz"); });
  EXPECT_NE(m.find("unknown matrix file extension"), std::string::npos) << m;
  for (const char* name : {"absent.mtx", "absent.mtx.gz", "absent.rsa", "absent.rb.gz", "absent.h5", "absent.h5:grp"}) {
    m = message_of<InputError>([&] { read_matrix(tmp / name); });
    EXPECT_NE(m.find("no such file"), std::string::npos) << name << ": " << m;
    EXPECT_NE(m.find("absent."), std::string::npos) << name << ": " << m;
  }
  fs::create_directories(tmp / "dir.mtx");
  m = message_of<InputError>([&] { read_matrix(tmp / "dir.mtx"); });
  EXPECT_NE(m.find("is a directory"), std::string::npos) << m;
  // Text that is not HDF5 behind a .h5 name.
  std::ofstream(tmp / "fake.h5") << "not hdf5";
  m = message_of<InputError>([&] { read_matrix(tmp / "fake.h5"); });
  EXPECT_NE(m.find("not an HDF5 file"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { read_matrix(tmp / "x.mtx:grp"); });
  EXPECT_NE(m.find("unknown matrix file extension"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { write_matrix(tmp / "x.mtx:grp", generate("gen:lap2d:3")); });
  EXPECT_NE(m.find("cannot write this extension"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { write_matrix(tmp / "out.txt", generate("gen:lap2d:3")); });
  EXPECT_NE(m.find("cannot write this extension"), std::string::npos) << m;
  m = message_of<InvalidArgument>([&] { write_matrix(tmp / "out.mtx.gz", generate("gen:lap2d:3")); });
  EXPECT_NE(m.find("cannot write this extension"), std::string::npos) << m;
}

TEST(MatrixIo, RequireSquareForEverySource) {
  TempDir tmp;
  Csr<double> r = rectangular(3);
  write_matrix(tmp / "r.mtx", r);
  write_matrix(tmp / "r.h5", r);
  write_matrix(tmp / "r2.h5:deep/g", r);  // writing truncates the file: another name
  ReadOptions square;
  square.require_square = true;
  for (const std::string spec : {tmp / "r.mtx", tmp / "r.h5", tmp / "r2.h5:deep/g"}) {
    EXPECT_EQ(read_matrix(spec).nrows, 7) << spec;  // fine without the requirement
    std::string m = message_of<InputError>([&] { read_matrix(spec, square); });
    EXPECT_NE(m.find("square matrix is required"), std::string::npos) << spec << ": " << m;
    EXPECT_EQ(m.rfind(spec.substr(0, spec.find(".h5:") == std::string::npos ? spec.size() : spec.find(".h5:") + 3), 0), 0u)
        << "message starts with the file: " << m;
  }
}

TEST(MatrixIo, AtomicWriteLeavesNothingOnFailure) {
  TempDir tmp;
  // An inconsistent matrix makes the writers throw after the temporary file was created.
  Csr<double> broken = generate("gen:lap2d:4");
  broken.values.pop_back();
  for (const char* name : {"x.mtx", "x.h5"}) {
    EXPECT_THROW(write_matrix(tmp / name, broken), Error) << name;
    EXPECT_TRUE(tmp.files().empty()) << name << ": left " << (tmp.files().empty() ? "" : tmp.files()[0]);
  }
  // An existing target survives a failed overwrite unchanged.
  Csr<double> good = generate("gen:band:30:2");
  write_matrix(tmp / "keep.h5", good);
  EXPECT_THROW(write_matrix(tmp / "keep.h5", broken), Error);
  EXPECT_TRUE(same(read_matrix(tmp / "keep.h5"), good));
  EXPECT_EQ(tmp.files(), std::vector<std::string>{"keep.h5"});
  // Missing folder: clear error, nothing created.
  std::string m = message_of<Error>([&] { write_matrix(tmp / "no/such/dir/x.h5", good); });
  EXPECT_NE(m.find("no/such/dir/x.h5"), std::string::npos) << m;
  // AtomicFile itself: the temporary sits beside the target and vanishes without commit().
  {
    AtomicFile f(tmp / "t.dat");
    EXPECT_EQ(fs::path(f.temp_path()).parent_path(), tmp.path());
    EXPECT_EQ(fs::path(f.temp_path()).filename().string().rfind("t.dat.tmp-", 0), 0u);
    std::ofstream(f.temp_path()) << "partial";
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }
  EXPECT_EQ(tmp.files(), std::vector<std::string>{"keep.h5"});
  {
    AtomicFile f(tmp / "t.dat");
    std::ofstream(f.temp_path()) << "complete";
    f.commit();
  }
  std::ifstream in(tmp / "t.dat");
  std::string s;
  in >> s;
  EXPECT_EQ(s, "complete");
  EXPECT_EQ(tmp.files(), (std::vector<std::string>{"keep.h5", "t.dat"}));
}

// Every SuiteSparse matrix: read (.mtx and .rsa), .mtx -> .h5 -> .mtx, all exact.
TEST(MatrixIo, SuiteSparseRoundTripMtxH5Mtx) {
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  TempDir tmp;
  int count = 0;
  for (const auto& e : fs::directory_iterator(test::matrices_dir())) {
    const std::string path = e.path().string();
    const std::string ext = e.path().extension().string();
    if (ext != ".mtx" && ext != ".rsa" && ext != ".rb" && ext != ".rua") continue;
    SCOPED_TRACE(path);
    Csr<double> a = read_matrix(path);
    validate(a);
    write_matrix(tmp / "m.h5", a);
    Csr<double> b = read_matrix(tmp / "m.h5");
    EXPECT_TRUE(same(a, b));
    write_matrix(tmp / "m.mtx", b);
    Csr<double> c = read_matrix(tmp / "m.mtx");
    EXPECT_TRUE(same(a, c));
    if (ext == ".rsa") {  // the same matrix published in both formats reads identically
      fs::path twin = e.path();
      twin.replace_extension(".mtx");
      if (fs::exists(twin)) {
        Csr<double> m = read_matrix(twin.string());
        EXPECT_EQ(m.row_ptr, a.row_ptr);
        EXPECT_EQ(m.col_idx, a.col_idx);
        EXPECT_EQ(m.values, a.values);
      }
    }
    ++count;
  }
  EXPECT_GT(count, 10);
}

}  // namespace
}  // namespace tcsolve
