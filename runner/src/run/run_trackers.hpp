#pragma once
// The run's trackers from its resolved config (output.trackers, output.tensorboard): built on the
// main process as the run starts, checked by `runner validate` and --dry-run, and rebuilt by
// `runner track` for what a run could not send.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.hpp"
#include "output/tracker_set.hpp"

namespace runner::run {

/// The trackers `doc` (validated) lists, `tensorboard` first when output.tensorboard is on and
/// the list does not name it, each with its state from RUN_DIR/run.json and a context that
/// keeps new state there.
std::vector<output::TrackerEntry> make_trackers(const nlohmann::json& doc,
                                                const std::string& run_dir);

/// What every tracker's start gets: the experiment's name, the run folder's name, the resolved
/// config `doc` flattened, and the environment (`environment` plus runner.version, runner.host,
/// runner.run_dir, and a sweep point's runner.sweep, runner.sweep_point and sweep.<key>, from
/// the sweep's RUNNER_SWEEP_* variables) as tags.
trackers::RunStart tracker_run_start(const nlohmann::json& doc, const std::string& run_dir,
                                     std::map<std::string, std::string> environment);

/// `doc` as dotted keys -> text: nested objects by key, lists of objects by index
/// ("data.train_transforms.0.name"), other lists and scalars as JSON text (strings bare).
std::map<std::string, std::string> flat_params(const nlohmann::json& doc);

/// Asks each tracker `e` lists whether its service takes the run's settings (`runner validate`,
/// --dry-run): throws ConfigError (file:line, the key) for what it refuses; returns warnings
/// for what it cannot tell now (a server that does not answer).
std::vector<std::string> check_trackers(const config::Experiment& e);

}  // namespace runner::run
