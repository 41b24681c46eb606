#pragma once
// What the built-in optimizers share: the Adam family's schema properties and their
// registration functions (every optimizer's lr, weight_decay and weight_decay_exclude:
// runner/plugin_schemas.hpp).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/error.hpp"
#include "runner/optim/layer_decay.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::optim {

/// optimizer.param_groups' schema (the built-in optimizers'): per-group lr and weight decay for
/// the parameters name patterns pick, on top of weight_decay_exclude and layer_decay.
nlohmann::json param_groups_property();

/// One optimizer.param_groups entry, read.
struct ParamGroupSetting {
  std::vector<std::string> match;
  std::optional<double> lr, lr_scale, weight_decay;
};

/// The entries of optimizer.param_groups; throws ConfigError (optimizer.param_groups.N: ...)
/// for one that gives both lr and lr_scale.
std::vector<ParamGroupSetting> read_param_groups(const nlohmann::json& entries);

/// Which entry takes each of `names` (-1: none). Throws ConfigError naming the entry for a
/// pattern list that matches no name, and for a name two entries match.
std::vector<int> param_group_of(const std::vector<std::string>& names,
                                const std::vector<ParamGroupSetting>& settings);

/// weight_decay_exclude as the groups apply it (an earlier run's exempt_norm_and_bias wins).
std::vector<std::string> weight_decay_exclusions(const nlohmann::json& params);

/// The groups of weight_decay, weight_decay_exclude and layer_decay.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> base_groups(const nlohmann::json& params,
                                                           torch::nn::Module& model,
                                                           MakeOptions make_options) {
  const double weight_decay = params.at("weight_decay").get<double>();
  auto exclude = weight_decay_exclusions(params);
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

/// `groups` split by optimizer.param_groups: in each group, the parameters an entry matches
/// form groups of their own after the rest, with the entry's lr (scaled as layer_decay scaled
/// the group: lr * group lr / `base_lr`) or the group's lr times lr_scale, and the entry's
/// weight decay except for what `exclude` (weight_decay_exclude) names, which keeps 0.
/// `make_options(weight_decay)` builds a group's options.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> with_param_groups(
    std::vector<torch::optim::OptimizerParamGroup> groups, torch::nn::Module& model,
    const std::vector<ParamGroupSetting>& settings, const std::vector<std::string>& exclude,
    double base_lr, MakeOptions make_options) {
  if (settings.empty()) return groups;
  std::map<const void*, std::string> name_of;
  for (const auto& item : model.named_parameters())
    name_of.emplace(item.value().unsafeGetTensorImpl(), item.key());
  std::vector<std::string> names;
  for (auto& group : groups)
    for (const auto& p : group.params()) names.push_back(name_of.at(p.unsafeGetTensorImpl()));
  const std::vector<int> entry = param_group_of(names, settings);
  std::vector<torch::optim::OptimizerParamGroup> out;
  size_t at = 0;
  for (auto& group : groups) {
    const auto& options = static_cast<const Options&>(group.options());
    // (entry, excluded from decay) -> parameters; entry -1 keeps the group's own options.
    std::map<std::pair<int, bool>, std::vector<torch::Tensor>> members;
    for (const auto& p : group.params()) {
      const int e = entry[at];
      const bool excluded = e >= 0 && excluded_from_decay(names[at], p.dim(), exclude);
      members[{e, excluded}].push_back(p);
      ++at;
    }
    for (auto& [key, params] : members) {
      const auto [e, excluded] = key;
      if (e < 0) {
        out.emplace_back(params, std::make_unique<Options>(options));
        continue;
      }
      const ParamGroupSetting& s = settings[e];
      const double decay = excluded ? 0.0 : s.weight_decay.value_or(options.weight_decay());
      auto made = std::make_unique<Options>(make_options(decay));
      made->set_lr(s.lr ? *s.lr * options.get_lr() / base_lr
                        : options.get_lr() * s.lr_scale.value_or(1.0));
      out.emplace_back(params, std::move(made));
    }
  }
  return out;
}

/// The parameter groups an optimizer's weight_decay, weight_decay_exclude, layer_decay and
/// param_groups ask for (timm's param_groups_weight_decay / param_groups_layer_decay).
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> configured_groups(const nlohmann::json& params,
                                                                 torch::nn::Module& model,
                                                                 MakeOptions make_options) {
  const auto settings = read_param_groups(params.at("param_groups"));
  return with_param_groups<Options>(base_groups<Options>(params, model, make_options), model,
                                    settings, weight_decay_exclusions(params),
                                    params.at("lr").get<double>(), make_options);
}

/// The `betas` and `eps` properties of the Adam family.
nlohmann::json adam_properties();

void add_sgd_optimizer(Registry<OptimizerFactory>& registry);
void add_adam_optimizers(Registry<OptimizerFactory>& registry);

}  // namespace runner::optim
