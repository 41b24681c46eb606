#include "optimizers/common.hpp"

namespace runner::optim {

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
