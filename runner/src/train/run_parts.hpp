#pragma once
// What a rank trains, evaluates and predicts with. run::build_run_parts makes it once per rank
// from the experiment (the only code that reads plugin sections); everything below run/ takes
// it, or the part of it that it needs.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "data/pipeline.hpp"
#include "models/freeze.hpp"
#include "runner/data/dataset.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/optim/scheduler.hpp"

namespace runner::dist {
class World;
}

namespace runner::train {

/// Where this rank computes: its world, its device and the precision that runs there (fp16 on
/// a CPU runs as bf16 or fp32).
struct RankContext {
  std::shared_ptr<dist::World> world;
  torch::Device device = torch::kCPU;
  config::Precision precision = config::Precision::kFp32;
};

/// What the parts are, in the experiment's words: for banners, the dry run and the checks that
/// data and model fit.
struct PartsDescription {
  std::string dataset, backbone, optimizer, scheduler, loss;  ///< the plugins' names
  std::string pretrained;  ///< the weights file model.pretrained names; "" for a fresh init
  std::string init_from;   ///< model.init_from's weights, described; "" when not set
  /// model.in_chans and model.num_classes; nullopt for a torchscript file (it decides both).
  std::optional<models::ModelOptions> model_options;
  std::string model_path;  ///< model.path of a torchscript backbone
};

struct RunParts {
  PartsDescription about;
  data::DatasetSplits splits;  ///< data.limit applied
  data::Pipeline train_pipeline, eval_pipeline;
  /// On the rank's device, with its initial weights (model.init_from's, else
  /// model.pretrained's); null where none was asked for.
  std::shared_ptr<models::Model> model;
  /// model.freeze's part of `model`, frozen (empty when nothing is).
  models::FrozenPart frozen;
  std::unique_ptr<optim::Optimizer> optimizer;  ///< of `model`; null for prediction
  std::shared_ptr<losses::Loss> loss;
  std::vector<std::shared_ptr<metrics::Metric>> metrics;
  /// The schedule of a run the loop has measured (its steps); null for prediction.
  std::function<std::unique_ptr<optim::Scheduler>(const optim::ScheduleContext&)> make_scheduler;
  /// A fresh model (no pretrained weights, on the CPU) and an optimizer for it, as the
  /// experiment builds them: for auto batch's trial steps and the checks of scripted models.
  std::function<std::shared_ptr<models::Model>()> make_model;
  std::function<std::unique_ptr<optim::Optimizer>(torch::nn::Module&)> make_optimizer;
};

}  // namespace runner::train
