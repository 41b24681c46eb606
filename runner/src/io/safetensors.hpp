#pragma once
// Reading and writing safetensors files (the format timm and Hugging Face publish weights in).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace runner::io {

/// Named tensors in file order, plus the header's `__metadata__` strings.
struct TensorFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or an undefined tensor.
  torch::Tensor find(const std::string& name) const;
};

/// Reads every tensor of `path` onto the CPU (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL).
/// A missing, truncated or malformed file throws DataError naming it; nothing is read out of
/// the file's bounds.
TensorFile read_safetensors(const std::string& path);

/// Writes `tensors` (any device, any layout; order kept) to `path` through a temporary file
/// renamed into place, so a crash never leaves a half-written file. Throws Error on I/O
/// failure or a dtype safetensors cannot hold.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace runner::io
