// Linked into every test binary labelled `gpu` (tests/CMakeLists.txt). Without a CUDA device the
// whole binary skips before its first test, so a test that forgets its own
// TCSOLVE_SKIP_WITHOUT_GPU() cannot fail the GPU-less CI run (it did: ten tests in
// test_solvers_gpu, 2026-11-30). Host-only tests in such a binary also run in its CPU twin.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/device.hpp"
#include "tests/test_paths.hpp"

namespace {

class NeedsAGpu : public ::testing::Environment {
 public:
  // gtest 1.12 counts tests skipped here as passed; the marker line is what CTest's skip
  // pattern (gtest_discover_tests: "[  SKIPPED ]") reads, so they show as skipped.
  void SetUp() override {
    if (::tcsolve::device_count() == 0) std::printf("[  SKIPPED ] the whole binary: no CUDA device\n");
    TCSOLVE_SKIP_WITHOUT_GPU();
  }
};

// Registered before main() runs; gtest owns the environment.
::testing::Environment* const kNeedsAGpu = ::testing::AddGlobalTestEnvironment(new NeedsAGpu);

}  // namespace
