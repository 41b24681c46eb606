#pragma once
// timm-compatible weights: state_dict order, load_pretrained, and safetensors export/import.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "runner/models/model.hpp"

namespace runner::models {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// The module's parameters and buffers in PyTorch's state_dict order (each module, depth
/// first: its own parameters, then its own buffers, then its children). Tensors are shared.
NamedTensors state_dict(const torch::nn::Module& module);

/// timm's adapt_input_conv: a [O, 3, k, k] kernel for `in_chans` inputs. 1: the RGB kernels
/// summed; otherwise tiled and scaled by 3 / in_chans. Computed in float32, returned in w's dtype.
torch::Tensor adapt_input_conv(int64_t in_chans, const torch::Tensor& w);

/// What load_pretrained did, for the one line a run logs.
struct PretrainedLoad {
  std::string file;             ///< the .safetensors file read
  int64_t tensors_loaded = 0;   ///< tensors copied into the model
  int64_t first_conv_from = 0;  ///< input channels of the file's first conv when adapted, else 0
  int64_t classifier_from = 0;  ///< the file's class count when its classifier was dropped, else 0
  /// "loaded 344 tensors from F; first conv adapted from 3 to 1 channel(s); classifier left at
  /// its fresh init (1000 -> 10 classes)"
  std::string describe(int64_t in_chans, int64_t num_classes) const;
};

/// Loads a timm checkpoint (`path`: a .safetensors file or a folder holding model.safetensors)
/// as timm's load_pretrained does: the first conv adapted to `in_chans`, the classifier left at
/// its fresh init when the checkpoint's class count differs from `num_classes`, every other key
/// matched by name and shape (`num_batches_tracked` may be absent). Throws DataError naming the
/// file and listing missing, unexpected and mis-shaped keys.
PretrainedLoad load_pretrained(Model& model, const std::string& path, int64_t in_chans,
                               int64_t num_classes);

/// load_pretrained on weights already read (`source` by state_dict name; `file` names them in
/// errors and in the report): a runner checkpoint's model, for one.
PretrainedLoad load_pretrained(Model& model, std::map<std::string, torch::Tensor> source,
                               const std::string& file, int64_t in_chans, int64_t num_classes);

/// Writes state_dict(module) with timm's names to `path` (temp file + rename).
void save_model_safetensors(const torch::nn::Module& module, const std::string& path,
                            const std::map<std::string, std::string>& metadata = {});

/// Loads a safetensors file written by save_model_safetensors (or timm) into `module`: every
/// key must match by name and shape (`num_batches_tracked` may be absent); else DataError.
void load_state_dict_safetensors(torch::nn::Module& module, const std::string& path);

}  // namespace runner::models
