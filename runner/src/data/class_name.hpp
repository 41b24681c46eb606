#pragma once
// A class's name for messages, captions and tables: the dataset's, else its index.

#include <cstdint>
#include <string>
#include <vector>

namespace runner::data {

inline std::string class_name(const std::vector<std::string>& names, int64_t c) {
  return c >= 0 && c < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(c)]
                                                          : std::to_string(c);
}

}  // namespace runner::data
