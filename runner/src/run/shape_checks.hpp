#pragma once
// Mistakes in how the data and the model fit together, found before anything trains: a class
// count the model cannot predict, a channel count the first layer does not take, evaluation
// images of different sizes. Without these checks they surface mid-step as libtorch errors.

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Throws ConfigError (file:line of the model key, both values, what to set) when the parts'
/// splits and transforms do not fit the experiment's model.num_classes / model.in_chans, or
/// when the evaluation transforms give images of more than one size. Reads a few samples only.
/// A torchscript model (whose file decides both) runs one training image: `parts.model` when
/// built (left in training mode), else a fresh one.
void check_data_fits_model(const config::Experiment& e, const train::RunParts& parts);

/// The same, building the data parts of `e` first, quietly (only warnings are logged): for
/// `validate` and runner's launcher, which check before any rank starts.
void check_data_fits_model(const config::Experiment& e);

}  // namespace runner::run
