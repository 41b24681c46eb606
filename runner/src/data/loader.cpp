#include "data/loader.hpp"

#include <algorithm>
#include <chrono>

#include <set>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "runner/error.hpp"
#include "util/seconds_since.hpp"

namespace runner::data {
namespace {

SamplerOptions sampler_options(const LoaderOptions& o) {
  SamplerOptions s;
  s.world_size = o.world_size;
  s.rank = o.rank;
  s.shuffle = o.shuffle;
  s.seed = o.seed;
  s.drop_last = o.drop_last;
  s.samples_per_epoch = o.samples_per_epoch;
  s.weights = o.sampling_weights;
  s.shards = o.shards;
  return s;
}

// Whether `what` has not been warned about before in this process (a file left out every epoch
// is said once).
bool warn_once(const std::string& what) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  return warned.insert(what).second;
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, Pipeline pipeline,
                       LoaderOptions options)
    : dataset_(std::move(dataset)),
      pipeline_(std::move(pipeline)),
      options_(options),
      sampler_(dataset_ ? dataset_->size() : 0, sampler_options(options)) {
  if (!dataset_) throw Error("data loader: no dataset");
  reader_ = std::make_unique<SampleReader>(*dataset_, pipeline_, options_.reduced_decode);
  if (options_.batch_size == 0) throw ConfigError("data loader: batch_size must be at least 1");
  options_.prefetch = std::max<size_t>({options_.prefetch, options_.num_workers, 1});
  if (options_.resident) {
    batched_ = std::make_unique<BatchedPipeline>(pipeline_, options_.transforms_key);
    // Batches are made in the consumer's thread. On a GPU the work is queued and returns at
    // once; on the CPU a batch costs ~1 ms per 100 images on the intra-op pool, and ATen calls
    // from loader threads would start thread teams of their own beside the training step's
    // (measured: convnext_atto trained 30% slower with 2 loader threads, bench/data_device.sh).
    options_.num_workers = 0;
  }
}

DataLoader::~DataLoader() { stop_workers(); }

size_t DataLoader::num_batches() const {
  const size_t n = sampler_.num_samples();
  const size_t bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  consumed_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void DataLoader::start_epoch(uint64_t epoch, size_t skip_batches) {
  stop_workers();
  started_ = true;
  epoch_ = epoch;
  order_ = sampler_.indices(epoch);
  end_batch_ = num_batches();
  next_batch_ = std::min(skip_batches, end_batch_);
  next_to_claim_ = next_batch_;
  ready_.clear();
  made_ahead_.reset();
  stopping_ = false;
  for (size_t i = 0; i < options_.num_workers; ++i)
    workers_.emplace_back([this] { worker_loop(); });
}

Batch DataLoader::make_resident_batch(size_t begin, size_t end) const {
  Batch batch;
  batch.size = static_cast<int64_t>(end - begin);
  batch.padding = torch::empty({batch.size}, torch::kBool);
  bool* padding = batch.padding.data_ptr<bool>();
  std::vector<int64_t> indices, keys;
  for (size_t pos = begin; pos < end; ++pos) {
    indices.push_back(static_cast<int64_t>(order_[pos].index));
    keys.push_back(static_cast<int64_t>(order_[pos].key));
    padding[pos - begin] = order_[pos].padding;
  }
  batch.indices = torch::tensor(indices, torch::kLong);
  const ResidentSplit& split = *options_.resident;
  const torch::Tensor rows = batch.indices.to(split.images.device());
  batch.labels = split.labels.index_select(0, rows);
  batch.images = batched_->apply(split.images.index_select(0, rows), keys, options_.seed, epoch_);
  return batch;
}

Batch DataLoader::make_batch(size_t batch_number) const {
  const size_t begin = batch_number * options_.batch_size;
  const size_t end = std::min(begin + options_.batch_size, order_.size());
  if (batched_) return make_resident_batch(begin, end);
  std::vector<Sample> samples;
  std::vector<size_t> indices;
  std::vector<bool> padding;
  samples.reserve(end - begin);
  for (size_t pos = begin; pos < end; ++pos) {
    const SampledIndex& item = order_[pos];
    try {
      Sample sample = reader_->read(item, options_.seed, epoch_);
      samples.push_back(std::move(sample));
    } catch (const StorageError&) {
      throw;  // the storage does not answer: the run stops (last.pt), no sample is left out
    } catch (const std::exception& e) {
      const std::string file = sample_file(*dataset_, item.index);
      const std::string what =
          file.empty() ? "sample " + std::to_string(item.index) + " of " + dataset_->describe()
                       : file;
      // A dataset's own error names the file first ("F: cannot read the image ...").
      const std::string reason = std::string(e.what()).rfind(what, 0) == 0 ? std::string(e.what())
                                                                           : what + ": " + e.what();
      if (!options_.skip_bad_images) throw DataError(reason + " (or set data.on_bad_image: skip)");
      ++skipped_;
      if (warn_once(what)) spdlog::warn("data.on_bad_image skip: left out {}", reason);
      continue;
    }
    indices.push_back(item.index);
    padding.push_back(item.padding);
  }
  if (samples.empty())
    throw DataError("no sample of batch " + std::to_string(batch_number) + " of " +
                    dataset_->describe() + " could be used (data.on_bad_image skip left out " +
                    std::to_string(end - begin) + "): check the files");
  Batch batch = collate(samples, indices, padding, options_.pin_memory);
  if (options_.multi_hot_classes > 0)
    batch.targets = multi_hot_targets(*dataset_, batch.indices, options_.multi_hot_classes);
  return batch;
}

void DataLoader::worker_loop() {
  while (true) {
    size_t b = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Claim batches in order, at most `prefetch` ahead of the consumer (bounded memory).
      consumed_.wait(lock, [this] {
        return stopping_ ||
               (next_to_claim_ < end_batch_ && next_to_claim_ < next_batch_ + options_.prefetch);
      });
      if (stopping_) return;
      b = next_to_claim_++;
    }
    Slot slot;
    try {
      slot.batch = make_batch(b);
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_[b] = std::move(slot);
    }
    produced_.notify_all();
  }
}

std::optional<Batch> DataLoader::next() {
  if (!started_) start_epoch(0);
  if (next_batch_ >= end_batch_) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<Batch> batch;
  if (workers_.empty()) {
    Slot slot = made_ahead_ ? std::move(*made_ahead_) : Slot{};
    made_ahead_.reset();
    ++next_batch_;
    if (slot.error) std::rethrow_exception(slot.error);
    batch = slot.batch ? std::move(slot.batch) : make_batch(next_batch_ - 1);
  } else {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      produced_.wait(lock, [this] { return ready_.count(next_batch_) != 0; });
      auto it = ready_.find(next_batch_);
      slot = std::move(it->second);
      ready_.erase(it);
      ++next_batch_;
    }
    consumed_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    batch = std::move(slot.batch);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.wait_seconds += util::seconds_since(t0);
  stats_.batches += 1;
  stats_.samples += static_cast<size_t>(batch->size);
  return batch;
}

bool DataLoader::next_loads() {
  if (!started_) start_epoch(0);
  if (next_batch_ >= end_batch_) return true;
  if (workers_.empty()) {
    if (!made_ahead_) {
      made_ahead_.emplace();
      try {
        made_ahead_->batch = make_batch(next_batch_);
      } catch (...) {
        made_ahead_->error = std::current_exception();
      }
    }
    return !made_ahead_->error;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  produced_.wait(lock, [this] { return ready_.count(next_batch_) != 0; });
  return !ready_.at(next_batch_).error;
}

std::string DataLoader::why_next_fails() {
  if (next_loads()) return "";
  try {
    next();  // rethrows what making the batch threw
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

LoaderStats DataLoader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  LoaderStats stats = stats_;
  stats.worker_threads = workers_.size();
  stats.prefetch = options_.prefetch;
  stats.skipped = skipped_;
  if (options_.resident) stats.made_on = options_.resident->images.device().str();
  return stats;
}

}  // namespace runner::data
