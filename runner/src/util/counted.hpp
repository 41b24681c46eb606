#pragma once
// "1 process", "2 processes": counts in messages, without "process(es)".

#include <cstdint>
#include <string>

namespace runner::util {

inline std::string counted(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace runner::util
