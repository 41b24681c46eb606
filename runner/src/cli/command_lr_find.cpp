#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "config/path_keys.hpp"
#include "run/lr_find.hpp"
#include "runner/error.hpp"

namespace runner::cli {

int command_lr_find(const Args& args) {
  CommandLine cl(
      "lr-find",
      "EXPERIMENT.yaml [--min-lr 1e-8] [--max-lr 1] [--steps 100] [--early-stop-threshold 4] "
      "[-o DIR] [--set KEY=VALUE]...",
      "Leslie Smith's learning-rate range test, as Lightning's Tuner.lr_find: the experiment's\n"
      "own training step (model and initial weights, optimizer and its groups, loss,\n"
      "precision, clipping, accumulation, mixup, sampler) run for --steps optimizer steps while\n"
      "the lr rises exponentially from --min-lr to --max-lr, the loss smoothed (an exponential\n"
      "average, beta 0.98), stopped when the smoothed loss passes --early-stop-threshold times\n"
      "its best (0: never) or a loss is NaN/inf. The suggested lr is where the smoothed loss\n"
      "falls fastest against the lr (the first 10 steps and the last left out, as Lightning).\n"
      "One process on the experiment's device, whatever launch.num_processes says; parameter\n"
      "groups keep their ratio to optimizer.lr. Writes lr_find.csv, lr_find.json and\n"
      "lr_find.html into -o DIR (new or empty; default lr_find/NAME-TIMESTAMP); no run is read\n"
      "or changed.");
  add_run_flags(cl);
  add_config_dir_flag(cl);
  cl.flag("min-lr", po::value<double>(), "First lr (default 1e-8)")
      .flag("max-lr", po::value<double>(), "Last lr (default 1)")
      .flag("steps", po::value<int64_t>(), "Optimizer steps at most (default 100)")
      .flag("early-stop-threshold", po::value<double>(),
            "Stop when the smoothed loss exceeds this many times its best (default 4; 0: never)")
      .flag("output,o", po::value<std::string>(), "The folder to write (new or empty)")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string file = cl.only("file", "experiment file");
  run::LrFindOptions options;
  if (cl.has("min-lr")) options.range.min_lr = cl.get<double>("min-lr");
  if (cl.has("max-lr")) options.range.max_lr = cl.get<double>("max-lr");
  if (cl.has("steps")) options.range.steps = cl.get<int64_t>("steps");
  if (cl.has("early-stop-threshold")) {
    const double threshold = cl.get<double>("early-stop-threshold");
    if (threshold < 0)
      throw ConfigError("runner lr-find: --early-stop-threshold must be 0 (never) or above");
    options.range.early_stop_threshold =
        threshold > 0 ? std::optional<double>(threshold) : std::nullopt;
  }
  if (cl.has("output")) options.output_dir = cl.get<std::string>("output");
  const auto experiment = config::load_experiment(file, run_overrides(cl), config_dir(cl));
  config::require_paths_exist(experiment);
  return run::lr_find(experiment, options);
}

}  // namespace runner::cli
