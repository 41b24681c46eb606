#pragma once
// One rank's whole run: join the world, make the run directory, build every part, train,
// keep the best weights and predict. `runner run` calls it in every rank process.

#include <string>
#include <vector>

#include "config/experiment.hpp"
#include "config/resume_plan.hpp"

namespace runner::run {

struct RunOptions {
  bool resume = false;     ///< continue a stopped run (checkpoints/last.pt of resume_dir)
  std::string resume_dir;  ///< the run folder to continue (config::plan_resume chose it)
  std::vector<config::KeyChange> resume_changes;  ///< recorded in the run's run.json
  std::string command_line;                       ///< saved in the run directory
  bool predict_only = false;                      ///< `runner predict`: no training
  std::string checkpoint;      ///< predict_only: weights to load ("" = model.pretrained)
  std::string predict_output;  ///< predict_only: output file ("" = predict.output)
};

/// Runs the experiment on this rank; returns the exit code. Errors are thrown.
int run_experiment(const config::Experiment& e, const RunOptions& options);

}  // namespace runner::run
