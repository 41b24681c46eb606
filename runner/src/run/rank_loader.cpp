#include "run/rank_loader.hpp"

#include "data/class_sampling.hpp"
#include "train/loader_options.hpp"

namespace runner::run {

data::LoaderOptions rank_loader_options(const config::ExperimentOptions& o,
                                        const train::RunParts& parts, bool training, size_t rank,
                                        bool drop_last) {
  data::LoaderOptions lo = train::pass_loader_options(
      o.data, o.seed, training ? parts.splits.train.get() : nullptr, parts.splits.num_classes,
      static_cast<size_t>(training ? o.train.batch_size.value_or(32)
                                   : o.train.eval_batch_size.value_or(64)),
      rank, static_cast<size_t>(config::world_processes(o.launch)),
      training
          ? data::training_sampling_weights(o.data.sampler, o.data.sampler_weights, parts.splits)
          : nullptr);
  lo.drop_last = lo.drop_last && drop_last;
  return lo;
}

}  // namespace runner::run
