#pragma once
// Base64 of bytes (report.html embeds its images, so the page is one self-contained file).

#include <cstdint>
#include <string>

namespace runner::util {

inline std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto at = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (at(i) << 16) | (i + 1 < bytes.size() ? at(i + 1) << 8 : 0) |
                       (i + 2 < bytes.size() ? at(i + 2) : 0);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? table[n & 63] : '=';
  }
  return out;
}

}  // namespace runner::util
