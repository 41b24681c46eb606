#pragma once
// What the built-in optimizers share: the Adam family's schema properties and their
// registration functions (every optimizer's lr, weight_decay and weight_decay_exclude:
// runner/plugin_schemas.hpp).

#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/error.hpp"
#include "runner/optim/layer_decay.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::optim {

/// The parameter groups an optimizer's weight_decay, weight_decay_exclude and layer_decay ask
/// for (timm's param_groups_weight_decay / param_groups_layer_decay).
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> configured_groups(const nlohmann::json& params,
                                                                 torch::nn::Module& model,
                                                                 MakeOptions make_options) {
  const double weight_decay = params.at("weight_decay").get<double>();
  auto exclude = params.at("weight_decay_exclude").get<std::vector<std::string>>();
  const nlohmann::json& exempt = params.at("exempt_norm_and_bias");  // an earlier run's config
  if (exempt.is_boolean())
    exclude =
        exempt.get<bool>() ? std::vector<std::string>{"bias", "norm"} : std::vector<std::string>{};
  if (weight_decay == 0) exclude.clear();  // nothing decays: one group, as timm
  const nlohmann::json& layer_decay = params.at("layer_decay");
  if (layer_decay.is_null())
    return parameter_groups<Options>(model, weight_decay, exclude, make_options);
  const auto* grouping = dynamic_cast<const GroupsLayers*>(&model);
  if (grouping == nullptr)
    throw ConfigError(
        "optimizer.layer_decay: this backbone has no layer grouping runner knows (the native "
        "convnext_* and resnet* and every timm/<name> have timm's): remove layer_decay or pick "
        "one of those");
  return layer_decay_groups<Options>(model, weight_decay, exclude, layer_decay.get<double>(),
                                     *grouping, make_options);
}

/// The `betas` and `eps` properties of the Adam family.
nlohmann::json adam_properties();

void add_sgd_optimizer(Registry<OptimizerFactory>& registry);
void add_adam_optimizers(Registry<OptimizerFactory>& registry);

}  // namespace runner::optim
