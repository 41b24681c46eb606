#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "config/path_keys.hpp"
#include "run/bench_data.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::cli {

int command_bench_data(const Args& args) {
  CommandLine cl(
      "bench-data",
      "EXPERIMENT.yaml [--split train|val|test] [--batches N] [--epoch E] [--rank R]\n"
      "                  [--samples FILE.json] [--set KEY=VALUE]...",
      "The input pipeline alone, as one rank of the run reads it (its loader threads,\n"
      "sampler or shard order, transforms and collate), no model, no run folder: images/s,\n"
      "and where one thread's time goes (read, decode, transforms, collate). A pipeline\n"
      "much faster than the run's training images/s is not what the run waits on.\n"
      "--samples writes the dataset indices the batches held, in order.");
  add_run_flags(cl);
  add_config_dir_flag(cl);
  cl.flag("split", po::value<std::string>(), "train (default), val or test")
      .flag("batches", po::value<int64_t>(), "Batches to time (default 50; fewer if the epoch has)")
      .flag("epoch", po::value<int64_t>(), "Which epoch's order, 1-based (default 1)")
      .flag("rank", po::value<int64_t>(), "Which rank of the experiment's world reads (default 0)")
      .flag("samples", po::value<std::string>(), "Write the indices read to this JSON file")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string file = cl.only("file", "experiment file");
  run::DataBenchOptions options;
  options.split = cl.get_or<std::string>("split", "train");
  if (options.split != "train" && options.split != "val" && options.split != "test")
    throw ConfigError("runner bench-data: --split " + options.split +
                      ": expected train, val or test");
  const auto positive = [&](const char* flag, int64_t fallback, int64_t least) {
    const int64_t v = cl.get_or(flag, fallback);
    if (v < least)
      throw ConfigError("runner bench-data: --" + std::string(flag) + " must be at least " +
                        std::to_string(least));
    return v;
  };
  options.batches = static_cast<size_t>(positive("batches", 50, 1));
  options.epoch = static_cast<uint64_t>(positive("epoch", 1, 1) - 1);
  options.rank = static_cast<size_t>(positive("rank", 0, 0));
  // --samples' folder is checked before anything is read: a path that cannot be written is a
  // command-line error, not a failure after the timing.
  if (cl.has("samples")) {
    const std::filesystem::path folder =
        std::filesystem::absolute(cl.get<std::string>("samples")).parent_path();
    if (!std::filesystem::is_directory(folder) || ::access(folder.c_str(), W_OK | X_OK) != 0)
      throw ConfigError("runner bench-data: --samples " + cl.get<std::string>("samples") + ": " +
                        folder.string() +
                        " is not a folder this user can write; give a file in one");
  }
  const auto experiment = config::load_experiment(file, run_overrides(cl), config_dir(cl));
  config::require_paths_exist(experiment);
  const run::DataBenchResult result = run::bench_data(experiment, options);
  std::cout << run::describe(result);
  if (cl.has("samples")) {
    const std::string path = cl.get<std::string>("samples");
    const nlohmann::json record = {{"split", result.split},           {"rank", result.rank},
                                   {"world_size", result.world_size}, {"epoch", options.epoch + 1},
                                   {"batches", result.batches},       {"indices", result.indices}};
    util::write_file_atomically(path, record.dump() + "\n");
    std::cout << "wrote " << result.indices.size() << " sample indices to " << path << "\n";
  }
  return 0;
}

}  // namespace runner::cli
