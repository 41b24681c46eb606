#include "optimizers/common.hpp"

namespace runner::optim {

nlohmann::json param_groups_property() {
  const nlohmann::json entry = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"match"}},
      {"properties",
       {{"match",
         {{"type", "array"},
          {"minItems", 1},
          {"items", {{"type", "string"}, {"minLength", 1}}},
          {"description",
           "Parameter-name patterns (state_dict names, * for any characters), e.g. "
           "['stem.*', 'stages.0.*']."}}},
        {"lr",
         {{"type", "number"},
          {"exclusiveMinimum", 0},
          {"description", "Their lr instead of optimizer.lr (scheduled alike)."}}},
        {"lr_scale",
         {{"type", "number"},
          {"minimum", 0},
          {"description", "Their lr as optimizer.lr times this (0 keeps them still)."}}},
        {"weight_decay",
         {{"type", "number"},
          {"minimum", 0},
          {"description", "Their weight decay (what weight_decay_exclude names keeps 0)."}}}}}};
  return {{"param_groups",
           {{"type", "array"},
            {"items", entry},
            {"default", nlohmann::json::array()},
            {"description",
             "Settings for the parameters name patterns pick, on top of weight_decay_exclude "
             "and layer_decay (whose scale applies within them): [{match: [patterns], lr or "
             "lr_scale, weight_decay}]. Each parameter may match one entry at most; "
             "`runner run --dry-run` lists the groups. []: none."}}}};
}

std::vector<ParamGroupSetting> read_param_groups(const nlohmann::json& entries) {
  std::vector<ParamGroupSetting> settings;
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& entry = entries.at(i);
    ParamGroupSetting s;
    s.match = entry.at("match").get<std::vector<std::string>>();
    if (entry.contains("lr")) s.lr = entry.at("lr").get<double>();
    if (entry.contains("lr_scale")) s.lr_scale = entry.at("lr_scale").get<double>();
    if (entry.contains("weight_decay")) s.weight_decay = entry.at("weight_decay").get<double>();
    if (s.lr && s.lr_scale)
      throw ConfigError("optimizer.param_groups." + std::to_string(i) +
                        ".lr_scale: lr and lr_scale both set: give the group one of them");
    settings.push_back(s);
  }
  return settings;
}

std::vector<int> param_group_of(const std::vector<std::string>& names,
                                const std::vector<ParamGroupSetting>& settings) {
  std::vector<int> entry(names.size(), -1);
  for (size_t e = 0; e < settings.size(); ++e) {
    bool matched = false;
    for (size_t n = 0; n < names.size(); ++n) {
      bool hit = false;
      for (const auto& pattern : settings[e].match) hit = hit || name_matches(names[n], pattern);
      if (!hit) continue;
      matched = true;
      if (entry[n] >= 0)
        throw ConfigError("optimizer.param_groups." + std::to_string(e) + ".match: " + names[n] +
                          " is matched by param_groups." + std::to_string(entry[n]) +
                          " too: a parameter belongs to one group; narrow one of the patterns");
      entry[n] = static_cast<int>(e);
    }
    if (!matched)
      throw ConfigError(
          "optimizer.param_groups." + std::to_string(e) +
          ".match: matches no trainable parameter (parameters are named as in the "
          "model's state_dict, e.g. " +
          (names.empty() ? std::string("none") : names.front() + ", " + names.back()) +
          "; * stands for any characters)");
  }
  return entry;
}

std::vector<std::string> weight_decay_exclusions(const nlohmann::json& params) {
  const nlohmann::json& exempt = params.at("exempt_norm_and_bias");  // an earlier run's config
  if (exempt.is_boolean())
    return exempt.get<bool>() ? std::vector<std::string>{"bias", "norm"}
                              : std::vector<std::string>{};
  return params.at("weight_decay_exclude").get<std::vector<std::string>>();
}

nlohmann::json adam_properties() {
  return {
      {"betas",
       {{"type", "array"},
        {"items", {{"type", "number"}, {"minimum", 0}, {"exclusiveMaximum", 1}}},
        {"minItems", 2},
        {"maxItems", 2},
        {"default", {0.9, 0.999}},
        {"description", "Decay rates (beta1, beta2) of the first and second moment averages."}}},
      {"eps",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", 1e-8},
        {"description", "Added to the denominator sqrt(v) + eps."}}},
      {"amsgrad",
       {{"type", "boolean"},
        {"default", false},
        {"description", "Use the running maximum of v (AMSGrad)."}}}};
}

}  // namespace runner::optim
