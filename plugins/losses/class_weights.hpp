#pragma once
// One weight per class from a loss's parameters (cross_entropy's weight, bce's pos_weight):
// checked against the logits' classes, kept as a float32 tensor on the logits' device.

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "runner/error.hpp"

namespace runner::losses {

class ClassWeights {
 public:
  /// `values` as the config gave them (empty: none); `key` ("loss.weight") and `noun` ("class
  /// weights") name them in the error.
  ClassWeights(std::vector<double> values, std::string key, std::string noun)
      : values_(std::move(values)), key_(std::move(key)), noun_(std::move(noun)) {}

  bool empty() const { return values_.empty(); }

  /// The weights on `logits`' device (made once per device). Throws ConfigError when their
  /// count is not the logits' class count.
  const torch::Tensor& for_logits(const torch::Tensor& logits) {
    if (static_cast<int64_t>(values_.size()) != logits.size(1))
      throw ConfigError(key_ + ": " + std::to_string(values_.size()) + " " + noun_ +
                        " for a model with " + std::to_string(logits.size(1)) +
                        " classes: give one per class");
    if (!tensor_.defined() || tensor_.device() != logits.device())
      tensor_ = torch::tensor(values_, torch::kFloat).to(logits.device());
    return tensor_;
  }

 private:
  std::vector<double> values_;
  std::string key_, noun_;
  torch::Tensor tensor_;
};

}  // namespace runner::losses
