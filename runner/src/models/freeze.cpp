#include "models/freeze.hpp"

#include <unordered_set>

#include "runner/error.hpp"
#include "runner/optim/optimizer.hpp"
#include "util/some_of.hpp"

namespace runner::models {

FrozenPart frozen_part(Model& model, const nlohmann::json& freeze) {
  FrozenPart part;
  if (freeze.is_null()) return part;
  const bool backbone = freeze.is_string();  // the schema allows "backbone" only
  const std::vector<std::string> patterns =
      backbone ? std::vector<std::string>{} : freeze.get<std::vector<std::string>>();
  const std::string head = model.classifier() + ".";
  const auto is_frozen = [&](const std::string& name) {
    if (backbone) return name.rfind(head, 0) != 0;
    for (const auto& pattern : patterns)
      if (optim::name_matches(name, pattern)) return true;
    return false;
  };

  std::vector<std::string> all_names;
  std::unordered_set<const void*> frozen;
  int64_t trainable = 0;
  for (const auto& item : model.named_parameters()) {
    all_names.push_back(item.key());
    if (!is_frozen(item.key())) {
      trainable += item.value().numel();
    } else if (frozen.insert(item.value().unsafeGetTensorImpl()).second) {
      part.parameters.push_back(item.value());
      part.elements += item.value().numel();
    }
  }
  for (const auto& pattern : patterns) {
    bool matched = false;
    for (const auto& name : all_names) matched = matched || optim::name_matches(name, pattern);
    if (!matched)
      throw ConfigError("'" + pattern + "' matches no parameter of " + model.name() +
                        " (parameters are named as in its state_dict: " +
                        util::some_of(all_names, 3) + "; * stands for any characters)");
  }
  if (trainable == 0)
    throw ConfigError(
        "it freezes every parameter, nothing is left to train (\"backbone\" keeps "
        "the classifier " +
        model.classifier() + " trainable)");

  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const auto& module = item.value();
    if (!module->named_buffers(/*recurse=*/false).contains("running_mean")) continue;
    const auto params = module->parameters(/*recurse=*/false);
    bool all_frozen = !params.empty();
    for (const auto& p : params) all_frozen = all_frozen && frozen.count(p.unsafeGetTensorImpl());
    if (params.empty()) all_frozen = is_frozen(item.key() + ".running_mean");
    if (all_frozen) part.statistics_modules.push_back(module);
  }
  return part;
}

void set_frozen(FrozenPart& part, bool frozen) {
  for (auto& p : part.parameters) {
    p.set_requires_grad(!frozen);
    if (frozen) p.mutable_grad() = torch::Tensor();
  }
  part.frozen = frozen && !part.empty();
}

void keep_frozen_statistics(const FrozenPart& part) {
  if (!part.frozen) return;
  for (const auto& module : part.statistics_modules) module->eval();
}

}  // namespace runner::models
