#pragma once
// Every sample of every split can be used, found before anything trains instead of mid-epoch
// or after training (data.check, data.allow_empty_classes).

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// data.check header: each image file's header (its size, and that the file is whole),
/// decoding only the formats it cannot read that way; full: every sample decoded; none: no
/// look. Images whose size differs from the first's must come out of the split's transforms
/// at the first one's size. A training split without a sample of a class the data names (an
/// image_folder class folder) is an error unless data.allow_empty_classes (a warning where
/// data.limit.train took them, or where a dataset declares a class count its labels do not
/// fill). Throws ConfigError naming the file (or the sample), the split and what to do.
void check_samples(const config::Experiment& e, const train::RunParts& parts);

}  // namespace runner::run
