#include "train/evaluator.hpp"

#include "data/batch.hpp"

#include <cmath>

#include <spdlog/spdlog.h>

#include "dist/world.hpp"
#include "log/logging.hpp"
#include "output/progress.hpp"
#include "runner/error.hpp"
#include "train/autocast_guard.hpp"
#include "train/shared_failure.hpp"
#include "train/test_time_augmentation.hpp"

namespace runner::train {

EvaluationViews evaluation_views(const config::ExperimentOptions& options) {
  EvaluationViews views;
  views.predict = options.predict.tta;
  if (options.train.eval_tta) views.validate = options.predict.tta;
  views.multilabel = options.multilabel;
  return views;
}

Evaluator::Evaluator(const RankContext& rank, const RunParts& parts, BatchSource& batches,
                     int64_t batch_size, int64_t log_every, EvaluationViews views)
    : rank_(rank),
      parts_(parts),
      batches_(batches),
      batch_size_(batch_size),
      log_every_(log_every),
      views_(std::move(views)) {}

Predictions Evaluator::predict(const std::shared_ptr<data::Dataset>& dataset,
                               std::optional<bool> skip_bad_images) {
  return infer(dataset, skip_bad_images, views_.predict);
}

Predictions Evaluator::infer(const std::shared_ptr<data::Dataset>& dataset,
                             std::optional<bool> skip_bad_images,
                             const std::vector<config::TtaView>& views) {
  dist::World& world = *rank_.world;
  models::Model& model = *parts_.model;
  const auto loader = batches_.evaluation_loader(dataset, batch_size_, skip_bad_images);
  const bool skipping = loader->skips_bad_images();
  loader->start_epoch(0);
  if (world.is_main())
    spdlog::debug("inference pass: {} samples in {} batches of {} per process", dataset->size(),
                  loader->num_batches(), batch_size_);
  // Each rank's BatchNorm statistics moved in its last training forward; evaluate with rank 0's
  // everywhere, as the checkpoint holds them.
  if (world.distributed()) world.broadcast_module(model);
  model.eval();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> gathered, gathered_indices;
  // A line for passes long enough to wonder about (a big validation or test split).
  output::Progress progress(world.is_main(), log::stdout_is_terminal(), log_every_);
  progress.start(dataset.get() == parts_.splits.val.get() ? "validate" : "predict",
                 static_cast<int64_t>(loader->num_batches()), 0, /*quiet_seconds=*/3.0);
  int64_t done = 0;
  while (true) {
    // A batch one rank cannot make ends the pass on every rank, with its line.
    std::string failure;
    std::optional<data::Batch> batch;
    try {
      batch = loader->next();
    } catch (const Error& error) {  // a bad image, or a storage that no longer answers
      failure = error.what();
    }
    if (const std::string agreed = agree_on_failure(world, failure); !agreed.empty()) {
      model.train();
      throw DataError(agreed);
    }
    if (!batch) break;
    torch::Tensor logits;
    {
      // Inference mode skips autograd's version counters and view tracking too; the logits
      // leave it as a plain copy, so the collectives below see an ordinary tensor.
      c10::InferenceMode inference;
      AutocastGuard autocast(rank_.precision, rank_.device);
      logits = tta_logits([&](const torch::Tensor& images) { return model.forward(images); },
                          batch->images.to(rank_.device, true), views, views_.multilabel)
                   .to(torch::kFloat);
    }
    logits = logits.clone();
    const auto valid = batch->padding.logical_not().to(logits.device());
    gathered.push_back(dist::gather_for_metrics(world, logits, valid).cpu());
    // Left-out samples break the dataset order the rows are in otherwise: their indices say it.
    if (skipping)
      gathered_indices.push_back(
          dist::gather_for_metrics(world, batch->indices.to(logits.device()), valid).cpu());
    progress.update(++done, 0.0, NAN);
  }
  progress.finish();
  model.train();
  Predictions out;
  out.logits = gathered.empty() ? torch::empty({0, 0}) : torch::cat(gathered);
  if (skipping && !gathered_indices.empty()) {
    // Rows in dataset order again: a rank that left a sample out shifted its interleaving.
    const torch::Tensor unsorted = torch::cat(gathered_indices).to(torch::kLong);
    const torch::Tensor order = unsorted.argsort();
    out.logits = out.logits.index_select(0, order);
    const torch::Tensor indices = unsorted.index_select(0, order).contiguous();
    out.indices.assign(indices.data_ptr<int64_t>(), indices.data_ptr<int64_t>() + indices.numel());
  } else {
    for (int64_t i = 0; i < out.logits.size(0); ++i) out.indices.push_back(i);
  }
  return out;
}

Evaluation Evaluator::evaluate() {
  const auto& val = parts_.splits.val;
  if (!val || val->size() == 0) return {};
  Evaluation out;
  Predictions predictions = infer(val, std::nullopt, views_.validate);
  out.logits = predictions.logits;
  for (const int64_t i : predictions.indices)
    out.labels.push_back(val->label(static_cast<size_t>(i)));
  if (out.logits.size(0) != static_cast<int64_t>(out.labels.size()))
    throw Error("internal: gathered " + std::to_string(out.logits.size(0)) + " predictions for " +
                std::to_string(out.labels.size()) + " validation samples");
  out.skipped = static_cast<int64_t>(val->size() - out.labels.size());
  out.indices = std::move(predictions.indices);
  torch::Tensor labels = torch::tensor(out.labels, torch::kInt64);
  if (views_.multilabel) {  // every label of each sample, as the loss and the metrics take them
    out.targets =
        data::multi_hot_targets(*val, torch::tensor(out.indices, torch::kLong), out.logits.size(1));
    labels = out.targets;
  }
  out.metrics["loss"] = parts_.loss->compute(out.logits, labels).item<double>();
  for (const auto& m : parts_.metrics) out.metrics[m->name()] = m->compute(out.logits, labels);
  return out;
}

}  // namespace runner::train
