#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "config/path_keys.hpp"
#include "run/show_batch.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::cli {

int command_show_batch(const Args& args) {
  CommandLine cl(
      "show-batch",
      "EXPERIMENT.yaml [--split train|val] [--count N] [-o batch.png] [--set KEY=VALUE]...",
      "Draws the first batch of a split exactly as it reaches the model: the training split\n"
      "through data.train_transforms and train.mixup (mixed, erased, as rank 0 of the\n"
      "experiment's world gets it in epoch 1), the validation split through\n"
      "data.eval_transforms. Each image is rescaled over the batch's range to be visible and\n"
      "captioned with its class, or its two mixed classes and their weights ('3 x0.70 + 8\n"
      "x0.30', 'cutmix' when boxed). Beside the PNG, FILE.json: the sampler, and each sample's\n"
      "caption, label, split index, target, lam, mode (mixup, cutmix, none) and mixed_with.");
  add_run_flags(cl);
  add_config_dir_flag(cl);
  cl.flag("split", po::value<std::string>(), "train (default) or val")
      .flag("count", po::value<int64_t>(), "Samples to show (default 32)")
      .flag("output,o", po::value<std::string>(), "The PNG to write (default batch.png)")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string file = cl.only("file", "experiment file");
  const std::string split = cl.get_or<std::string>("split", "train");
  if (split != "train" && split != "val")
    throw ConfigError("runner show-batch: --split " + split + ": expected train or val");
  const int64_t count = cl.get_or<int64_t>("count", 32);
  if (count < 1) throw ConfigError("runner show-batch: --count must be at least 1");
  const std::filesystem::path output = cl.get_or<std::string>("output", "batch.png");
  const auto experiment = config::load_experiment(file, run_overrides(cl), config_dir(cl));
  config::require_paths_exist(experiment);
  const run::ShownBatch batch = run::first_batch(experiment, split, count);
  run::write_batch_grid(batch, output);
  std::filesystem::path json_path = output;
  json_path += ".json";
  util::write_file_atomically(json_path.string(), run::batch_description(batch).dump(1) + "\n");
  std::cout << "wrote " << output.string() << " (" << batch.images.size(0) << " " << split
            << " images) and " << json_path.string() << "\n";
  return 0;
}

}  // namespace runner::cli
