#pragma once
// timm's layer-wise lr decay (optimizer.layer_decay, timm's param_groups_layer_decay): every
// parameter's layer from the backbone's layer grouping (timm's group_matcher(coarse=False) and
// group_parameters), each layer's lr scaled by layer_decay^(last layer - layer). A backbone that
// has such a grouping says so by deriving from GroupsLayers beside runner::models::Model.

#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/optim/optimizer.hpp"

namespace runner::optim {

/// One entry of timm's group_matcher: names matching `pattern` at their start get the key
/// prefix + the pattern's numeric captures + suffix; keys sort into layers, and a key ending in
/// kSameLayerAsBefore joins the layer before it (timm's MATCH_PREV_GROUP).
struct LayerMatcher {
  std::string pattern;
  std::vector<double> prefix;
  std::vector<double> suffix;
};

inline constexpr double kSameLayerAsBefore = 99999;

/// Implemented beside Model by a backbone with timm's layer grouping: the native ones from their
/// group_matcher (layer_ids below), a timm/<name> one from what timm computed at its import.
/// (A second base class, not a virtual of Model: plugins built for ABI 2 keep working.)
class GroupsLayers {
 public:
  virtual ~GroupsLayers() = default;
  /// The layer of each of `names` (0 = the stem, the head last), as timm's
  /// param_groups_layer_decay finds them; a name left out joins the last layer (timm's
  /// layer_map.get(name, layer_max)). Throws ConfigError when the model cannot say.
  virtual std::map<std::string, int64_t> layers_of(const std::vector<std::string>& names) const = 0;
};

/// timm's group_parameters(..., reverse=True): each name's layer (0 = the stem); names no
/// matcher takes (the head) form the last layer.
inline std::map<std::string, int64_t> layer_ids(const std::vector<std::string>& names,
                                                const std::vector<LayerMatcher>& matchers) {
  std::vector<std::regex> compiled;
  for (const auto& m : matchers) compiled.emplace_back(m.pattern);
  std::map<std::vector<double>, std::vector<std::string>> grouping;
  for (const auto& name : names) {
    std::vector<double> key{std::numeric_limits<double>::infinity()};
    for (size_t i = 0; i < matchers.size(); ++i) {
      std::smatch match;  // Python's re.match: anchored at the start only
      if (!std::regex_search(name, match, compiled[i], std::regex_constants::match_continuous))
        continue;
      key = matchers[i].prefix;
      for (size_t g = 1; g < match.size(); ++g)
        if (match[g].matched) key.push_back(std::stod(match[g].str()));
      key.insert(key.end(), matchers[i].suffix.begin(), matchers[i].suffix.end());
      break;
    }
    grouping[key].push_back(name);
  }
  std::map<std::string, int64_t> ids;
  int64_t layer = -1;
  for (const auto& [key, members] : grouping) {  // sorted as Python sorts the tuples
    if (layer < 0 || key.back() != kSameLayerAsBefore) ++layer;
    for (const auto& name : members) ids[name] = layer;
  }
  return ids;
}

/// The parameter groups of timm's param_groups_layer_decay: one per (layer, decays or not),
/// each with lr * layer_decay^(last - layer) and weight decay 0 for what `exclude` names
/// (weight_decay_exclude), the layers as `grouping` gives them. The last layer's groups come
/// first, so that the first group's lr is the schedule's base lr. `make_options(weight_decay)`
/// builds each group's options.
template <class Options, class MakeOptions>
std::vector<torch::optim::OptimizerParamGroup> layer_decay_groups(
    torch::nn::Module& model, double weight_decay, const std::vector<std::string>& exclude,
    double layer_decay, const GroupsLayers& grouping, MakeOptions make_options) {
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
  std::set<const void*> seen;
  for (auto& item : model.named_parameters()) {
    if (!item.value().requires_grad() || !seen.insert(item.value().unsafeGetTensorImpl()).second)
      continue;
    names.push_back(item.key());
    params.push_back(item.value());
  }
  auto ids = grouping.layers_of(names);
  int64_t last = 0;
  for (const auto& [name, id] : ids) last = std::max(last, id);
  for (const auto& name : names) ids.emplace(name, last);
  // (layer, excluded) -> parameters; the last layer first, decaying before excluded.
  std::map<std::pair<int64_t, bool>, std::vector<torch::Tensor>> by_group;
  for (size_t i = 0; i < names.size(); ++i)
    by_group[{-ids.at(names[i]), excluded_from_decay(names[i], params[i].dim(), exclude)}]
        .push_back(params[i]);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (auto& [key, members] : by_group) {
    const int64_t layer = -key.first;
    auto options = std::make_unique<Options>(make_options(key.second ? 0.0 : weight_decay));
    options->set_lr(options->get_lr() * std::pow(layer_decay, static_cast<double>(last - layer)));
    groups.emplace_back(members, std::move(options));
  }
  return groups;
}

}  // namespace runner::optim
