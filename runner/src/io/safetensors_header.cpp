#include "io/safetensors_header.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "runner/error.hpp"

namespace runner::io {
namespace {

// A header above this is not a model checkpoint; refuse it before allocating.
constexpr uint64_t kMaxHeaderLength = 100ull * 1024 * 1024;
// Safetensors headers are two levels deep ({name: {shape: [...]}}); deeper JSON is hostile.
constexpr int kMaxJsonDepth = 8;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw DataError("malformed safetensors file '" + file + "': " + what +
                  " (re-export it with safetensors.torch.save_file or `runner export`)");
}

std::vector<int64_t> parse_shape(const nlohmann::json& value, const std::string& file,
                                 const std::string& name) {
  if (!value.is_array()) fail(file, "tensor '" + name + "': \"shape\" is not an array");
  std::vector<int64_t> shape;
  for (const auto& dim : value) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(file, "tensor '" + name + "': shape " + value.dump() +
                     " holds something other than a non-negative integer");
    shape.push_back(dim.get<int64_t>());
  }
  return shape;
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& value,
                             uint64_t data_size, const std::string& file) {
  if (!value.is_object()) fail(file, "tensor '" + name + "' is not a JSON object");
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      fail(file, "tensor '" + name + "' has an unknown key '" + it.key() + "'");
  }
  if (!value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
    fail(file, "tensor '" + name + "' lacks one of \"dtype\", \"shape\", \"data_offsets\"");
  SafetensorsEntry e;
  e.name = name;
  const auto& dtype = value.at("dtype");
  if (!dtype.is_string()) fail(file, "tensor '" + name + "': \"dtype\" is not a string");
  e.dtype = dtype.get<std::string>();
  size_t itemsize = safetensors_dtype_size(e.dtype);
  if (itemsize == 0)
    fail(file, "tensor '" + name + "' has unsupported dtype '" + e.dtype +
                   "' (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
  e.shape = parse_shape(value.at("shape"), file, name);
  const auto& offsets = value.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail(file, "tensor '" + name + "': \"data_offsets\" is not [begin, end]");
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    fail(file, "tensor '" + name + "': data_offsets [" + std::to_string(e.begin) + ", " +
                   std::to_string(e.end) + "] lie outside the " + std::to_string(data_size) +
                   "-byte data section (truncated file?)");
  // numel * itemsize, refusing overflow: the product must equal end - begin <= data_size.
  uint64_t bytes = itemsize;
  for (int64_t dim : e.shape) {
    auto d = static_cast<uint64_t>(dim);
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / d) {
      bytes = std::numeric_limits<uint64_t>::max();
      break;
    }
    bytes *= d;
  }
  if (bytes != e.end - e.begin)
    fail(file, "tensor '" + name + "': shape " + value.at("shape").dump() + " of " + e.dtype +
                   " needs " +
                   (bytes == std::numeric_limits<uint64_t>::max() ? std::string("more")
                                                                  : std::to_string(bytes)) +
                   " bytes but data_offsets span " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

uint64_t safetensors_header_length(const unsigned char* first8, uint64_t file_size,
                                   const std::string& file) {
  if (file_size < 8) fail(file, "shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (n > kMaxHeaderLength || n > file_size - 8)
    fail(file, "header length " + std::to_string(n) + " exceeds the file size " +
                   std::to_string(file_size) + " (or the 100 MB limit)");
  if (n < 2) fail(file, "header length " + std::to_string(n) + " is too short for JSON");
  return n;
}

SafetensorsHeader parse_safetensors_header(const std::string& json_text, uint64_t file_size,
                                           const std::string& file) {
  SafetensorsHeader header;
  header.data_offset = 8 + json_text.size();
  if (header.data_offset > file_size) fail(file, "header runs past the end of the file");
  uint64_t data_size = file_size - header.data_offset;

  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text,
                                 [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
                                   if (depth > kMaxJsonDepth)
                                     fail(file, "header JSON nests too deep");
                                   return true;
                                 });
  } catch (const nlohmann::json::exception& e) {
    fail(file, std::string("header is not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail(file, "header is not a JSON object");

  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(file, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          fail(file, "__metadata__ value '" + m.key() + "' is not a string");
        header.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    header.entries.push_back(parse_entry(it.key(), it.value(), data_size, file));
  }

  std::sort(header.entries.begin(), header.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  for (size_t i = 1; i < header.entries.size(); ++i) {
    const auto& prev = header.entries[i - 1];
    const auto& cur = header.entries[i];
    if (cur.begin < prev.end)
      fail(file, "tensors '" + prev.name + "' and '" + cur.name + "' overlap");
  }
  return header;
}

SafetensorsHeader parse_safetensors_buffer(const unsigned char* data, size_t size,
                                           const std::string& file) {
  uint64_t n = safetensors_header_length(data, size, file);
  std::string json_text(reinterpret_cast<const char*>(data) + 8, static_cast<size_t>(n));
  return parse_safetensors_header(json_text, size, file);
}

}  // namespace runner::io
