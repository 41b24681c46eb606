#include "optimizers/common.hpp"

namespace runner::optim {

nlohmann::json optimizer_schema(double default_lr, double default_weight_decay,
                                const nlohmann::json& properties) {
  nlohmann::json all = {
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
      {"exempt_norm_and_bias",
       {{"type", "boolean"},
        {"default", false},
        {"description",
         "true: biases and normalisation weights (every parameter with at most one dimension) "
         "get weight decay 0, as timm's create_optimizer does by default; false: every "
         "parameter decays, as torch.optim does."}}}};
  for (auto it = properties.begin(); it != properties.end(); ++it) all[it.key()] = it.value();
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", all}};
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
