#include "run/rank_loader.hpp"

#include "data/class_sampling.hpp"

namespace runner::run {

data::LoaderOptions rank_loader_options(const config::ExperimentOptions& o,
                                        const train::RunParts& parts, bool training, size_t rank,
                                        bool drop_last) {
  data::LoaderOptions lo;
  lo.batch_size = static_cast<size_t>(training ? o.train.batch_size.value_or(32)
                                               : o.train.eval_batch_size.value_or(64));
  lo.shuffle = training;
  lo.drop_last = training && drop_last;
  lo.num_workers = o.data.num_workers;
  lo.prefetch = o.data.prefetch_batches;
  lo.seed = o.seed;
  lo.world_size = static_cast<size_t>(config::world_processes(o.launch));
  lo.rank = rank;
  lo.transforms_key = training ? "data.train_transforms" : "data.eval_transforms";
  lo.skip_bad_images = o.data.on_bad_image == "skip";
  lo.reduced_decode = o.data.reduced_decode;
  if (o.multilabel) lo.multi_hot_classes = parts.splits.num_classes;
  if (training) {  // the training loop's draws (data.sampler, data.samples_per_epoch, shards)
    lo.samples_per_epoch = o.data.samples_per_epoch.value_or(0);
    lo.sampling_weights =
        data::training_sampling_weights(o.data.sampler, o.data.sampler_weights, parts.splits);
    if (parts.splits.train) lo.shards = data::shard_layout(*parts.splits.train);
  }
  return lo;
}

}  // namespace runner::run
