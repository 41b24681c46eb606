#pragma once
// `runner bench-data`: the input pipeline alone, as one rank of the run reads it (its loader
// threads, its sampler or shard order, its transforms), with no model and no run folder: how
// many images a second it makes, and where one thread's time goes (read, decode, transforms,
// collate), to tell whether the pipeline or the model is what a run waits on.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/experiment.hpp"

namespace runner::run {

struct DataBenchOptions {
  std::string split = "train";  ///< train, val or test
  size_t batches = 50;          ///< batches to time (fewer when the epoch has fewer)
  uint64_t epoch = 0;           ///< 0-based: the epoch's order (shuffle, shards)
  size_t rank = 0;              ///< which rank of the experiment's world reads
};

struct DataBenchResult {
  std::string split, dataset;
  size_t rank = 0, world_size = 1, loader_threads = 0, batch_size = 0;
  size_t batches = 0, samples = 0;  ///< timed
  size_t epoch_batches = 0;         ///< the rank's batches in the whole epoch
  double seconds = 0;               ///< wall time of the timed batches, loader threads at work
  /// One thread over the timed batches' first samples, stage by stage (seconds per image).
  size_t profiled = 0;
  bool encoded = false;  ///< false: read and decode are one stage (arrays in memory)
  double read = 0, decode = 0, transforms = 0, collate = 0;
  size_t reduced = 0;  ///< profiled JPEGs decoded at 1/2, 1/4 or 1/8 (data.reduced_decode)
  std::vector<int64_t> indices;  ///< dataset indices of the timed batches' samples, in order

  double images_per_s() const { return seconds > 0 ? samples / seconds : 0; }
};

/// Reads options.batches batches of `split` as rank options.rank of epoch options.epoch would.
/// Throws ConfigError for a split the data lacks, DataError for what reading finds.
DataBenchResult bench_data(const config::Experiment& e, const DataBenchOptions& options);

/// The figures in a person's words, a few lines.
std::string describe(const DataBenchResult& result);

}  // namespace runner::run
