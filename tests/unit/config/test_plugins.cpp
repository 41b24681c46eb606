#include "test_plugins.hpp"

#include <torch/torch.h>

#include "runner/data/dataset.hpp"
#include "runner/data/transform.hpp"
#include "runner/losses/loss.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/optim/scheduler.hpp"

namespace runner::testing {

void register_config_test_plugins() {
  static bool done = false;
  if (done) return;
  done = true;
  Registries& r = registries();
  using nlohmann::json;
  r.datasets.add(
      "test_data", [](const json&, const data::DatasetContext&) { return data::DatasetSplits{}; },
      {{"type", "object"},
       {"additionalProperties", false},
       {"properties",
        {{"root", {{"type", "string"}, {"default", "/tmp"}, {"description", "folder"}}},
         {"val_split",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"default", 0.1},
           {"description", "share"}}}}}},
      "test dataset");
  r.transforms.add(
      "test_flip", [](const json&) { return std::shared_ptr<data::Transform>(); },
      {{"type", "object"},
       {"additionalProperties", false},
       {"properties",
        {{"p",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"default", 0.5},
           {"description", "probability"}}}}}},
      "test transform");
  r.models.add(
      "test_net", [](const json&) { return std::shared_ptr<models::Model>(); },
      models::model_params_schema(
          {{"width", {{"type", "integer"}, {"default", 8}, {"description", "channels"}}}}),
      "test model");
  r.optimizers.add(
      "test_opt",
      [](const json&, torch::nn::Module&) { return std::unique_ptr<optim::Optimizer>(); },
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"lr"}},
       {"properties",
        {{"lr", {{"type", "number"}, {"exclusiveMinimum", 0}, {"description", "learning rate"}}},
         {"momentum",
          {{"type", "number"}, {"minimum", 0}, {"default", 0.0}, {"description", "momentum"}}}}}},
      "test optimizer");
  const json empty = {
      {"type", "object"}, {"additionalProperties", false}, {"properties", json::object()}};
  r.losses.add(
      "test_loss", [](const json&) { return std::shared_ptr<losses::Loss>(); }, empty, "test loss");
  r.schedulers.add(
      "test_sched",
      [](const json&, const optim::ScheduleContext&) {
        return std::unique_ptr<optim::Scheduler>();
      },
      empty, "test scheduler");
}

std::string minimal_experiment_yaml() {
  return "name: t\n"
         "data:\n"
         "  dataset: {name: test_data}\n"
         "  train_transforms: [{name: test_flip, p: 0.3}]\n"
         "model: {backbone: test_net, in_chans: 1, num_classes: 10}\n"
         "optimizer: {name: test_opt, lr: 0.001}\n"
         "scheduler: {name: test_sched}\n"
         "loss: {name: test_loss}\n"
         "metrics: []\n"
         "train: {best: {metric: loss}}\n";
}

}  // namespace runner::testing
