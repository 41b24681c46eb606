#include "run/predict_run.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "dist/world.hpp"
#include "output/predictions_writer.hpp"
#include "train/batch_source.hpp"
#include "train/checkpoint.hpp"

namespace runner::run {

namespace fs = std::filesystem;

void predict_split(train::Evaluator& evaluator, const RankSetup& setup,
                   const train::RunParts& parts, const std::string& split,
                   const std::string& output, const std::string& format, const std::string& dir) {
  const bool main = setup.rank.world->is_main();
  const auto& dataset = split == "val" ? parts.splits.val : parts.splits.test;
  if (!dataset || dataset->size() == 0) {
    if (main) spdlog::warn("no {} split to predict: no predictions written", split);
    return;
  }
  const torch::Tensor logits = evaluator.predict_logits(dataset);
  if (!main) return;
  const fs::path path = fs::path(output).is_absolute() ? fs::path(output) : fs::path(dir) / output;
  const size_t rows = output::write_predictions(logits, format, dataset->describe(), path);
  spdlog::info("wrote {} predictions of the {} split to {}", rows, split, path.string());
}

int predict_run(const RankSetup& setup, const config::ExperimentOptions& experiment,
                train::RunParts& parts, const RunOptions& options, const std::string& dir) {
  if (!options.checkpoint.empty()) {
    train::load_checkpoint(options.checkpoint, *parts.model, nullptr);
  } else if (parts.about.pretrained.empty() && setup.rank.world->is_main()) {
    spdlog::warn(
        "predicting with freshly initialised weights: give --checkpoint or model.pretrained");
  }
  train::BatchSource batches(setup.rank, parts, experiment.data, experiment.seed);
  const int64_t batch_size =
      experiment.train.eval_batch_size.value_or(2 * *experiment.train.batch_size);
  train::Evaluator evaluator(setup.rank, parts, batches, batch_size,
                             experiment.train.log_every_steps);
  const config::PredictOptions& predict = experiment.predict;
  predict_split(evaluator, setup, parts, predict.split,
                options.predict_output.empty() ? predict.output : options.predict_output,
                predict.format, dir);
  setup.rank.world->barrier();
  return 0;
}

}  // namespace runner::run
