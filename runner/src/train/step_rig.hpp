#pragma once
// Everything one optimizer step works with, built together and in order: the SyncBatchNorm
// groups (train.bn_sync: sync), the gradient averaging (DataParallel), the fp16 loss scaler,
// the learning-rate schedule on the device and the step itself. The training loop and auto
// batch's trial steps both run on one, so the step they measure is the step that trains.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "dist/data_parallel.hpp"
#include "runner/losses/loss.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "train/device_schedule.hpp"
#include "train/grad_scaler.hpp"
#include "train/run_parts.hpp"
#include "train/train_step.hpp"

namespace runner::train {

struct StepRigOptions {
  std::optional<double> clip_grad_norm;  ///< train.clip_grad_norm
  /// train.ema: every rank swaps the weights with its average to evaluate it, which one copy
  /// of the weights shared by the ranks cannot take (the sharded step stays off).
  bool ema = false;
  /// How ranks average gradients; nullopt: they stay local (auto batch's trials, where a rank
  /// out of memory mid-backward would leave the others waiting in an all-reduce).
  std::optional<config::GradientSyncOptions> gradient_sync;
  /// The lr of each optimizer step of the run (later steps keep the last).
  std::vector<double> lrs;
};

/// What the device summed since the last read, agreed over the ranks, read in one host read.
struct WindowReading {
  double loss_sum = 0, finite = 0, nonfinite = 0;  ///< the window's losses, every rank's
  int64_t longest_nonfinite_run = 0;  ///< consecutive NaN/inf steps, the longest in the window
  int64_t nonfinite_run = 0;          ///< consecutive NaN/inf steps up to now
  int64_t optimizer_steps = 0;        ///< steps taken (those the loss scaler skipped not counted)
  double lr = 0;                      ///< of the next step
  double scale = 1;                   ///< the loss scale (1 without fp16)
};

/// The lr of every optimizer step of a run of `total_steps` steps (`steps_per_epoch` an epoch),
/// tabulated from the scheduler the parts make; `main`: says its adjustment to the run (a
/// warmup longer than the run) once.
std::vector<double> schedule_lrs(const RunParts& parts, int64_t steps_per_epoch,
                                 int64_t total_steps, bool main);

/// What a resume that trains longer (or shorter) does to the schedule, said once: it spans the
/// new length of `to_steps` optimizer steps (the run before had `from_steps`), so the lr jumps
/// at `at_step`, where it continues.
std::string schedule_change_note(const RunParts& parts, int64_t steps_per_epoch, int64_t from_steps,
                                 int64_t to_steps, int64_t at_step);

class StepRig {
 public:
  /// `model` and `optimizer` outlive the rig. With gradient_sync, the rank's parameters become
  /// rank 0's (DataParallel's broadcast: a collective).
  StepRig(const RankContext& rank, std::shared_ptr<models::Model> model,
          optim::Optimizer& optimizer, losses::Loss& loss, const StepRigOptions& options);
  ~StepRig();

  TrainStep& step() { return *step_; }
  DeviceSchedule& schedule() { return *schedule_; }
  GradScaler& scaler() { return *scaler_; }
  /// The gradient averaging; nullptr without gradient_sync.
  const dist::DataParallel* data_parallel() const { return data_parallel_.get(); }
  /// After the model's trainable parameters changed (train.unfreeze_at_epoch), between steps:
  /// gradients of the new set are averaged. Every rank calls it.
  void trainable_changed() {
    if (data_parallel_) data_parallel_->trainable_changed();
  }

  /// The window's sums since the last read (SUM and MAX all-reduces with gradient_sync: every
  /// rank calls it at the same step), the step count, lr and scale, in one host read.
  WindowReading read_window();

 private:
  RankContext rank_;
  std::unique_ptr<dist::DataParallel> data_parallel_;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<DeviceSchedule> schedule_;
  std::unique_ptr<TrainStep> step_;
};

}  // namespace runner::train
