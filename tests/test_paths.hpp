// Where tests find shared data. Real SuiteSparse matrices live beside the repository in
// ../shared/matrices/suitesparse; $TCSOLVE_MATRICES overrides (used on the GPU machine, where
// ../shared does not travel). Tests skip cleanly when the folder is absent.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tcsolve::test {

inline std::filesystem::path source_dir() { return TCSOLVE_SOURCE_DIR; }

inline std::filesystem::path matrices_dir() {
  if (const char* e = std::getenv("TCSOLVE_MATRICES")) return e;
  return source_dir() / ".." / "shared" / "matrices" / "suitesparse";
}

// The unsymmetric, indefinite and rectangular matrices (../shared/matrices/general): beside the
// SuiteSparse folder, or TCSOLVE_MATRICES_GENERAL (the GPU machine's staged copy).
inline std::filesystem::path general_matrices_dir() {
  if (const char* e = std::getenv("TCSOLVE_MATRICES_GENERAL")) return e;
  return matrices_dir().parent_path() / "general";
}

inline bool have_matrices() { return std::filesystem::is_directory(matrices_dir()); }

}  // namespace tcsolve::test

#define TCSOLVE_SKIP_WITHOUT_MATRICES()                                                    \
  do {                                                                                     \
    if (!::tcsolve::test::have_matrices())                                                 \
      GTEST_SKIP() << "no SuiteSparse matrices at " << ::tcsolve::test::matrices_dir();    \
  } while (0)

// Skips when one named matrix (NAME.mtx) is not in the folder (a partial copy, e.g. on the GPU
// machine).
#define TCSOLVE_SKIP_WITHOUT_MATRIX(name)                                                  \
  do {                                                                                     \
    TCSOLVE_SKIP_WITHOUT_MATRICES();                                                       \
    if (!std::filesystem::exists(::tcsolve::test::matrices_dir() / (std::string(name) + ".mtx"))) \
      GTEST_SKIP() << std::string(name) << ".mtx is not at " << ::tcsolve::test::matrices_dir(); \
  } while (0)

#define TCSOLVE_SKIP_WITHOUT_GPU()                                                         \
  do {                                                                                     \
    if (::tcsolve::device_count() == 0)                                                    \
      GTEST_SKIP() << (::tcsolve::built_with_cuda() ? "no CUDA device present"             \
                                                     : "built without CUDA");              \
  } while (0)
