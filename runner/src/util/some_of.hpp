#pragma once
// "a, b, c and 7 more": a long list of names in a one-line message.

#include <string>
#include <vector>

namespace runner::util {

/// The first `shown` of `names`, comma-separated, then how many more there are.
inline std::string some_of(const std::vector<std::string>& names, size_t shown) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

}  // namespace runner::util
