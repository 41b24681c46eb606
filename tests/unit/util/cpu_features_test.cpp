// Which of ATen's CPU kernel sets this CPU runs, and the refusal of an ATEN_CPU_CAPABILITY it
// cannot run. Run natively by ctest and under an AVX2-only CPU model by isa_avx2_test.sh.

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>

#include "util/cpu_features.hpp"

namespace runner::util {
namespace {

/// Sets ATEN_CPU_CAPABILITY for one scope and puts back what was there.
class CapabilityVariable {
 public:
  explicit CapabilityVariable(const char* value) {
    if (const char* old = std::getenv("ATEN_CPU_CAPABILITY")) old_ = old;
    if (value)
      ::setenv("ATEN_CPU_CAPABILITY", value, 1);
    else
      ::unsetenv("ATEN_CPU_CAPABILITY");
  }
  ~CapabilityVariable() {
    if (old_)
      ::setenv("ATEN_CPU_CAPABILITY", old_->c_str(), 1);
    else
      ::unsetenv("ATEN_CPU_CAPABILITY");
  }

 private:
  std::optional<std::string> old_;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

TEST(CpuFeatures, TheBestCapabilityIsTheOneAtenPicksWithoutTheVariable) {
  // ATen decides once per process; ctest runs this test without the variable.
  if (std::getenv("ATEN_CPU_CAPABILITY")) GTEST_SKIP() << "ATEN_CPU_CAPABILITY is set";
  EXPECT_EQ(cpu_aten_capability(), lower(at::get_cpu_capability()));
  EXPECT_EQ(aten_capability_missing_features(cpu_aten_capability()), "");
}

TEST(CpuFeatures, ARefusalForEachCapabilityThisCpuLacksAndNoneForTheRest) {
  for (const char* capability : {"default", "avx2", "avx512"}) {
    CapabilityVariable variable(capability);
    const std::string missing = aten_capability_missing_features(capability);
    const std::string why = aten_capability_refusal();
    EXPECT_EQ(missing.empty(), why.empty()) << capability << ": " << why;
    if (missing.empty()) continue;
    EXPECT_NE(why.find(std::string("ATEN_CPU_CAPABILITY=") + capability + " but this CPU has no"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find(missing + " missing"), std::string::npos) << why;
    EXPECT_NE(why.find("illegal instruction; unset it or use " + cpu_aten_capability()),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";
  }
}

TEST(CpuFeatures, DefaultKernelsAndUnknownNamesAreNeverRefused) {
  // ATen ignores a name it does not take (with a warning) and picks by the CPU.
  for (const char* value : {"default", "AVX512", "sve256", ""}) {
    CapabilityVariable variable(value);
    EXPECT_EQ(aten_capability_refusal(), "") << value;
  }
  CapabilityVariable unset(nullptr);
  EXPECT_EQ(aten_capability_refusal(), "");
}

TEST(CpuFeatures, Avx512NeedsMoreThanAvx2) {
  // A CPU with AVX-512 kernels has AVX2's too (ATen's rule: the sets are nested).
  if (aten_capability_missing_features("avx512").empty())
    EXPECT_EQ(aten_capability_missing_features("avx2"), "");
  if (!aten_capability_missing_features("avx2").empty())
    EXPECT_NE(aten_capability_missing_features("avx512"), "");
}

}  // namespace
}  // namespace runner::util
