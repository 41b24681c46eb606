#include "train/loader_options.hpp"

namespace runner::train {

data::LoaderOptions pass_loader_options(
    const config::DataOptions& data, uint64_t seed, const data::Dataset* training_split,
    int64_t classes, size_t batch_size, size_t rank, size_t world_size,
    std::shared_ptr<const std::vector<double>> sampling_weights) {
  const bool training = training_split != nullptr;
  data::LoaderOptions lo;
  lo.transforms_key = training ? "data.train_transforms" : "data.eval_transforms";
  lo.batch_size = batch_size;
  lo.shuffle = training;    // evaluation keeps dataset order for gather_for_metrics
  lo.drop_last = training;  // every rank takes the same number of steps
  lo.num_workers = data.num_workers;
  lo.prefetch = data.prefetch_batches;
  lo.seed = seed;
  lo.rank = rank;
  lo.world_size = world_size;
  lo.skip_bad_images = data.on_bad_image == "skip";
  lo.reduced_decode = data.reduced_decode;
  if (data.multi_hot) lo.multi_hot_classes = classes;
  if (training) {
    lo.samples_per_epoch = data.samples_per_epoch.value_or(0);
    lo.sampling_weights = std::move(sampling_weights);
    lo.shards = data::shard_layout(*training_split);  // webdataset: shard by shard
  }
  return lo;
}

}  // namespace runner::train
