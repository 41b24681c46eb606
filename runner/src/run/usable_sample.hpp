#pragma once
// The sample a check before training looks at (the first training image, the first and last
// evaluation images), taken as the loader will take samples: one that does not decode is a
// file data.check header let through (a damaged body), named before any rank starts; with
// data.on_bad_image skip the next one is taken instead.

#include <cstddef>
#include <utility>

#include "config/experiment.hpp"
#include "runner/data/dataset.hpp"

namespace runner::run {

/// The first sample of `split` from `start` on (towards the end, or towards the start with
/// `backwards`) that decodes, and its index. Throws ConfigError naming the file that does not
/// (data.on_bad_image error), or saying that none does (skip).
std::pair<data::Sample, size_t> usable_sample(const config::Experiment& e,
                                              const data::Dataset& split, size_t start,
                                              bool backwards = false);

}  // namespace runner::run
