#pragma once
// What a model plugin provides: a torch module with timm's structure and state_dict names.

#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

namespace runner::models {

/// Options every backbone takes (the `model:` section of an experiment).
struct ModelOptions {
  std::string backbone;
  int64_t in_chans = 3;
  int64_t num_classes = 1000;
  double drop_path_rate = 0.0;
};

/// A classification backbone. forward(x) = forward_head(forward_features(x)).
class Model : public torch::nn::Module {
 public:
  /// Logits [N, num_classes] for images [N, in_chans, H, W].
  virtual torch::Tensor forward(torch::Tensor x) {
    return forward_head(forward_features(x), false);
  }
  /// The last feature map, as timm's forward_features.
  virtual torch::Tensor forward_features(torch::Tensor x) = 0;
  /// Pooling (+ norm) and, unless pre_logits, the classifier, as timm's forward_head.
  virtual torch::Tensor forward_head(torch::Tensor x, bool pre_logits) = 0;
  /// State-dict prefix of the first conv, adapted to in_chans when loading (timm's first_conv).
  virtual std::string first_conv() const = 0;
  /// State-dict prefix of the classifier, re-initialised when num_classes differs.
  virtual std::string classifier() const = 0;
};

/// The parameter schema every backbone shares (in_chans, num_classes, pretrained,
/// drop_path_rate), extended with a plugin's own `properties`.
nlohmann::json model_params_schema(
    const nlohmann::json& extra_properties = nlohmann::json::object());

/// Reads the shared options from a validated `model:` section (defaults applied).
ModelOptions model_options_from(const nlohmann::json& params);

}  // namespace runner::models
