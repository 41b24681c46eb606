#pragma once
// Turning the validated sections of an experiment into objects, through the registries.

#include <memory>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "config/experiment.hpp"
#include "runner/data/dataset.hpp"
#include "runner/data/transform.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/optim/scheduler.hpp"

namespace runner::run {

/// The section's parameters: the section without its selecting key.
nlohmann::json plugin_params(const nlohmann::json& section, const std::string& selector = "name");

/// The dataset's splits with `data.limit` applied. Requires a validated experiment.
data::DatasetSplits build_datasets(const config::Experiment& e);

/// The model of a validated `model:` section, with `pretrained` weights loaded when it names a
/// file (relative to `config_dir`).
std::shared_ptr<models::Model> build_model(const nlohmann::json& section,
                                           const std::string& config_dir);

std::unique_ptr<optim::Optimizer> build_optimizer(const nlohmann::json& section,
                                                  torch::nn::Module& model);
std::unique_ptr<optim::Scheduler> build_scheduler(const nlohmann::json& section,
                                                  const optim::ScheduleContext& context);
std::shared_ptr<losses::Loss> build_loss(const nlohmann::json& section);
std::vector<std::shared_ptr<metrics::Metric>> build_metrics(const nlohmann::json& list);

/// Number of elements of the model's parameters (all, and trainable only).
std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& model);

}  // namespace runner::run
