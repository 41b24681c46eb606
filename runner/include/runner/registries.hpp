#pragma once
// The eight plugin kinds and their factory signatures. This header does not include torch or
// OpenCV: the factory result types are only declared here.

#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "runner/registry.hpp"

namespace torch::nn {
class Module;
}

namespace runner {
namespace data {
class Dataset;
class Transform;
struct DatasetSplits;
struct DatasetContext;
}  // namespace data
namespace models {
class Model;
}
namespace optim {
class Optimizer;
class Scheduler;
struct ScheduleContext;
}  // namespace optim
namespace losses {
class Loss;
}
namespace metrics {
class Metric;
}
namespace trackers {
class Tracker;
struct TrackerContext;
}  // namespace trackers

// Every factory receives its validated parameters (the plugin's section of the experiment
// without the selecting key, with the schema's defaults filled in).
using DatasetFactory =
    std::function<data::DatasetSplits(const nlohmann::json& params, const data::DatasetContext&)>;
using TransformFactory =
    std::function<std::shared_ptr<data::Transform>(const nlohmann::json& params)>;
using ModelFactory = std::function<std::shared_ptr<models::Model>(const nlohmann::json& params)>;
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(
    const nlohmann::json& params, torch::nn::Module& model)>;
using SchedulerFactory = std::function<std::unique_ptr<optim::Scheduler>(
    const nlohmann::json& params, const optim::ScheduleContext&)>;
using LossFactory = std::function<std::shared_ptr<losses::Loss>(const nlohmann::json& params)>;
using MetricFactory = std::function<std::shared_ptr<metrics::Metric>(const nlohmann::json& params)>;
using TrackerFactory = std::function<std::unique_ptr<trackers::Tracker>(
    const nlohmann::json& params, const trackers::TrackerContext&)>;

/// All registries of one process.
struct Registries {
  Registry<DatasetFactory> datasets{"datasets"};
  Registry<TransformFactory> transforms{"transforms"};
  Registry<ModelFactory> models{"models"};
  Registry<OptimizerFactory> optimizers{"optimizers"};
  Registry<SchedulerFactory> schedulers{"schedulers"};
  Registry<LossFactory> losses{"losses"};
  Registry<MetricFactory> metrics{"metrics"};
  // Members are only ever appended: a plugin built for an earlier ABI sees its prefix.
  Registry<TrackerFactory> trackers{"trackers"};
};

/// The process-wide registries (a function-local static; empty until something registers).
Registries& registries();

/// Registers every built-in plugin (defined in plugins/, called by the executable and tests).
/// Calling it again does nothing.
void register_builtin_plugins(Registries& r);

}  // namespace runner
