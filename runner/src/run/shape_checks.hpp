#pragma once
// Mistakes in how the data and the model fit together, found before anything trains: a class
// count the model cannot predict, a channel count the first layer does not take, evaluation
// images of different sizes. Without these checks they surface mid-step as libtorch errors.

#include "config/experiment.hpp"
#include "data/pipeline.hpp"
#include "runner/data/dataset.hpp"

namespace runner::run {

/// Throws ConfigError (file:line of the model key, both values, what to set) when `splits` and
/// the transforms do not fit the experiment's model.num_classes / model.in_chans, or when the
/// evaluation transforms give images of more than one size. Reads a few samples only.
void check_data_fits_model(const config::Experiment& e, const data::DatasetSplits& splits,
                           const data::Pipeline& train_transforms,
                           const data::Pipeline& eval_transforms);

/// The same, building the datasets and transforms of `e` first, quietly (only warnings are
/// logged): for `validate` and runner's launcher, which check before any rank starts.
void check_data_fits_model(const config::Experiment& e);

}  // namespace runner::run
