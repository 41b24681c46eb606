#pragma once
// What the built-in metrics share: input checks and their registration functions.

#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::metrics {

/// Requires logits [N, C] with N >= 1 and labels [N] in [0, C); else throws runner::Error
/// naming `metric`.
void check_metric_inputs(const std::string& metric, const torch::Tensor& logits,
                         const torch::Tensor& labels);

void add_accuracy_metric(Registry<MetricFactory>& registry);
void add_top_k_metric(Registry<MetricFactory>& registry);
void add_macro_f1_metric(Registry<MetricFactory>& registry);
void add_loss_metric(Registry<MetricFactory>& registry);

}  // namespace runner::metrics
