#pragma once
// What the built-in optimizers share: the Adam family's schema properties and their
// registration functions (every optimizer's lr, weight_decay and exempt_norm_and_bias:
// runner/plugin_schemas.hpp).

#include <nlohmann/json.hpp>

#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::optim {

/// The `betas` and `eps` properties of the Adam family.
nlohmann::json adam_properties();

void add_sgd_optimizer(Registry<OptimizerFactory>& registry);
void add_adam_optimizers(Registry<OptimizerFactory>& registry);

}  // namespace runner::optim
