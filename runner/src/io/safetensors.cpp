#include "io/safetensors.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "io/safetensors_header.hpp"
#include "runner/error.hpp"

namespace runner::io {
namespace {

// The format is little-endian; so is every machine we build for.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes little endian");

torch::ScalarType scalar_type_of(const std::string& dtype) {
  static const std::map<std::string, torch::ScalarType> types = {
      {"F64", torch::kFloat64},   {"F32", torch::kFloat32}, {"F16", torch::kFloat16},
      {"BF16", torch::kBFloat16}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
      {"I16", torch::kInt16},     {"I8", torch::kInt8},     {"U8", torch::kUInt8},
      {"BOOL", torch::kBool}};
  return types.at(dtype);  // the header parser admits only these names
}

std::string dtype_name(torch::ScalarType type, const std::string& tensor_name) {
  switch (type) {
    case torch::kFloat64:
      return "F64";
    case torch::kFloat32:
      return "F32";
    case torch::kFloat16:
      return "F16";
    case torch::kBFloat16:
      return "BF16";
    case torch::kInt64:
      return "I64";
    case torch::kInt32:
      return "I32";
    case torch::kInt16:
      return "I16";
    case torch::kInt8:
      return "I8";
    case torch::kUInt8:
      return "U8";
    case torch::kBool:
      return "BOOL";
    default:
      throw Error("cannot write tensor '" + tensor_name + "' of dtype " +
                  std::string(c10::toString(type)) + " to safetensors: convert it first");
  }
}

}  // namespace

torch::Tensor TensorFile::find(const std::string& name) const {
  for (const auto& kv : tensors)
    if (kv.first == name) return kv.second;
  return {};
}

TensorFile read_safetensors(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw DataError("safetensors file '" + path + "' does not exist or is not a regular file");
  uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw DataError("cannot read the size of '" + path + "': " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot open safetensors file '" + path + "'");

  unsigned char first8[8] = {0};
  in.read(reinterpret_cast<char*>(first8), std::min<uint64_t>(8, file_size));
  uint64_t n = safetensors_header_length(first8, file_size, path);
  std::string json_text(static_cast<size_t>(n), '\0');
  if (!in.read(json_text.data(), static_cast<std::streamsize>(n)))
    throw DataError("cannot read the header of '" + path + "' (file changed while reading?)");
  SafetensorsHeader header = parse_safetensors_header(json_text, file_size, path);

  TensorFile out;
  out.metadata = header.metadata;
  for (const auto& e : header.entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(scalar_type_of(e.dtype)));
    in.seekg(static_cast<std::streamoff>(header.data_offset + e.begin));
    if (!in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin)))
      throw DataError("cannot read tensor '" + e.name + "' from '" + path +
                      "' (file changed while reading?)");
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__" || header.contains(name))
      throw Error("cannot write tensor name '" + name + "' twice (or a reserved name) to '" + path +
                  "'");
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    uint64_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dtype_name(t.scalar_type(), name)},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create '" + tmp + "': check the folder exists and is writable");
    unsigned char len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : data)
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.numel() * t.element_size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("writing '" + tmp + "' failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  }
}

}  // namespace runner::io
