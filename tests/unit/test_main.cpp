#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runner/registries.hpp"
#include "util/cpu_features.hpp"

namespace {

/// ctest's SKIP_RETURN_CODE for the unit tests (tests/CMakeLists.txt).
constexpr int kExitSkipped = 77;

bool lists_tests(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--gtest_list_tests") == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // ATen 2.11 runs the kernels ATEN_CPU_CAPABILITY names whether or not this CPU has them: a
  // test run under a capability the CPU lacks would die of an illegal instruction, so it skips.
  // RUNNER_TEST_IGNORE_CPU=1 runs them anyway (isa_avx2_test.sh: that ATen does stop).
  const char* ignore_cpu = std::getenv("RUNNER_TEST_IGNORE_CPU");
  const bool check_cpu = !(ignore_cpu && std::strcmp(ignore_cpu, "1") == 0);
  if (const std::string why = runner::util::aten_capability_refusal();
      check_cpu && !why.empty() && !lists_tests(argc, argv)) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return kExitSkipped;
  }
  ::testing::InitGoogleTest(&argc, argv);
  runner::register_builtin_plugins(runner::registries());
  return RUN_ALL_TESTS();
}
