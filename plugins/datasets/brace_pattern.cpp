#include "brace_pattern.hpp"

#include <algorithm>
#include <cstdlib>

#include "runner/error.hpp"

namespace runner::data {
namespace {

constexpr size_t kMostNames = 10'000'000;

bool is_integer(const std::string& text) {
  if (text.empty()) return false;
  const size_t first = text[0] == '-' ? 1 : 0;
  return first < text.size() && std::all_of(text.begin() + first, text.end(),
                                            [](unsigned char c) { return std::isdigit(c); });
}

// The alternatives one brace's body stands for: "000..003" or "a,b,c" (commas at depth 0).
std::vector<std::string> alternatives(const std::string& body, const std::string& pattern) {
  const size_t dots = body.find("..");
  if (dots != std::string::npos && body.find(',') == std::string::npos) {
    const std::string low = body.substr(0, dots), high = body.substr(dots + 2);
    if (!is_integer(low) || !is_integer(high))
      throw ConfigError("'" + pattern + "': {" + body +
                        "} is not a range of integers (write {000..099})");
    const long long from = std::atoll(low.c_str()), to = std::atoll(high.c_str());
    // Zero-padded to the wider bound when either is written with leading zeros, as braceexpand.
    const bool padded = (low.size() > 1 && low[0] == '0') || (high.size() > 1 && high[0] == '0');
    const size_t width = padded ? std::max(low.size(), high.size()) : 0;
    std::vector<std::string> out;
    const long long step = from <= to ? 1 : -1;
    if (static_cast<size_t>(std::llabs(to - from)) >= kMostNames)
      throw ConfigError("'" + pattern + "': more than 10^7 names");
    for (long long v = from;; v += step) {
      std::string text = std::to_string(std::llabs(v));
      if (text.size() < width) text.insert(0, width - text.size(), '0');
      out.push_back((v < 0 ? "-" : "") + text);
      if (v == to) break;
    }
    return out;
  }
  std::vector<std::string> out;
  int depth = 0;
  std::string part;
  for (char c : body) {
    if (c == ',' && depth == 0) {
      out.push_back(part);
      part.clear();
      continue;
    }
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    part += c;
  }
  out.push_back(part);
  return out;
}

std::vector<std::string> expand_one(const std::string& pattern, const std::string& whole) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos)
      throw ConfigError("'" + whole + "': a '}' without its '{'");
    return {pattern};
  }
  int depth = 0;
  size_t close = std::string::npos;
  for (size_t i = open; i < pattern.size(); ++i) {
    depth += pattern[i] == '{' ? 1 : pattern[i] == '}' ? -1 : 0;
    if (depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string::npos) throw ConfigError("'" + whole + "': a '{' is never closed");
  const std::string head = pattern.substr(0, open);
  const std::vector<std::string> rest = expand_one(pattern.substr(close + 1), whole);
  std::vector<std::string> out;
  for (const auto& choice : alternatives(pattern.substr(open + 1, close - open - 1), whole))
    for (const auto& middle : expand_one(choice, whole))
      for (const auto& tail : rest) {
        out.push_back(head + middle + tail);
        if (out.size() > kMostNames) throw ConfigError("'" + whole + "': more than 10^7 names");
      }
  return out;
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {  // "a-{0..1}.tar::b-{0..1}.tar": several patterns, in order
    const size_t sep = pattern.find("::", start);
    const std::string one = pattern.substr(start, sep == std::string::npos ? sep : sep - start);
    if (!one.empty())
      for (auto& name : expand_one(one, pattern)) out.push_back(std::move(name));
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return out;
}

}  // namespace runner::data
