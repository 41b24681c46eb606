#pragma once
// model.freeze: the part of a model that does not train (timm's freeze, Lightning's
// BackboneFinetuning). Its parameters take no gradient, so an optimizer keeps no state for
// them and they keep their bits; its normalisation layers stay in eval mode, so their running
// statistics stay as loaded. train.unfreeze_at_epoch thaws it.

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/models/model.hpp"

namespace runner::models {

/// The frozen part of a model.
struct FrozenPart {
  std::vector<torch::Tensor> parameters;  ///< frozen parameters
  /// Modules whose running statistics stay fixed while frozen (BatchNorm and the like).
  std::vector<std::shared_ptr<torch::nn::Module>> statistics_modules;
  int64_t elements = 0;  ///< parameter elements frozen
  bool frozen = false;   ///< whether the part is frozen now

  bool empty() const { return parameters.empty(); }
};

/// The part of `model` that `freeze` (model.freeze) names: "backbone" is every parameter outside
/// model.classifier(); a list holds parameter-name patterns (state_dict names, * for any
/// characters, as optimizer.weight_decay_exclude). A module with running statistics is in it
/// when its own parameters all are (one without parameters: when its running_mean's name is).
/// Not yet applied. Throws ConfigError (without a location) for a pattern that matches no
/// parameter, and when nothing would be left to train.
FrozenPart frozen_part(Model& model, const nlohmann::json& freeze);

/// Freezes (requires_grad false, gradients dropped) or thaws the part's parameters.
void set_frozen(FrozenPart& part, bool frozen);

/// Call after model.train(): the frozen part's statistics modules back in eval mode, so that
/// their running statistics stay fixed. Nothing once the part is thawed.
void keep_frozen_statistics(const FrozenPart& part);

}  // namespace runner::models
