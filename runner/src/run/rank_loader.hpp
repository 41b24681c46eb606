#pragma once
// The loader settings one rank of the experiment's world uses, made without its process group:
// what show-batch draws and bench-data reads are what that rank of a run would get (the
// training split shuffled from (seed, epoch) through data.sampler or shard by shard, whole
// batches; the others in dataset order). The per-sample loader only: data.device's resident
// splits are the training loop's (train/batch_source.hpp).

#include <cstddef>

#include "config/experiment_options.hpp"
#include "data/loader.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// The loader options of `rank` of the experiment's world for the training split (`training`)
/// or an evaluation split. `drop_last`: the training loop's whole batches (show-batch takes a
/// short split's partial batch).
data::LoaderOptions rank_loader_options(const config::ExperimentOptions& o,
                                        const train::RunParts& parts, bool training, size_t rank,
                                        bool drop_last = true);

}  // namespace runner::run
