#include "run/bench_data.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "data/loader.hpp"
#include "data/sample_reader.hpp"
#include "run/build_run_parts.hpp"
#include "run/rank_loader.hpp"
#include "runner/error.hpp"
#include "util/counted.hpp"

namespace runner::run {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Most samples the one-thread account reads: enough for stable shares, few enough to be quick.
constexpr size_t kProfiledSamples = 512;

// One thread through the stages of `indices`' samples (the loader's work, taken apart).
void profile_stages(const data::Dataset& dataset, const data::Pipeline& pipeline,
                    bool reduced_decode, const std::vector<int64_t>& indices, uint64_t seed,
                    uint64_t epoch, DataBenchResult& result) {
  const data::EncodedDataset* encoded = data::encoded_form(dataset);
  const data::SampleReader reader(dataset, pipeline, reduced_decode);
  result.encoded = encoded != nullptr;
  std::vector<data::Sample> samples;
  std::vector<size_t> positions;
  for (const int64_t index : indices) {
    if (samples.size() >= kProfiledSamples) break;
    const auto i = static_cast<size_t>(index);
    auto start = Clock::now();
    data::Sample sample;
    int rows = 0, cols = 0, reduction = 1;
    if (encoded) {
      const std::string bytes = encoded->encoded(i);
      result.read += since(start);
      start = Clock::now();
      reduction = reader.reduction(bytes, seed, epoch, i, rows, cols);
      sample = encoded->decode(i, bytes, reduction);
      result.decode += since(start);
      if (reduction > 1) ++result.reduced;
    } else {
      sample = dataset.get(i);
      result.read += since(start);
    }
    start = Clock::now();
    reader.transform(sample, seed, epoch, i, rows, cols, reduction);
    result.transforms += since(start);
    samples.push_back(std::move(sample));
    positions.push_back(i);
  }
  // Collated in the run's batches, as the loader does (the memory of one reused by the next).
  const size_t batch = std::max<size_t>(1, result.batch_size);
  for (size_t begin = 0; begin < samples.size(); begin += batch) {
    const size_t end = std::min(samples.size(), begin + batch);
    const std::vector<data::Sample> part(samples.begin() + begin, samples.begin() + end);
    const std::vector<size_t> where(positions.begin() + begin, positions.begin() + end);
    const auto start = Clock::now();
    data::collate(part, where, std::vector<bool>(part.size(), false));
    result.collate += since(start);
  }
  result.profiled = samples.size();
}

}  // namespace

DataBenchResult bench_data(const config::Experiment& e, const DataBenchOptions& options) {
  const config::ExperimentOptions& o = e.options;
  PartsRequest request;
  request.model = false;
  request.training = false;
  request.pretrained = false;
  const train::RunParts parts = build_run_parts(e, request);
  const bool training = options.split == "train";
  const auto& dataset = training                 ? parts.splits.train
                        : options.split == "val" ? parts.splits.val
                                                 : parts.splits.test;
  if (!dataset || dataset->size() == 0)
    throw ConfigError("runner bench-data: the dataset has no " + options.split + " split");
  data::LoaderOptions lo = rank_loader_options(o, parts, training, options.rank);
  if (options.rank >= lo.world_size)
    throw ConfigError("runner bench-data: --rank " + std::to_string(options.rank) +
                      " is not below the experiment's " +
                      util::counted(static_cast<int64_t>(lo.world_size), "process", "processes"));
  const data::Pipeline& pipeline = training ? parts.train_pipeline : parts.eval_pipeline;

  DataBenchResult result;
  result.split = options.split;
  result.dataset = dataset->describe();
  result.rank = options.rank;
  result.world_size = lo.world_size;
  result.batch_size = lo.batch_size;
  data::DataLoader loader(dataset, pipeline, lo);
  result.epoch_batches = loader.num_batches();
  const auto start = Clock::now();
  loader.start_epoch(options.epoch);
  while (result.batches < options.batches) {
    auto batch = loader.next();
    if (!batch) break;
    ++result.batches;
    result.samples += static_cast<size_t>(batch->size);
    const auto* index = batch->indices.data_ptr<int64_t>();
    result.indices.insert(result.indices.end(), index, index + batch->size);
  }
  result.seconds = since(start);
  result.loader_threads = loader.stats().worker_threads;
  profile_stages(*dataset, pipeline, lo.reduced_decode, result.indices, o.seed, options.epoch,
                 result);
  return result;
}

std::string describe(const DataBenchResult& r) {
  std::string text = fmt::format(
      "bench-data: {} split ({}), rank {} of {}, {} of the epoch's {} batches of {}\n", r.split,
      r.dataset, r.rank, r.world_size, r.batches, r.epoch_batches, r.batch_size);
  text += fmt::format("  pipeline   {:.0f} images/s ({} images in {:.2f} s, {})\n",
                      r.images_per_s(), r.samples, r.seconds,
                      r.loader_threads == 0 ? std::string("loaded in the calling thread")
                                            : util::counted(static_cast<int64_t>(r.loader_threads),
                                                            "loader thread", "loader threads"));
  const double total = r.read + r.decode + r.transforms + r.collate;
  if (r.profiled == 0 || total <= 0) return text;
  const auto stage = [&](const char* name, double seconds) {
    return fmt::format("{} {:.0f}% ({:.3f} ms/image)", name, 100 * seconds / total,
                       1e3 * seconds / static_cast<double>(r.profiled));
  };
  text += fmt::format("  one thread {:.0f} images/s over {} images: {}, {}{}, {}\n",
                      static_cast<double>(r.profiled) / total, r.profiled,
                      stage(r.encoded ? "read" : "read+decode", r.read),
                      r.encoded ? stage("decode", r.decode) + ", " : std::string(),
                      stage("transforms", r.transforms), stage("collate", r.collate));
  if (r.reduced > 0)
    text += fmt::format(
        "  {} of the {} images were JPEGs decoded at 1/2, 1/4 or 1/8 (data.reduced_decode)\n",
        r.reduced, r.profiled);
  return text;
}

}  // namespace runner::run
