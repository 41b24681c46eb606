#include "run/build_parts.hpp"

#include <filesystem>

#include "config/experiment_options.hpp"
#include "runner/error.hpp"
#include "runner/models/pretrained.hpp"
#include "runner/registries.hpp"

namespace runner::run {
namespace fs = std::filesystem;
using nlohmann::json;

json plugin_params(const json& section, const std::string& selector) {
  json params = section;
  params.erase(selector);
  return params;
}

data::DatasetSplits build_datasets(const config::Experiment& e) {
  const json& dataset = e.doc.at("data").at("dataset");  // the dataset plugin's section
  const config::ExperimentOptions experiment = config::read_experiment_options(e.doc);
  data::DatasetContext context;
  context.seed = experiment.seed;
  context.config_dir = e.dir;
  context.limit_train = experiment.data.limit_train;
  context.limit_val = experiment.data.limit_val;
  context.limit_test = experiment.data.limit_test;
  const auto& entry = registries().datasets.at(dataset.at("name").get<std::string>());
  data::DatasetSplits splits = entry.factory(plugin_params(dataset), context);
  if (context.limit_train) splits.train = data::limit_dataset(splits.train, *context.limit_train);
  if (context.limit_val) splits.val = data::limit_dataset(splits.val, *context.limit_val);
  if (context.limit_test) splits.test = data::limit_dataset(splits.test, *context.limit_test);
  return splits;
}

std::shared_ptr<models::Model> build_model(const json& section, const std::string& config_dir) {
  (void)config_dir;
  const auto& entry = registries().models.at(section.at("backbone").get<std::string>());
  json params = section;
  auto model = entry.factory(params);
  if (!model)
    throw Error("model plugin '" + section.at("backbone").get<std::string>() + "' built nothing");
  return model;
}

std::unique_ptr<optim::Optimizer> build_optimizer(const json& section, torch::nn::Module& model) {
  const auto& entry = registries().optimizers.at(section.at("name").get<std::string>());
  auto optimizer = entry.factory(plugin_params(section), model);
  if (!optimizer)
    throw Error("optimizer plugin '" + section.at("name").get<std::string>() + "' built nothing");
  return optimizer;
}

std::unique_ptr<optim::Scheduler> build_scheduler(const json& section,
                                                  const optim::ScheduleContext& context) {
  const auto& entry = registries().schedulers.at(section.at("name").get<std::string>());
  return entry.factory(plugin_params(section), context);
}

std::shared_ptr<losses::Loss> build_loss(const json& section) {
  const auto& entry = registries().losses.at(section.at("name").get<std::string>());
  return entry.factory(plugin_params(section));
}

std::vector<std::shared_ptr<metrics::Metric>> build_metrics(const json& list) {
  std::vector<std::shared_ptr<metrics::Metric>> out;
  for (const auto& item : list) {
    const auto& entry = registries().metrics.at(item.at("name").get<std::string>());
    out.push_back(entry.factory(plugin_params(item)));
  }
  return out;
}

std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& model) {
  int64_t all = 0, trainable = 0;
  for (const auto& p : model.parameters()) {
    all += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  return {all, trainable};
}

}  // namespace runner::run
