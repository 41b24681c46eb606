#pragma once
// Where training stands: the epoch, the place in it, the steps and the loss totals. What a
// checkpoint restores so that a resumed run goes on as if it had never stopped.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "train/grad_scaler.hpp"
#include "train/step_rig.hpp"

namespace runner::train {

/// Training losses of all ranks summed on the host since a point (a log window, an epoch).
struct LossTotals {
  double sum = 0, finite = 0, nonfinite = 0;
  void add(const LossTotals& other);
  double mean() const;  ///< of the finite losses; NaN when there were none
  nlohmann::json to_json() const;
  static LossTotals from_json(const nlohmann::json& j);
};

struct TrainingPosition {
  int64_t epoch = 0;         ///< 0-based: the epoch in progress (epochs when all are done)
  int64_t batches_done = 0;  ///< of that epoch: the sampler's place
  /// Optimizer steps taken (steps the fp16 loss scaler skipped not counted), the lr and loss
  /// scale, and the run of NaN/inf steps: as of the last window read.
  int64_t optimizer_steps = 0;
  int64_t nonfinite_run = 0;
  double lr = 0, scale = 1;
  /// Every step, skipped ones too (the log and checkpoint cadence), and its count at the last
  /// window read.
  int64_t steps_attempted = 0, attempted_at_read = 0;
  int64_t last_logged_step = 0;  ///< the optimizer step of the last step record
  LossTotals window, epoch_totals;

  /// Takes a window read: its losses join the window's and the epoch's totals. Throws
  /// runner::Error saying what to do when the read saw `max_nonfinite_steps` NaN/inf steps in a
  /// row (train.max_nonfinite_steps: training diverged).
  void take(const WindowReading& reading, int64_t max_nonfinite_steps);
  /// Whether steps were taken since the last window read.
  bool unread() const { return steps_attempted != attempted_at_read; }

  /// The checkpoint's keys of the position.
  nlohmann::json to_json() const;
  /// Reads them back (what every rank restores from a checkpoint).
  static TrainingPosition from_json(const nlohmann::json& meta);
};

/// What a run's checkpoint keeps besides the weights and the optimizer's state.
struct CheckpointState {
  TrainingPosition position;
  nlohmann::json best = nlohmann::json::object();  ///< BestTracker::to_json()
  GradScalerState scaler;
  int world_size = 1;
  double run_seconds = 0;      ///< trained over all the run's segments
  int64_t schedule_steps = 0;  ///< the optimizer steps the schedule spanned; 0: not recorded

  nlohmann::json to_json() const;
  /// Reads the meta of `checkpoint`; throws ConfigError when `world_size` is not the one that
  /// wrote it (the sampler's order depends on it), saying what to set.
  static CheckpointState from_json(const nlohmann::json& meta, const std::string& checkpoint,
                                   int world_size);
};

}  // namespace runner::train
