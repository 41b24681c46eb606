#pragma once
// `runner lr-find EXPERIMENT.yaml`: the learning-rate range test on the experiment's real
// training step (its model, initial weights, optimizer and groups, loss, precision, clipping,
// accumulation, mixup, sampler and loader), as one process on its device, into a folder of its
// own: lr_find.csv, lr_find.json and lr_find.html. Nothing of any run is read or written.

#include <string>

#include "config/experiment.hpp"
#include "train/lr_range_test.hpp"

namespace runner::run {

struct LrFindOptions {
  train::LrRangeOptions range;
  std::string output_dir;  ///< "" : lr_find/<name>-<timestamp> in the working folder
};

/// Runs the test; prints the suggested lr and the files it wrote. Returns the exit code (0, or
/// 1 when no lr could be suggested). Throws ConfigError for an output folder that is not new
/// or empty, and what building the experiment's parts throws.
int lr_find(const config::Experiment& e, const LrFindOptions& options);

}  // namespace runner::run
