#pragma once
// train.batch_size: auto: the largest per-process batch that fits, found by trial steps, with
// every rank agreeing on each trial's outcome so the ranks never disagree on the batch.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/experiment_options.hpp"
#include "train/run_parts.hpp"

namespace runner::train {

/// One trial of the search: the batch tried and whether every rank could run it.
struct BatchTrial {
  int64_t batch = 0;
  bool fits = false;
};

/// The largest batch in [1, max] for which `fits` holds, assuming it holds up to some size and
/// not beyond: tries 2, 4, 8, ... up to max (1 only when 2 does not fit), then bisects between the
/// last size that fitted and the first that did not. Each local answer goes through `agree` (all
/// ranks: true only when every rank's answer is true) before it is used. `trials` (optional)
/// receives every trial in order. Throws runner::Error when even batch 1 does not fit.
int64_t search_batch_size(int64_t max, const std::function<bool(int64_t)>& fits,
                          const std::function<bool(bool)>& agree = nullptr,
                          std::vector<BatchTrial>* trials = nullptr);

/// Resolves `train.batch_size: auto` on the rank's device: trial steps of the run's step (a
/// fresh model and optimizer from the parts' factories, a synthetic batch shaped like one real
/// training sample after the train transforms) at each size; a size fits unless it raises a
/// CUDA out-of-memory error or, on CPU, needs more than train.auto_batch.memory_budget_mb. The
/// process's random stream is left as it was. Every rank must call it (collectives through
/// `rank.world`). Returns the chosen per-process batch.
int64_t find_auto_batch_size(const RankContext& rank, const RunParts& parts,
                             const config::ExperimentOptions& options);

}  // namespace runner::train
