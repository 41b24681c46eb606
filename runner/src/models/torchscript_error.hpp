#pragma once
// The line of a libtorch error a user needs. An error raised inside a TorchScript module comes
// as a long trace of the scripted code ("The following operation failed in the TorchScript
// interpreter ... Traceback ..."), whose last line is the reason (e.g. "RuntimeError: Given
// groups=1, weight of size [16, 3, 3, 3], expected input[1, 1, 32, 32] to have 3 channels");
// other libtorch errors say it in their first line.

#include <string>

namespace runner::models {

inline bool is_torchscript_error(const std::string& what) {
  return what.find("failed in the TorchScript interpreter") != std::string::npos;
}

/// The reason in one line: a TorchScript trace's last non-empty line, else the first line.
inline std::string error_reason_line(const std::string& what) {
  if (!is_torchscript_error(what)) return what.substr(0, what.find('\n'));
  size_t end = what.find_last_not_of(" \n");
  if (end == std::string::npos) return what;
  const size_t start = what.rfind('\n', end);
  return what.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start + 1));
}

}  // namespace runner::models
