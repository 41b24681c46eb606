#pragma once
// The local time as YYYYmmdd-HHMMSS: what names a run's folder and lr-find's.

#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>
#include <string>

namespace runner::util {

inline std::string local_timestamp() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream ss;
  ss << std::put_time(&tm, "%Y%m%d-%H%M%S");
  return ss.str();
}

}  // namespace runner::util
