#pragma once
// Sweep files: a base experiment and the points (override sets) to run.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.hpp"

namespace runner::sweep {

struct SweepPoint {
  std::string id;                      ///< "003-batch_size=256-num_processes=2-precision=fp16"
  std::vector<std::string> overrides;  ///< "key=value" texts, applied after the base file
  nlohmann::json values;               ///< key.path -> value of the point's own settings
  config::Experiment experiment;  ///< the resolved, validated experiment it runs (load_sweep's)
};

/// `slurm`: the sbatch options of the array job (executor: slurm).
struct SlurmOptions {
  std::optional<std::string> partition, time, account;
  std::optional<int> cpus_per_task;
  std::optional<int> gpus_per_task;  ///< nullopt: 1 where a point runs on cuda, else 0
  std::vector<std::string> extra_args;
  int requeue_signal_s = 120;  ///< --signal=USR1@N where a point sets launch.slurm_requeue
};

struct Sweep {
  std::string path, name, base_path, output;
  std::string search = "grid";     ///< grid or random
  std::string executor = "local";  ///< local or slurm (the file's; the CLI may override)
  int parallel = 0;                ///< points at once (the file's, 0: unset; the CLI may override)
  nlohmann::json doc;              ///< validated sweep file, defaults filled
  config::SourceMap marks;         ///< where each key of the sweep file was written
  /// `set` and the command line's --set, as overrides every point starts from (search: optuna
  /// builds its trials' points from them as it asks).
  std::vector<std::string> set_overrides;
  SlurmOptions slurm;
  std::vector<SweepPoint> points;
};

/// The --set text of a point's setting: "key=<value as JSON>" (a string keeps its quotes).
std::string override_text(const std::string& key, const nlohmann::json& value);

/// Loads `path`, expands its points, and validates every point as a full experiment (with
/// `extra_overrides` applied to every point), failing up front with the point named.
Sweep load_sweep(const std::string& path, const std::vector<std::string>& extra_overrides = {});

/// Whether `path` holds a sweep (it has a top-level `base:` key) rather than an experiment.
bool is_sweep_file(const std::string& path);

}  // namespace runner::sweep
