#pragma once
// The data loader: a distributed sampler, worker threads that load, transform and collate whole
// batches, and a bounded queue delivering them in order.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/batch.hpp"
#include "data/batched_pipeline.hpp"
#include "data/pipeline.hpp"
#include "data/resident_split.hpp"
#include "data/sample_reader.hpp"
#include "data/sampler.hpp"
#include "runner/data/dataset.hpp"

namespace runner::data {

struct LoaderOptions {
  size_t batch_size = 32;  ///< per process
  bool shuffle = false;    ///< per-epoch permutation from (seed, epoch)
  bool drop_last = false;  ///< drop the tail that does not fill a batch (and sampler padding)
  size_t num_workers = 0;  ///< 0: load in the calling thread
  /// Batches prepared ahead of the consumer; at least num_workers are (memory: that many batches).
  size_t prefetch = 2;
  uint64_t seed = 0;  ///< augmentation and shuffle seed
  size_t rank = 0;
  size_t world_size = 1;
  bool pin_memory = false;  ///< page-locked batches (only when CUDA is available)
  /// data.device: batches are rows of this decoded split, transformed by the batched forms of
  /// the pipeline's transforms on its device; null: per-sample loading, OpenCV, collate.
  std::shared_ptr<const ResidentSplit> resident;
  std::string transforms_key = "transforms";  ///< where the pipeline is configured, for errors
  /// data.on_bad_image skip: a sample that cannot be read or transformed is left out of its
  /// batch (a warning once per file, counted in LoaderStats::skipped); else it fails the batch.
  bool skip_bad_images = false;
  /// The sampler's epoch over all ranks (0: the dataset's size) and its per-sample weights
  /// (draws with replacement; null: a permutation). See SamplerOptions.
  size_t samples_per_epoch = 0;
  std::shared_ptr<const std::vector<double>> sampling_weights;
  /// A sharded dataset's layout: the training epoch reads shard by shard. See SamplerOptions.
  ShardLayout shards;
  /// data.reduced_decode: JPEGs decoded at 1/2, 1/4 or 1/8 where the first transform shrinks
  /// them enough (sample_reader.hpp); false: always whole.
  bool reduced_decode = true;
  /// task: multilabel: batches carry multi-hot `targets` over this many classes; 0: none.
  int64_t multi_hot_classes = 0;
};

struct LoaderStats {
  double wait_seconds = 0;         ///< time spent in next() (0 workers: all the loading time)
  size_t batches = 0;              ///< batches delivered since construction
  size_t samples = 0;              ///< samples delivered (padding included)
  size_t worker_threads = 0;       ///< loader threads running this epoch (0: the caller loads)
  size_t prefetch = 0;             ///< batches prepared ahead at most (at least worker_threads)
  std::string made_on = "loader";  ///< "loader" (per sample), or the resident split's device
  size_t skipped = 0;              ///< samples left out as unreadable (skip_bad_images)
};

class DataLoader {
 public:
  /// Requires a non-null dataset, batch_size >= 1 and rank < world_size.
  DataLoader(std::shared_ptr<const Dataset> dataset, Pipeline pipeline, LoaderOptions options);
  /// Stops and joins the workers.
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Begins `epoch`, skipping its first `skip_batches` batches (resume mid-epoch). Workers start
  /// preparing batches at once. An epoch in progress is abandoned.
  void start_epoch(uint64_t epoch, size_t skip_batches = 0);

  /// The next batch of the current epoch (epoch 0 if start_epoch was never called), or nullopt
  /// at its end. A failure while loading is
  /// rethrown here as runner::DataError naming the sample index.
  std::optional<Batch> next();

  /// Whether the next batch of the epoch loads, waiting for it to be made (the training loop
  /// asks before the ranks agree to take another step): false when making it failed, and
  /// next() then throws that error. True at the epoch's end.
  bool next_loads();
  /// Why the next batch cannot be made ("" when it can): what next() would throw.
  std::string why_next_fails();

  /// Batches per epoch on this rank (the same on every rank).
  size_t num_batches() const;
  /// Batches of the current epoch already delivered, skipped ones included (for checkpoints).
  size_t position() const { return next_batch_; }
  uint64_t epoch() const { return epoch_; }
  const DistributedSampler& sampler() const { return sampler_; }
  bool skips_bad_images() const { return options_.skip_bad_images; }
  LoaderStats stats() const;

 private:
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  Batch make_batch(size_t batch_number) const;
  Batch make_resident_batch(size_t begin, size_t end) const;
  void worker_loop();
  void stop_workers();

  std::shared_ptr<const Dataset> dataset_;
  Pipeline pipeline_;
  std::unique_ptr<SampleReader> reader_;  ///< reads dataset_ through pipeline_
  LoaderOptions options_;
  std::unique_ptr<BatchedPipeline> batched_;  ///< with options_.resident
  DistributedSampler sampler_;
  bool started_ = false;
  uint64_t epoch_ = 0;
  std::vector<SampledIndex> order_;  // this rank's indices for the current epoch
  size_t end_batch_ = 0;             // batches in the current epoch
  size_t next_batch_ = 0;            // next batch the consumer takes

  mutable std::mutex mutex_;
  std::condition_variable produced_;  // a slot was filled
  std::condition_variable consumed_;  // the window moved or workers must stop
  std::map<size_t, Slot> ready_;      // finished batches by number
  std::optional<Slot> made_ahead_;    // next_loads()' batch without workers
  mutable std::atomic<size_t> skipped_{0};
  size_t next_to_claim_ = 0;  // next batch number a worker takes
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  LoaderStats stats_;
};

}  // namespace runner::data
