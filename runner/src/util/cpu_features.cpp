#include "util/cpu_features.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace runner::util {

std::string native_bf16_feature() {
  if (const char* forced = std::getenv("RUNNER_CPU_NATIVE_BF16"); forced && *forced)
    return std::string(forced) == "0" ? "" : "RUNNER_CPU_NATIVE_BF16";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream flags(line.substr(line.find(':') + 1));
    bool avx512_bf16 = false;
    for (std::string flag; flags >> flag;) {
      if (flag == "amx_bf16") return flag;
      avx512_bf16 = avx512_bf16 || flag == "avx512_bf16";
    }
    return avx512_bf16 ? "avx512_bf16" : "";  // the first processor speaks for all
  }
  return "";
}

namespace {

/// The features ATen's cpuinfo asks for before it picks a kernel set (DispatchStub.cpp).
std::vector<std::string> features_of(const std::string& capability) {
  if (capability == "avx512") return {"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"};
  if (capability == "avx2") return {"avx2", "fma"};
  return {};
}

bool cpu_has(const std::string& feature) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports takes literals only; it also checks that the kernel saves the
  // registers (XCR0), as cpuinfo does.
  if (feature == "avx512f") return __builtin_cpu_supports("avx512f");
  if (feature == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (feature == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (feature == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (feature == "avx2") return __builtin_cpu_supports("avx2");
  if (feature == "fma") return __builtin_cpu_supports("fma");
#endif
  (void)feature;
  return false;
}

}  // namespace

std::string aten_capability_missing_features(const std::string& capability) {
  std::string missing;
  for (const auto& feature : features_of(capability))
    if (!cpu_has(feature)) missing += (missing.empty() ? "" : ", ") + feature;
  return missing;
}

std::string cpu_aten_capability() {
#if defined(__x86_64__) || defined(__i386__)
  for (const char* capability : {"avx512", "avx2"})
    if (aten_capability_missing_features(capability).empty()) return capability;
#endif
  return "default";
}

std::string aten_capability_refusal() {
  const char* value = std::getenv("ATEN_CPU_CAPABILITY");
  if (value == nullptr) return "";
  const std::string capability = value;
  const std::string missing = aten_capability_missing_features(capability);
  if (missing.empty()) return "";
  const std::string best = cpu_aten_capability();
  return "ATEN_CPU_CAPABILITY=" + capability + " but this CPU has no " +
         (capability == "avx512" ? "AVX-512" : "AVX2") + " (" + missing +
         " missing): ATen would stop with an illegal instruction; unset it" +
         (best == "default" ? " or use default" : " or use " + best);
}

}  // namespace runner::util
