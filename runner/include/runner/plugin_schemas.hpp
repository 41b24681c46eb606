#pragma once
// Parameter schemas that the plugins of one kind share, for built-in and out-of-tree plugins
// alike: a closed object (a misspelled key is an error, never ignored), a transform's `p`, an
// optimizer's lr / weight_decay / weight_decay_exclude, a scheduler's warmup (implemented by
// runner/optim/warmup_scheduler.hpp) and a metric's. Torch-free, header-only.

#include <string>

#include <nlohmann/json.hpp>

namespace runner::schemas {

/// An object of `properties` that refuses other keys, with a `description` when given.
inline nlohmann::json closed_object(const nlohmann::json& properties,
                                    const std::string& description = "") {
  nlohmann::json schema = {
      {"type", "object"}, {"additionalProperties", false}, {"properties", properties}};
  if (!description.empty()) schema["description"] = description;
  return schema;
}

/// `properties` with `extra`'s added (an entry of `extra` replaces one of the same name).
inline nlohmann::json merged(nlohmann::json properties, const nlohmann::json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) properties[it.key()] = it.value();
  return properties;
}

/// A transform's `p`: the probability that it applies to a sample. The transform draws its coin
/// for every sample (apply when U(0,1) < p), also when p is 0 or 1, so that the random stream of
/// the transforms after it never depends on p.
inline nlohmann::json transform_p(double default_p) {
  return {{"type", "number"},
          {"minimum", 0},
          {"maximum", 1},
          {"default", default_p},
          {"description",
           "Probability of applying the transform (one coin per sample: apply when U(0,1) < p; "
           "the coin is drawn even when p is 0 or 1)."}};
}

/// An optimizer's schema: lr (the schedule's base lr), weight_decay and weight_decay_exclude
/// (runner::optim::parameter_groups honours it; `default_exclude`: e.g. ["bias", "norm"] for
/// timm's param_groups_weight_decay, [] for torch.optim's every parameter decays), with
/// `properties` added; closed.
inline nlohmann::json optimizer(double default_lr, double default_weight_decay,
                                const nlohmann::json& properties = nlohmann::json::object(),
                                const nlohmann::json& default_exclude = nlohmann::json::array()) {
  const nlohmann::json shared = {
      {"lr",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", default_lr},
        {"description",
         "Learning rate; the scheduler's base lr (every parameter group gets the scheduled "
         "lr)."}}},
      {"weight_decay",
       {{"type", "number"},
        {"minimum", 0},
        {"default", default_weight_decay},
        {"description", "Weight decay (see the optimizer's help for coupled or decoupled)."}}},
      {"weight_decay_exclude",
       {{"type", "array"},
        {"items", {{"type", "string"}, {"minLength", 1}}},
        {"default", default_exclude},
        {"description",
         "Parameters that get weight decay 0. bias: every parameter named *bias; norm: every "
         "parameter of at most one dimension (normalisation weights and biases, layer scale), "
         "so [bias, norm] is timm's param_groups_weight_decay (its create_optimizer's default); "
         "any other entry is a state_dict name or a pattern with * (e.g. pos_embed, "
         "*.cls_token: timm's no_weight_decay()). []: every parameter decays, as torch.optim."}}},
      {"exempt_norm_and_bias",
       {{"type", {"boolean", "null"}},
        {"default", nullptr},
        {"description",
         "Before weight_decay_exclude (run folders of earlier runners hold it): true is "
         "weight_decay_exclude [bias, norm], false is []; when set it wins, so such a run "
         "resumes with the groups its checkpoint has. null: weight_decay_exclude decides."}}},
      {"layer_decay",
       {{"type", {"number", "null"}},
        {"exclusiveMinimum", 0},
        {"maximum", 1},
        {"default", nullptr},
        {"description",
         "timm's layer-wise lr decay (--layer-decay): each layer's lr is lr * layer_decay^(last "
         "layer - its layer), the layers as timm's param_groups_layer_decay finds them (native "
         "convnext_* and resnet*: their group_matcher, stem, each block, head; timm/<name>: "
         "timm's own, recorded at the import); weight_decay_exclude applies within each layer. "
         "null: one lr for all."}}}};
  return closed_object(merged(shared, properties));
}

/// A scheduler's schema: warmup_steps and warmup_start_factor (runner::optim::WarmupScheduler
/// implements them), with `properties` added; closed.
inline nlohmann::json scheduler(const nlohmann::json& properties = nlohmann::json::object()) {
  const nlohmann::json warmup = {
      {"warmup_steps",
       {{"type", "integer"},
        {"minimum", 0},
        {"default", 0},
        {"description",
         "Optimizer steps of linear warmup before the schedule: at step k < warmup_steps, "
         "lr = lr0 * (warmup_start_factor + (1 - warmup_start_factor) * k / warmup_steps), "
         "lr0 being the schedule's first lr; the schedule then runs over the remaining steps."}}},
      {"warmup_start_factor",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", 1},
        {"default", 0.0},
        {"description", "Warmup's first lr as a fraction of lr0 (torch LinearLR start_factor)."}}}};
  return closed_object(merged(warmup, properties));
}

/// A metric's schema: its `properties`, closed (a metric has no parameter every metric shares).
inline nlohmann::json metric(const nlohmann::json& properties = nlohmann::json::object()) {
  return closed_object(properties);
}

}  // namespace runner::schemas
