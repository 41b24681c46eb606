#include "util/cpu_features.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

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

}  // namespace runner::util
