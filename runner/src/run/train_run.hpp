#pragma once
// A training run on one rank, from its first step to its summary: train (or resume), keep the
// best weights, evaluate them, predict, keep the checkpoints train.checkpoints asks for, and
// record how it ended.

#include <string>

#include <nlohmann/json.hpp>

#include "config/experiment_options.hpp"
#include "run/rank_setup.hpp"
#include "run/run_options.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Trains in `run_dir` (open_run_folder made it) the experiment whose resolved config is
/// `resolved` (what config.yaml holds; the trackers' parameters and the run's params for them).
/// Returns the exit code: 0, or 130/143 when a SIGINT/SIGTERM stopped it with its work saved.
/// An error is recorded (summary.json "failed", report.html, the trackers) and thrown. Every
/// rank calls it.
int train_run(const RankSetup& setup, const config::ExperimentOptions& experiment,
              const nlohmann::json& resolved, train::RunParts& parts, const RunOptions& options,
              const std::string& run_dir);

}  // namespace runner::run
