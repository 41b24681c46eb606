// What the training loop tells its observer: each epoch's record, and the training's account
// as fit() ends (summary.json's best, speed, data and gradient sync).

#include <spdlog/spdlog.h>

#include "dist/world.hpp"
#include "output/metrics_writer.hpp"
#include "train/device_options.hpp"
#include "train/training_loop.hpp"

namespace runner::train {

void TrainingLoop::report_epoch(const EpochResult& r, double seconds, bool complete,
                                const Evaluation& evaluation) {
  // The epoch that ran: position_.epoch moved past it when it was complete.
  const int64_t epoch = complete ? position_.epoch : position_.epoch + 1;
  output::EpochRecord record;
  record.epoch = epoch;
  record.epochs = train_.epochs;
  record.step = position_.optimizer_steps;
  record.loss = r.loss;
  record.images_per_s = images_per_s_;
  record.epoch_seconds = seconds;
  record.peak_rss_mib = output::peak_rss_mib();
  record.peak_gpu_mib = peak_gpu_mib(rank_.device);
  record.partial = !complete;
  record.validation = evaluation.metrics;
  if (loader_->skips_bad_images()) {  // every rank alike: the same setting
    const auto left_out = static_cast<double>(loader_->stats().skipped - skipped_train_before_);
    skipped_train_before_ = loader_->stats().skipped;
    record.skipped_train = static_cast<int64_t>(rank_.world->all_reduce(left_out));
    record.skipped_val = evaluation.skipped;
    skipped_train_total_ += *record.skipped_train;
    if (rank_.world->is_main() && (*record.skipped_train > 0 || evaluation.skipped > 0))
      spdlog::warn(
          "data.on_bad_image skip: epoch {} left out {} training and {} validation "
          "sample(s) it could not read",
          epoch, *record.skipped_train, evaluation.skipped);
  }
  // Whole batches on every rank (the training loader drops the tail), less what was skipped.
  last_epoch_train_samples_ =
      static_cast<int64_t>(loader_->position()) * *train_.batch_size * rank_.world->world_size() -
      record.skipped_train.value_or(0);
  const auto& val = parts_.splits.val;
  last_epoch_val_samples_ = val ? static_cast<int64_t>(val->size()) - evaluation.skipped : 0;
  if (rank_.world->is_main()) spdlog::info("{}", output::epoch_line(record));
  observer_.on_epoch(record);
}

output::TrainingReport TrainingLoop::training_report() const {
  output::TrainingReport r;
  r.best_metric = best_.metric();
  r.best_mode = best_.mode();
  r.best_value = best_.value();
  r.best_epoch = best_.value() ? best_.epoch() : 0;
  if (early_stopped_) r.early_stopped = {{early_stopped_->epoch, early_stopped_->reason}};
  if (pruned_) r.pruned = {{pruned_->epoch, pruned_->reason}};
  r.train_images_per_s = images_per_s_;
  r.first_step_unix_time = first_step_unix_time_;
  r.mean_epoch_seconds = epochs_timed_ ? epoch_seconds_sum_ / epochs_timed_ : 0.0;
  const data::LoaderStats loader = loader_->stats();
  r.loader_worker_threads = static_cast<int64_t>(loader.worker_threads);
  r.loader_prefetch_batches = static_cast<int64_t>(loader.prefetch);
  r.batches_made_on = loader.made_on;
  r.samples_train = last_epoch_train_samples_;
  r.samples_val = last_epoch_val_samples_;
  if (loader_->skips_bad_images()) r.skipped_train_val = {{skipped_train_total_, skipped_val_}};
  if (const dist::DataParallel* dp = rig_->data_parallel())
    r.gradient_sync = {{static_cast<int64_t>(dp->bucket_count()),
                        dp->options().find_unused_parameters, dp->transport(),
                        dp->shards() ? "sharded" : "replicated"}};
  return r;
}

}  // namespace runner::train
