#pragma once
// data.sampler balanced | weighted: per-sample weights that give each class a chosen share of an
// epoch's draws (with replacement), samples of one class drawn alike.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// One weight per sample of `train`: class c's share of the draws is class_shares[c] / their
/// sum, spread evenly over its samples; empty `class_shares`: every class with samples an equal
/// share (balanced). Throws ConfigError (without a key: the caller says where) when
/// class_shares does not have `num_classes` entries, all of them are 0, or a class with a share
/// has no sample (named by `class_names` where given).
std::vector<double> class_sampling_weights(const Dataset& train, int64_t num_classes,
                                           const std::vector<double>& class_shares,
                                           const std::vector<std::string>& class_names);

/// data.sampler's per-sample weights for the training split of `splits` ("balanced" or
/// "weighted" with `class_shares`), null for "shuffle". Throws as class_sampling_weights.
std::shared_ptr<const std::vector<double>> training_sampling_weights(
    const std::string& sampler, const std::vector<double>& class_shares,
    const DatasetSplits& splits);

}  // namespace runner::data
