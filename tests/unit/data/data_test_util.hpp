#pragma once
// Helpers for the data tests: schema defaults, plugin construction and tiny files on disk.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/data/dataset.hpp"
#include "runner/data/transform.hpp"
#include "runner/registries.hpp"

namespace runner::data::testing {

/// `params` with every missing property that has a schema default filled in (what the core does).
inline nlohmann::json with_defaults(const nlohmann::json& schema, nlohmann::json params) {
  if (params.is_null()) params = nlohmann::json::object();
  for (const auto& [key, property] : schema.at("properties").items())
    if (!params.contains(key) && property.contains("default")) params[key] = property.at("default");
  return params;
}

inline DatasetSplits make_dataset(const std::string& name, const nlohmann::json& params,
                                  DatasetContext context = {}) {
  const auto& entry = registries().datasets.at(name);
  return entry.factory(with_defaults(entry.schema, params), context);
}

inline std::shared_ptr<Transform> make_transform(const std::string& name,
                                                 const nlohmann::json& params = {}) {
  const auto& entry = registries().transforms.at(name);
  return entry.factory(with_defaults(entry.schema, params));
}

/// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() /
            ("runner_data_" + tag + "_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// A valid gzip file holding `data` in stored (uncompressed) deflate blocks.
inline std::vector<uint8_t> gzip_stored(const std::vector<uint8_t>& data) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : data) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  crc ^= 0xFFFFFFFFu;
  std::vector<uint8_t> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(data.size() - pos, 65535);
    const bool last = pos + n == data.size();
    out.push_back(last ? 1 : 0);
    out.push_back(n & 0xFF);
    out.push_back(n >> 8);
    out.push_back(~n & 0xFF);
    out.push_back((~n >> 8) & 0xFF);
    out.insert(out.end(), data.begin() + pos, data.begin() + pos + n);
    pos += n;
  } while (pos < data.size());
  for (uint32_t v : {crc, static_cast<uint32_t>(data.size())})
    for (int k = 0; k < 4; ++k) out.push_back((v >> (8 * k)) & 0xFF);
  return out;
}

/// IDX bytes: magic 0x0000TTDD, big-endian dims, then `payload` (already big-endian).
inline std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                                      const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int k = 3; k >= 0; --k) out.push_back((d >> (8 * k)) & 0xFF);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace runner::data::testing
