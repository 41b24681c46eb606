#pragma once
// One rank's whole run: join the world, make the run directory, build every part, train,
// keep the best weights and predict. `runner run` calls it in every rank process.

#include <string>

#include "config/experiment.hpp"

namespace runner::engine {

struct RunOptions {
  bool resume = false;         ///< continue a stopped run (checkpoints/last.pt of resume_dir)
  std::string resume_dir;      ///< "" with resume: the newest run of this experiment
  std::string command_line;    ///< saved in the run directory
  bool predict_only = false;   ///< `runner predict`: no training
  std::string checkpoint;      ///< predict_only: weights to load ("" = model.pretrained)
  std::string predict_output;  ///< predict_only: output file ("" = predict.output)
};

/// Runs the experiment on this rank; returns the exit code. Errors are thrown.
int run_experiment(const config::Experiment& e, const RunOptions& options);

}  // namespace runner::engine
