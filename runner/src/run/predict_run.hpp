#pragma once
// Predictions of a split into a file: `runner predict`, and the end of a training run.

#include <string>

#include "config/experiment_options.hpp"
#include "run/rank_setup.hpp"
#include "run/run_options.hpp"
#include "train/evaluator.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Predicts `split` ("test" or "val") with the current weights into `output` (relative to
/// `dir` unless absolute) in `format`, written by the main process; says so, or warns when the
/// split is empty. Every rank calls it (a collective).
void predict_split(train::Evaluator& evaluator, const RankSetup& setup,
                   const train::RunParts& parts, const std::string& split,
                   const std::string& output, const std::string& format, const std::string& dir);

/// `runner predict` on this rank: the weights of options.checkpoint (else model.pretrained's),
/// predict.split's predictions into options.predict_output (else predict.output in `dir`).
/// Returns the exit code (0).
int predict_run(const RankSetup& setup, const config::ExperimentOptions& experiment,
                train::RunParts& parts, const RunOptions& options, const std::string& dir);

}  // namespace runner::run
