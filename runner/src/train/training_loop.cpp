#include "train/training_loop.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "dist/world.hpp"
#include "log/logging.hpp"
#include "output/metrics_writer.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/run_checkpoints.hpp"
#include "train/shared_failure.hpp"
#include "train/step_flags.hpp"
#include "util/seconds_since.hpp"
#include "util/signal_names.hpp"

namespace runner::train {

TrainingLoop::TrainingLoop(const RankContext& rank, RunParts& parts,
                           const config::ExperimentOptions& options, BatchSource& batches,
                           Evaluator& evaluator, output::RunObserver& observer,
                           std::string checkpoint_dir)
    : rank_(rank),
      parts_(parts),
      train_(options.train),
      evaluator_(evaluator),
      observer_(observer),
      checkpoints_(rank, parts, std::move(checkpoint_dir)),
      best_key_(train_.best.weights == "ema" ? "ema_" + train_.best.metric : train_.best.metric),
      best_(best_key_, resolve_best_mode(train_.best, parts.metrics), train_.early_stopping),
      progress_(rank.world->is_main(), log::stdout_is_terminal(), train_.log_every_steps),
      profiler_(train_.profile, rank.world->is_main(), rank.device, observer) {
  if (!train_.batch_size) throw Error("internal: train.batch_size auto was not resolved");
  segment_start_ = last_save_ = Clock::now();
  loader_ = batches.training_loader(*train_.batch_size);
  num_batches_ = static_cast<int64_t>(loader_->num_batches());
  steps_per_epoch_ = config::optimizer_steps_per_epoch(num_batches_, train_.grad_accum_steps);
  schedule_steps_ = steps_per_epoch_ * train_.epochs;
  // metrics.jsonl's step records (the report's curves): at least report_points over the run, at
  // most one per step, never sparser than train.log_every_steps (the console's cadence). A run
  // of 15 steps has 15 points; one of 100000 steps one per log_every_steps.
  const int64_t run_steps = std::min(schedule_steps_, train_.max_steps.value_or(schedule_steps_));
  record_every_ = std::clamp<int64_t>(run_steps / std::max<int64_t>(1, train_.report_points), 1,
                                      train_.log_every_steps);
  StepRigOptions rig;
  rig.clip_grad_norm = train_.clip_grad_norm;
  rig.ema = train_.ema.enabled;
  rig.gradient_sync = train_.gradient_sync;
  rig.lrs = schedule_lrs(parts, steps_per_epoch_, schedule_steps_, rank.world->is_main());
  position_.lr = rig.lrs.front();
  rig_ = std::make_unique<StepRig>(rank, parts.model, *parts.optimizer, *parts.loss, rig);
  seed_ = options.seed;
  // After the rig: its DataParallel made every rank's weights rank 0's.
  if (train_.ema.enabled) {
    ema_ = std::make_unique<ModelEma>(*parts.model, train_.ema);
    rig_->step().attach_ema(ema_.get());
  }
  if (train_.mixup.enabled()) {
    if (!losses::takes_soft_targets(*parts.loss))
      throw ConfigError("train.mixup trains with soft targets, which loss '" + parts.about.loss +
                        "' does not take: use loss: {name: cross_entropy} or switch mixup off");
    const int64_t classes = parts.about.model_options
                                ? parts.about.model_options->num_classes
                                : static_cast<int64_t>(parts.splits.class_names.size());
    mixup_ = std::make_unique<Mixup>(train_.mixup, classes);
  }
}

TrainingLoop::~TrainingLoop() = default;

double TrainingLoop::run_seconds() const {
  return seconds_before_ + util::seconds_since(segment_start_);
}

void TrainingLoop::resume() {
  const ResumedCheckpoint resumed = checkpoints_.resume(ema_.get());
  if (resumed.ema_updates) ema_->set_updates(*resumed.ema_updates);
  const CheckpointState& state = resumed.state;
  const double lr = position_.lr;  // the schedule's first, until the first read
  position_ = state.position;
  position_.lr = lr;
  rig_->schedule().set_steps_taken(position_.optimizer_steps);
  rig_->step().set_nonfinite_run(position_.nonfinite_run);
  best_.load_json(state.best);
  rig_->scaler().load_state(state.scaler);
  seconds_before_ = state.run_seconds;
  resumed_at_ = position_.optimizer_steps;
  if (!rank_.world->is_main()) return;
  spdlog::info("resumed from checkpoints/last.pt: epoch {}, batch {} of it, optimizer step {}",
               position_.epoch + 1, position_.batches_done, position_.optimizer_steps);
  if (state.schedule_steps > 0 && state.schedule_steps != schedule_steps_)
    spdlog::warn("{}", schedule_change_note(parts_, steps_per_epoch_, state.schedule_steps,
                                            schedule_steps_, position_.optimizer_steps));
}

FitResult TrainingLoop::fit() {
  observer_.on_start(resumed_at_);
  FitResult result;
  try {
    result = fit_epochs();
    profiler_.finish();
  } catch (...) {
    try {
      observer_.on_training(training_report());
    } catch (...) {  // the failure already on its way is the one the run reports
    }
    throw;
  }
  observer_.on_training(training_report());
  return result;
}

FitResult TrainingLoop::fit_epochs() {
  const bool main = rank_.world->is_main();
  FitResult result;
  while (position_.epoch < train_.epochs && !early_stopped_ && !pruned_) {
    const auto epoch_start = Clock::now();
    const int64_t epoch = position_.epoch;
    const EpochResult r = train_epoch();
    if (r.batch_failed)
      fail_with_saved_run("a training batch",
                          agree_on_failure(*rank_.world, loader_->why_next_fails()));
    const bool complete = position_.batches_done >= num_batches_;
    if (complete) {
      ++position_.epoch;
      position_.batches_done = 0;
    }
    const double seconds = util::seconds_since(epoch_start);
    if (r.stopped_by_signal && !complete) {
      // Stopped within the epoch: no validation (a resume finishes the epoch and validates it),
      // only the position, so that the resumed run goes on as if it had never stopped.
      result.stopped_by = r.stopped_by_signal;
      save("last", true);
      if (main)
        spdlog::warn(
            "{}: stopped at epoch {}, batch {} of {}, optimizer step {}; saved "
            "checkpoints/last.pt",
            util::signal_name(result.stopped_by), epoch + 1, position_.batches_done, num_batches_,
            position_.optimizer_steps);
      break;
    }
    // Every pass counts, also one cut short by train.max_steps: the benchmark compares such runs.
    epoch_seconds_sum_ += seconds;
    ++epochs_timed_;
    stage_ = "validate";
    Evaluation evaluation, ema_evaluation;  // train.ema: the average's, as ema_<metric>
    try {
      evaluation = evaluator_.evaluate();
      if (ema_) {
        const EmaWeightsInModel averaged(ema_.get(), *parts_.model);
        ema_evaluation = evaluator_.evaluate();
        for (const auto& [name, value] : ema_evaluation.metrics)
          evaluation.metrics["ema_" + name] = value;
      }
    } catch (const DataError& error) {  // the same on every rank: the evaluator agreed on it
      fail_with_saved_run("a validation batch", error.what());
    }
    stage_ = "train";
    skipped_val_ = evaluation.skipped;
    result.last = evaluation.metrics;
    report_epoch(r, seconds, complete, evaluation);
    // Only whole epochs compete for best.pt and count for early stopping: an evaluation after a
    // mid-epoch stop (train.max_steps) is logged, but a run resumed from there must end as if it
    // had never stopped.
    if (complete && evaluation.metrics.count(best_key_))
      judge_epoch(train_.best.weights == "ema" ? ema_evaluation : evaluation,
                  evaluation.metrics.at(best_key_));
    save("last", true);
    if (r.stopped_by_max_steps) {
      if (main) spdlog::info("stopped after train.max_steps={} optimizer steps", *train_.max_steps);
      break;
    }
    // A signal during the validation pass or at the epoch's last step: the epoch is complete
    // and saved, stop here.
    result.stopped_by = r.stopped_by_signal ? r.stopped_by_signal
                                            : agree_on_step_flags(*rank_.world, false).stop_signal;
    if (result.stopped_by) {
      if (main)
        spdlog::warn("{}: stopped after epoch {}; saved checkpoints/last.pt",
                     util::signal_name(result.stopped_by), epoch + 1);
      break;
    }
  }
  result.pruned = pruned_.has_value();
  return result;
}

int64_t TrainingLoop::batches_after_this_epoch() const {
  int64_t later = (train_.epochs - position_.epoch - 1) * num_batches_;
  if (train_.max_steps)  // the run ends at train.max_steps optimizer steps
    later = std::min(later, std::max<int64_t>(0, (*train_.max_steps - position_.optimizer_steps) *
                                                         train_.grad_accum_steps -
                                                     (num_batches_ - position_.batches_done)));
  return later;
}

void TrainingLoop::follow_freeze(int64_t epoch) {
  models::FrozenPart& frozen = parts_.frozen;
  if (frozen.frozen && train_.unfreeze_at_epoch && epoch >= *train_.unfreeze_at_epoch) {
    // Every rank at the same epoch: the gradient averaging is rebuilt for the new set.
    models::set_frozen(frozen, false);
    rig_->trainable_changed();
    if (rank_.world->is_main())
      spdlog::info(
          "epoch {}: model.freeze's part ({} parameters) trains from here on "
          "(train.unfreeze_at_epoch {})",
          epoch + 1, frozen.elements, *train_.unfreeze_at_epoch);
  }
  models::keep_frozen_statistics(frozen);
}

TrainingLoop::EpochResult TrainingLoop::train_epoch() {
  EpochResult result;
  const int64_t epoch = position_.epoch, accum = train_.grad_accum_steps;
  parts_.model->train();
  follow_freeze(epoch);
  loader_->start_epoch(static_cast<uint64_t>(epoch), static_cast<size_t>(position_.batches_done));
  progress_.start("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(train_.epochs),
                  num_batches_, batches_after_this_epoch());
  const int64_t images_per_batch = *train_.batch_size * rank_.world->world_size();
  speed_.start_pass(loader_->stats().wait_seconds);
  if (position_.batches_done == 0) position_.epoch_totals = {};  // else a resume continues it
  rig_->step().take_window();  // a window begins with the epoch (or where a resume continues)
  // A first batch some rank cannot make: every rank stops before the epoch's first step.
  result.batch_failed =
      agree_on_step_flags(*rank_.world, false, !loader_->next_loads()).batch_fails;
  while (!result.batch_failed) {
    auto batch = loader_->next();
    if (!batch) break;
    const int64_t micro = position_.batches_done % accum;
    if (micro == 0) profiler_.step_begins(position_.steps_attempted + 1);
    const bool sync = micro == accum - 1 || position_.batches_done + 1 == num_batches_;
    // The gradient is the mean over the accumulation window; the epoch's last may be short.
    const int64_t window = std::min(accum, num_batches_ - (position_.batches_done - micro));
    const auto [images, targets] = training_batch(*batch, epoch);
    rig_->step().micro_batch(images, targets, window, sync);
    ++position_.batches_done;
    speed_.batch_done(images_per_batch);
    if (sync) {
      const bool go_on = after_step(result);
      profiler_.step_ends();
      if (!go_on) break;
    }
    progress_.update(position_.batches_done, speed_.images_per_s(), position_.epoch_totals.mean());
  }
  progress_.finish();
  images_per_s_ = speed_.pass_images_per_s();
  result.loss = position_.epoch_totals.mean();
  return result;
}

std::pair<torch::Tensor, torch::Tensor> TrainingLoop::training_batch(const data::Batch& batch,
                                                                     int64_t epoch) {
  torch::Tensor images = batch.images.to(rank_.device, /*non_blocking=*/true);
  // task: multilabel trains on the multi-hot targets (train.mixup is refused beside it).
  torch::Tensor labels = (batch.targets.defined() ? batch.targets : batch.labels)
                             .to(rank_.device, /*non_blocking=*/true);
  if (!mixup_) return {images, labels};
  return mixup_->mix_batch(seed_, epoch, position_.batches_done, rank_.world->rank(),
                           rank_.world->world_size(), images, labels);
}

bool TrainingLoop::after_step(EpochResult& result) {
  rig_->step().finish();
  ++position_.steps_attempted;
  if (first_step_unix_time_ == 0)
    first_step_unix_time_ =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const TrainingPosition& p = position_;
  // Every step, on the host (no device read): whether any rank was asked to stop and whether
  // rank 0's clock says a checkpoint is due, so that every rank stops and saves alike.
  const double every_seconds = 60.0 * train_.checkpoint_every_minutes.value_or(0.0);
  const bool save_due_here = rank_.world->is_main() && every_seconds > 0 &&
                             util::seconds_since(last_save_) >= every_seconds;
  // Whether the next batch loads is agreed on with the flags: a rank that cannot make it
  // would leave the others waiting in the next step's collectives.
  const StepFlags flags = agree_on_step_flags(*rank_.world, save_due_here, !loader_->next_loads());
  const bool window_end = p.steps_attempted % record_every_ == 0;
  const int64_t every_steps = train_.checkpoint_every_steps.value_or(0);
  const bool save_every_steps = every_steps > 0 && p.steps_attempted % every_steps == 0;
  // Steps taken are known at reads; near train.max_steps read every step to stop exactly.
  const auto& max_steps = train_.max_steps;
  const bool near_max_steps =
      max_steps && p.optimizer_steps + (p.steps_attempted - p.attempted_at_read) >= *max_steps;
  // The device's losses are read once per log window, and where the host needs them now.
  if (window_end || flags.stop_signal || flags.save_due || save_every_steps || near_max_steps ||
      p.batches_done == num_batches_)
    read_window();
  if (window_end) record_window();
  if (flags.stop_signal) {
    result.stopped_by_signal = flags.stop_signal;
    return false;
  }
  if (max_steps && p.optimizer_steps >= *max_steps) {
    result.stopped_by_max_steps = true;
    return false;
  }
  if (flags.batch_fails) {
    result.batch_failed = true;
    return false;
  }
  // Crash safety: last.pt within the epoch, at the sampler's position.
  if ((save_every_steps || flags.save_due) && p.batches_done < num_batches_) {
    save("last", true);
    if (rank_.world->is_main())
      spdlog::debug("checkpoints/last.pt at optimizer step {} (epoch {}, batch {})",
                    p.optimizer_steps, p.epoch + 1, p.batches_done);
  }
  return true;
}

void TrainingLoop::read_window() {
  position_.take(rig_->read_window(), train_.max_nonfinite_steps);
}

void TrainingLoop::record_window() {
  const SpeedMeter::Window speed = speed_.take_window(loader_->stats().wait_seconds);
  // A window whose steps the loss scaler all skipped has no step of its own to record.
  if (position_.optimizer_steps > position_.last_logged_step)
    observer_.on_window({position_.epoch + 1, position_.optimizer_steps, position_.window.mean(),
                         position_.lr, position_.scale, speed.images_per_s, speed.data_wait,
                         output::peak_rss_mib()});
  position_.last_logged_step = position_.optimizer_steps;
  position_.window = {};
}

void TrainingLoop::judge_epoch(const Evaluation& judged, double value) {
  const bool main = rank_.world->is_main();
  const int64_t epoch = position_.epoch;  // 1-based: the whole epoch just done
  if (best_.record(epoch, value)) {
    save("best", false);
    observer_.on_best({epoch, position_.optimizer_steps, best_.metric(), value, judged.logits,
                       judged.labels, parts_.splits.val.get(), parts_.splits.class_names,
                       judged.indices, judged.targets});
    if (main)
      spdlog::info("new best {} {:.4f} at epoch {}: checkpoints/best.pt", best_.metric(), value,
                   epoch);
  }
  if (best_.patience_exhausted()) {
    early_stopped_ = EarlyStop{
        epoch, fmt::format("no {} improvement for {} epoch(s); best {:.4f} "
                           "at epoch {}",
                           best_.metric(), best_.patience(), *best_.value(), best_.epoch())};
    if (main) spdlog::info("early stopping: {}", early_stopped_->reason);
  }
  if (const std::string why = trial_.after_epoch(*rank_.world, epoch, value); !why.empty()) {
    pruned_ = EarlyStop{epoch, why};
    if (main) spdlog::info("pruned after epoch {}: {}", epoch, why);
  }
}

void TrainingLoop::fail_with_saved_run(const std::string& what, const std::string& failure) {
  save("last", true);  // every rank is here: the agreement above made them stop together
  throw DataError(checkpoints_.failure_line(what, failure, position_, num_batches_));
}

void TrainingLoop::save(const std::string& name, bool with_optimizer) {
  // The position saved is the host's: what the device has summed since the last read joins it.
  if (position_.unread()) read_window();
  const CheckpointState state{
      position_,     best_.to_json(), rig_->scaler().state(), rank_.world->world_size(),
      run_seconds(), schedule_steps_};
  checkpoints_.save(name, with_optimizer, state, ema_.get());
  if (name == "last") last_save_ = Clock::now();
}

bool TrainingLoop::load_best() {
  if (!best_.value()) {
    rank_.world->barrier();  // as a load: every rank past the main process's writes
    return false;
  }
  const bool averaged = train_.best.weights == "ema";  // train.best.weights: the average predicts
  checkpoints_.load_best(averaged);
  if (rank_.world->is_main())
    spdlog::info("loaded the best {}weights ({} {:.4f}, epoch {})", averaged ? "averaged " : "",
                 best_.metric(), *best_.value(), best_.epoch());
  return true;
}

}  // namespace runner::train
