#include "cli/sweep_checks.hpp"

#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "run/build_run_parts.hpp"
#include "run/preflight.hpp"
#include "run/shape_checks.hpp"
#include "runner/error.hpp"
#include "sweep/optuna_executor.hpp"

namespace runner::cli {
namespace {

// A pruner judges each epoch's validation value: the base must have a validation split.
void check_pruner_has_epochs_to_judge(const sweep::Sweep& sweep, const config::Experiment& base,
                                      const data::DatasetSplits& splits) {
  const std::string pruner = sweep.doc.at("pruner").value("name", "none");
  if (pruner == "none" || (splits.val && splits.val->size() > 0)) return;
  throw ConfigError(sweep.marks.value_mark("/pruner/name").to_string() + ": pruner " + pruner +
                    " judges each epoch by train.best.metric (" + base.options.train.best.metric +
                    ") on the validation split, and the base has none: give the data a "
                    "validation split, or set pruner: {name: none}");
}

// The splits and pipelines of `e` without a model, quietly (the points log what the dataset
// says when they run).
train::RunParts data_parts(const config::Experiment& e) {
  run::PartsRequest data_only;
  data_only.model = false;
  data_only.training = false;
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  try {
    train::RunParts parts = run::build_run_parts(e, data_only);
    spdlog::set_level(level);
    return parts;
  } catch (...) {
    spdlog::set_level(level);
    throw;
  }
}

}  // namespace

void check_sweep_points(const sweep::Sweep& sweep) {
  std::set<std::string> models, data;
  std::vector<sweep::SweepPoint> points = sweep.points;
  if (sweep.search == "optuna") {  // its trials come later: the base with the sweep's set
    sweep::SweepPoint base;
    base.id = "base";
    base.experiment = config::load_experiment(sweep.base_path, sweep.set_overrides);
    points.push_back(base);
  }
  std::optional<data::DatasetSplits> base_splits;
  for (const auto& point : points) {
    const config::Experiment& e = point.experiment;
    const bool search_base = sweep.search == "optuna" && &point == &points.back();
    try {
      run::check_devices(e);
      if (models.insert(e.doc.at("model").dump()).second) run::check_model(e);
      if (search_base) {
        const train::RunParts parts = data_parts(e);
        run::check_data_fits_model(e, parts);
        base_splits = parts.splits;
      } else if (data.insert(e.doc.at("data").dump() + e.doc.at("model").dump()).second) {
        run::check_data_fits_model(e);
      }
    } catch (const Error& error) {  // a missing data folder is a DataError of the dataset
      throw ConfigError("sweep point " + point.id + ": " + error.what());
    }
  }
  if (base_splits) check_pruner_has_epochs_to_judge(sweep, points.back().experiment, *base_splits);
}

void check_sweep_starts(const sweep::Sweep& sweep, bool points_here) {
  if (points_here) check_sweep_points(sweep);
  if (sweep.search == "optuna") {
    sweep::check_optuna_importable();
    sweep::check_optuna_storage(sweep);
  }
}

}  // namespace runner::cli
