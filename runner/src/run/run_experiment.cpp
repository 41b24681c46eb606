#include "run/run_experiment.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "dist/world.hpp"
#include "launch/world_env.hpp"
#include "run/build_run_parts.hpp"
#include "run/predict_run.hpp"
#include "run/rank_setup.hpp"
#include "run/run_banner.hpp"
#include "run/run_folder.hpp"
#include "run/start_checks.hpp"
#include "run/train_run.hpp"
#include "train/auto_batch.hpp"

namespace runner::run {
namespace {

// The error that ends this rank, into its log file too (the console gets it from main()).
// The line's level already says "error": a message that starts with the word again (some
// library errors do) loses it, so the log never reads "error error: ...".
void log_error_to_file(std::string text) {
  for (const char* word : {"runner: error: ", "error: ", "Error: ", "ERROR: "})
    if (text.rfind(word, 0) == 0) text.erase(0, std::strlen(word));
  for (auto& sink : spdlog::default_logger()->sinks()) {
    if (!std::dynamic_pointer_cast<spdlog::sinks::basic_file_sink_mt>(sink)) continue;
    sink->log(spdlog::details::log_msg("runner", spdlog::level::err, text));
    sink->flush();
  }
}

int run_in_world(const config::Experiment& e, const RunOptions& given) {
  config::ExperimentOptions experiment = e.options;
  const RankSetup setup = set_up_rank(experiment);
  experiment.train.channels_last = setup.channels_last;  // auto resolved for this device
  dist::World& world = *setup.rank.world;
  RunOptions options = given;
  continue_elastic_attempt(e, options, world);  // torchrun --max-restarts: the same folder

  PartsRequest request;
  request.device = setup.rank.device;
  request.channels_last = setup.channels_last;
  request.training = !options.predict_only;
  // A resumed run and a prediction from a checkpoint load their weights from it.
  request.pretrained = !options.resume && options.checkpoint.empty();
  request.announce = world.is_main();
  request.data = options.predict_input.empty();  // a folder of images replaces the splits
  train::RunParts parts = build_run_parts(e, request);
  // The data fits the model: a single process and the ranks of an external launcher (torchrun,
  // srun, mpirun) check before anything is written; runner's launcher checked before.
  if (!launch::launched_by_runner())
    for (const auto& warning : check_run_starts(e, parts, options, world.world_size()))
      if (world.is_main()) spdlog::warn("{}", warning);
  say_setup_notes(setup);

  // train.batch_size: auto -> the largest size every rank fits; config.yaml keeps it.
  nlohmann::json resolved = e.doc;
  if (!experiment.train.batch_size && !options.predict_input.empty()) {
    // Predicting a folder trains nothing and reads no split to try batches on.
    experiment.train.batch_size = experiment.train.eval_batch_size.value_or(64) / 2;
  } else if (!experiment.train.batch_size) {
    experiment.train.batch_size = train::find_auto_batch_size(setup.rank, parts, experiment);
    resolved["train"]["batch_size"] = *experiment.train.batch_size;
  }

  if (options.predict_only) {
    const std::string dir = open_prediction_dir(options, world);
    log_run_banner(setup, experiment, parts, options, dir);
    return predict_run(setup, experiment, parts, options, dir);
  }
  const std::string run_dir = open_run_folder(e, resolved, options, world);
  log_run_banner(setup, experiment, parts, options, run_dir);
  return train_run(setup, experiment, resolved, parts, options, run_dir);
}

}  // namespace

int run_experiment(const config::Experiment& e, const RunOptions& options) {
  try {
    return run_in_world(e, options);
  } catch (const std::exception& err) {
    log_error_to_file(err.what());
    throw;
  }
}

}  // namespace runner::run
