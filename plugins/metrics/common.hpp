#pragma once
// What the built-in metrics share: input checks and their registration functions.

#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::metrics {

/// Requires logits [N, C] with N >= 1 and labels [N] in [0, C); else throws runner::Error
/// naming `metric`.
void check_metric_inputs(const std::string& metric, const torch::Tensor& logits,
                         const torch::Tensor& labels);

/// Requires logits [N, C] with N >= 1 and float multi-hot targets [N, C] (task: multilabel);
/// else throws runner::Error naming `metric`.
void check_multilabel_inputs(const std::string& metric, const torch::Tensor& logits,
                             const torch::Tensor& targets);
/// bool [N, C]: where sigmoid(logits) >= threshold.
torch::Tensor multilabel_predictions(const torch::Tensor& logits, double threshold);
/// The `threshold` parameter of the multi-label F1 metrics, as schema properties.
nlohmann::json threshold_property();

void add_accuracy_metric(Registry<MetricFactory>& registry);
void add_multilabel_metrics(Registry<MetricFactory>& registry);
void add_top_k_metric(Registry<MetricFactory>& registry);
void add_macro_f1_metric(Registry<MetricFactory>& registry);
void add_loss_metric(Registry<MetricFactory>& registry);

}  // namespace runner::metrics
