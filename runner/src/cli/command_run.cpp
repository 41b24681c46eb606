#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "engine/dry_run.hpp"
#include "runner/error.hpp"

namespace runner::cli {

int command_run(const Args& args) {
  CommandLine cl(
      "run", "EXPERIMENT.yaml [--set KEY=VALUE]... [--dry-run] [--resume [RUN_DIR]]",
      "Validates the experiment, starts its ranks (or joins a world started by torchrun,\n"
      "srun or mpirun) and trains, keeping the best checkpoint, then predicts.\n"
      "train.batch_size is PER PROCESS: the global batch is processes x batch_size x\n"
      "grad_accum_steps.");
  add_run_flags(cl);
  cl.flag("dry-run", nullptr,
          "Validate, build the model and data pipeline, print a summary and exit without training")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const auto files = cl.list("file");
  if (files.size() != 1)
    throw ConfigError("runner run: give one experiment file; see 'runner run --help'");
  const auto experiment = config::load_experiment(files[0], run_overrides(cl));
  if (cl.has("dry-run")) {
    engine::dry_run(experiment, std::cout);
    return 0;
  }
  throw Error(
      "runner run: training is not built yet (it arrives with the training engine); "
      "use --dry-run to check the experiment");
}

int command_predict(const Args& args) {
  (void)args;
  throw Error("runner predict: not built yet (it arrives with the training engine)");
}

int command_sweep(const Args& args) {
  (void)args;
  throw Error("runner sweep: not built yet (it arrives with the sweeps work)");
}

int command_export(const Args& args) {
  (void)args;
  throw Error("runner export: not built yet (it arrives with the backbones work)");
}

}  // namespace runner::cli
