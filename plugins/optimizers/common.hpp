#pragma once
// What the built-in optimizers share: the schema properties every one of them has (lr,
// weight_decay, exempt_norm_and_bias) and their registration functions.

#include <nlohmann/json.hpp>

#include "runner/registries.hpp"

namespace runner::optim {

/// An optimizer schema: lr (default `default_lr`), weight_decay (default `default_weight_decay`),
/// exempt_norm_and_bias, plus `properties`, closed to unknown keys.
nlohmann::json optimizer_schema(double default_lr, double default_weight_decay,
                                const nlohmann::json& properties);

/// The `betas` and `eps` properties of the Adam family.
nlohmann::json adam_properties();

void add_sgd_optimizer(Registry<OptimizerFactory>& registry);
void add_adam_optimizers(Registry<OptimizerFactory>& registry);

}  // namespace runner::optim
