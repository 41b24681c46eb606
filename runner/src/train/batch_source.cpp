#include "train/batch_source.hpp"

#include <spdlog/spdlog.h>

#include "compat/torch_compat.hpp"
#include "data/class_sampling.hpp"
#include "dist/world.hpp"
#include "runner/error.hpp"
#include "train/loader_options.hpp"
#include "util/counted.hpp"

namespace runner::train {
namespace {

// data.device resolved: the device batches are made on, or nullopt for the per-sample loader.
// auto: on a GPU when the training split can be kept there, else the loader (said once, with
// why). On CPU the loader: bench/data_device.sh finds whole CPU runs equally fast either way
// (data waits are under 1% of the step on both paths), and the loader streams, with no decoding
// before the first step and no copy of the split per rank.
std::optional<torch::Device> resolve_data_device(
    const RankContext& rank, const RunParts& parts, const config::DataOptions& data,
    std::map<const data::Dataset*, std::shared_ptr<const data::ResidentSplit>>& resident) {
  if (data.device == "loader") return std::nullopt;
  if (data.device == "cpu") return torch::Device(torch::kCPU);
  if (data.device == "cuda") {
    if (!rank.device.is_cuda())
      throw ConfigError("data.device is cuda but this rank trains on " + rank.device.str() +
                        ": set data.device: cpu, auto or loader");
    return rank.device;
  }
  // data.on_bad_image skip leaves samples out as the loader makes batches; multi-hot targets
  // are made by the loader.
  if (!rank.device.is_cuda() || !parts.splits.train || data.on_bad_image == "skip" ||
      data.multi_hot)
    return std::nullopt;
  const data::ResidentChoice chosen =
      data::choose_resident(*parts.splits.train,
                            {{&parts.train_pipeline, "data.train_transforms"},
                             {&parts.eval_pipeline, "data.eval_transforms"}},
                            rank.device, static_cast<double>(compat::cuda_total_bytes(rank.device)),
                            data.device_memory_share);
  if (chosen.split) {
    resident[parts.splits.train.get()] = chosen.split;
    return rank.device;
  }
  if (rank.world->is_main())
    spdlog::info("data.device auto: batches are made by the loader, as {}", chosen.why_not);
  return std::nullopt;
}

}  // namespace

BatchSource::BatchSource(const RankContext& rank, const RunParts& parts,
                         const config::DataOptions& data, uint64_t seed)
    : rank_(rank), parts_(parts), data_(data), seed_(seed) {
  data_device_ = resolve_data_device(rank_, parts_, data_, resident_);
  sampling_weights_ =
      data::training_sampling_weights(data_.sampler, data_.sampler_weights, parts_.splits);
}

data::LoaderOptions BatchSource::options(int64_t batch_size, bool training,
                                         const std::shared_ptr<data::Dataset>& dataset) {
  data::LoaderOptions lo = pass_loader_options(
      data_, seed_, training ? dataset.get() : nullptr, parts_.splits.num_classes,
      static_cast<size_t>(batch_size), static_cast<size_t>(rank_.world->rank()),
      static_cast<size_t>(rank_.world->world_size()), sampling_weights_);
  if (data_device_ && dataset) {
    auto& resident = resident_[dataset.get()];
    if (!resident) resident = data::make_resident_split(*dataset, *data_device_);
    lo.resident = resident;
  }
  lo.pin_memory = rank_.device.is_cuda();
  return lo;
}

std::unique_ptr<data::DataLoader> BatchSource::training_loader(int64_t batch_size) {
  const auto& train = parts_.splits.train;
  if (!train) throw ConfigError("the dataset has no training split to train on");
  auto loader = std::make_unique<data::DataLoader>(train, parts_.train_pipeline,
                                                   options(batch_size, true, train));
  if (loader->num_batches() == 0)
    throw ConfigError("train.batch_size " + std::to_string(batch_size) + " x " +
                      util::counted(rank_.world->world_size(), "process", "processes") +
                      " is larger than the training " +
                      (data_.samples_per_epoch ? "epoch" : "split") + " (" +
                      std::to_string(data_.samples_per_epoch.value_or(train->size())) +
                      " samples): lower train.batch_size or raise data.limit.train" +
                      (data_.samples_per_epoch ? " or data.samples_per_epoch" : ""));
  return loader;
}

std::unique_ptr<data::DataLoader> BatchSource::evaluation_loader(
    const std::shared_ptr<data::Dataset>& dataset, int64_t batch_size,
    std::optional<bool> skip_bad_images) {
  data::LoaderOptions lo = options(batch_size, false, dataset);
  if (skip_bad_images) lo.skip_bad_images = *skip_bad_images;
  return std::make_unique<data::DataLoader>(dataset, parts_.eval_pipeline, lo);
}

}  // namespace runner::train
