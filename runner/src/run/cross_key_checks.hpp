#pragma once
// Facts that hold between keys (and the data they name), checked before any rank starts: each
// is one line at the key's file:line (or --set) saying what to change, exit 2, nothing written.

#include <string>
#include <vector>

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// What the checks look at besides the experiment and its parts.
struct CrossKeyContext {
  int world_size = 1;          ///< the processes that train (each takes its share of the split)
  bool training = true;        ///< false: a prediction (runner predict), which trains nothing
  bool predict_input = false;  ///< runner predict --input: a folder replaces the splits
};

/// Throws ConfigError for the first fact that does not hold: the training split gives every
/// process at least one batch (train.batch_size x processes); train.grad_accum_steps fits in
/// an epoch's batches; train.profile's window lies within the run's steps; train.mixup has a loss
/// that takes soft targets; a validation split exists where metrics, train.best or
/// train.early_stopping were set; the split predict.split names exists where predict was set.
/// Returns warnings for the same facts where only defaults are involved (a run without a test split
/// writes no predictions).
std::vector<std::string> check_cross_keys(const config::Experiment& e, const train::RunParts& parts,
                                          const CrossKeyContext& context);

}  // namespace runner::run
