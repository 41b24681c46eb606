#pragma once
// train.batch_size: auto: the largest per-process batch that fits, found by trial steps, with
// every rank agreeing on each trial's outcome so the ranks never disagree on the batch.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "config/experiment.hpp"
#include "config/experiment_options.hpp"

namespace runner::dist {
class World;
}

namespace runner::run {

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

/// Resolves `train.batch_size: auto` for the validated experiment `e` on `device`: trial
/// training steps (fresh model and optimizer, a synthetic batch shaped like one real training
/// sample after the train transforms) at each size; a size fits unless it raises a CUDA
/// out-of-memory error or, on CPU, needs more than train.auto_batch.memory_budget_mb. Every rank
/// must call it (collectives through `world`). Returns the chosen per-process batch.
int64_t find_auto_batch_size(const config::Experiment& e, dist::World& world,
                             const c10::Device& device, config::Precision precision);

}  // namespace runner::run
