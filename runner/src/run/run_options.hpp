#pragma once
// What the command line asks of a rank's run, beside the experiment.

#include <string>
#include <vector>

#include "config/resume_plan.hpp"

namespace runner::run {

struct RunOptions {
  bool resume = false;     ///< continue a stopped run (checkpoints/last.pt of resume_dir)
  std::string resume_dir;  ///< the run folder to continue (config::plan_resume chose it)
  std::vector<config::KeyChange> resume_changes;  ///< recorded in the run's run.json
  std::string command_line;                       ///< saved in the run directory
  bool overwrite = false;         ///< --overwrite: a new run replaces the run in output.run_dir
  bool predict_only = false;      ///< `runner predict`: no training
  std::string checkpoint;         ///< predict_only: weights to load ("" = model.pretrained)
  std::string weights = "model";  ///< predict_only: the checkpoint's model or ema weights
  std::string predict_output;     ///< predict_only: output file ("" = predict.output)
  /// predict_only: a plain folder of images to predict instead of predict.split ("" = none).
  std::string predict_input;
};

}  // namespace runner::run
