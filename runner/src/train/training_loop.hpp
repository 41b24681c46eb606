#pragma once
// The fit loop of one rank, as the seed's fit_model: train an epoch, validate on the gathered
// predictions of every rank, keep the best checkpoint, stop early, on a diverged loss, at
// train.max_steps or at a signal every rank agreed on. The only code that orders a run in
// time; what it learns goes to the run's observer. Every rank runs every collective.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "config/experiment_options.hpp"
#include "data/loader.hpp"
#include "output/progress.hpp"
#include "output/run_observer.hpp"
#include "train/batch_source.hpp"
#include "train/best_tracker.hpp"
#include "train/evaluator.hpp"
#include "train/mixup.hpp"
#include "train/model_ema.hpp"
#include "train/run_checkpoints.hpp"
#include "train/run_parts.hpp"
#include "train/speed_meter.hpp"
#include "train/step_profiler.hpp"
#include "train/step_rig.hpp"
#include "train/training_position.hpp"
#include "train/trial_reports.hpp"

namespace runner::train {

/// Why training ended before train.epochs: early stopping, at which epoch.
struct EarlyStop {
  int64_t epoch = 0;
  std::string reason;  ///< "no accuracy improvement for 2 epochs; best 0.9100 at epoch 3"
};

/// How fit() ended.
struct FitResult {
  MetricValues last;    ///< the last validation's metrics (empty without a validation split)
  int stopped_by = 0;   ///< SIGINT/SIGTERM every rank agreed to stop at (last.pt saved), or 0
  bool pruned = false;  ///< a sweep's search stopped this trial after a whole epoch
};

class TrainingLoop {
 public:
  /// Trains `parts.model` with `parts.optimizer`; `options.train.batch_size` resolved. The
  /// checkpoints go to `checkpoint_dir` (written by the main process).
  TrainingLoop(const RankContext& rank, RunParts& parts, const config::ExperimentOptions& options,
               BatchSource& batches, Evaluator& evaluator, output::RunObserver& observer,
               std::string checkpoint_dir);
  ~TrainingLoop();

  /// Continues from the run's checkpoints/last.pt before fit().
  void resume();
  /// Trains until train.epochs, train.max_steps, early stopping or an agreed signal; the
  /// observer gets the training's account (on_training) however it ends, a throw included.
  FitResult fit();
  /// Loads the best checkpoint's weights when there is one (every rank, once the main process
  /// has written it); false when no validation picked any (the last weights stay).
  bool load_best();

  const TrainingPosition& position() const { return position_; }
  /// Seconds trained over all the run's segments (the earlier ones up to the checkpoint a
  /// resume started from, and this process's).
  double run_seconds() const;
  /// What fit() is doing: "train" or "validate" (for a failed run's failed_stage).
  const std::string& stage() const { return stage_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct EpochResult {
    double loss = 0;
    bool stopped_by_max_steps = false;
    int stopped_by_signal = 0;
    bool batch_failed = false;  ///< some rank could not make its next batch
  };
  FitResult fit_epochs();
  /// The training's account for the observer (what summary.json says of it).
  output::TrainingReport training_report() const;
  EpochResult train_epoch();
  /// After a step: agree on stop and save, read and record the window where due. Returns
  /// false when the epoch stops here.
  bool after_step(EpochResult& result);
  void read_window();
  void record_window();
  void report_epoch(const EpochResult& r, double seconds, bool complete, const Evaluation& eval);
  /// model.freeze at the start of epoch `epoch` (0-based): thawed from
  /// train.unfreeze_at_epoch on, its statistics kept fixed while frozen.
  void follow_freeze(int64_t epoch);
  void judge_epoch(const Evaluation& judged, double value);
  /// The batch as it trains: train.mixup's mix and soft targets where it is on.
  std::pair<torch::Tensor, torch::Tensor> training_batch(const data::Batch& batch, int64_t epoch);
  void save(const std::string& name, bool with_optimizer);
  /// A batch some rank could not make (`failure`: the ranks' agreed line): every rank saves
  /// last.pt at the position reached and throws the same DataError, naming the failing rank's
  /// file, where the run stands and the command that continues it.
  [[noreturn]] void fail_with_saved_run(const std::string& what, const std::string& failure);
  int64_t batches_after_this_epoch() const;

  RankContext rank_;
  RunParts& parts_;
  config::TrainOptions train_;
  Evaluator& evaluator_;
  output::RunObserver& observer_;
  RunCheckpoints checkpoints_;
  std::unique_ptr<data::DataLoader> loader_;
  std::unique_ptr<StepRig> rig_;
  std::unique_ptr<ModelEma> ema_;  ///< train.ema; null when off
  std::unique_ptr<Mixup> mixup_;   ///< train.mixup; null when off
  uint64_t seed_ = 0;
  std::string best_key_;  ///< the validation value judged: the metric, or ema_<metric>
  TrainingPosition position_;
  BestTracker best_;
  output::Progress progress_;
  StepProfiler profiler_;  ///< train.profile
  SpeedMeter speed_;
  int64_t num_batches_ = 0;
  int64_t record_every_ = 1;  ///< optimizer steps between step records
  std::optional<int64_t> resumed_at_;
  std::optional<EarlyStop> early_stopped_;
  TrialReports trial_;               ///< a sweep trial's epochs judged by its search
  std::optional<EarlyStop> pruned_;  ///< when the search pruned this trial, and why
  int64_t steps_per_epoch_ = 0, schedule_steps_ = 0;
  std::optional<double> images_per_s_;
  double first_step_unix_time_ = 0, epoch_seconds_sum_ = 0, seconds_before_ = 0;
  int64_t epochs_timed_ = 0;
  std::string stage_ = "train";
  int64_t skipped_val_ = 0, skipped_train_total_ = 0;
  int64_t last_epoch_train_samples_ = 0, last_epoch_val_samples_ = 0;
  size_t skipped_train_before_ = 0;  ///< this rank's loader count at the last epoch's end
  Clock::time_point segment_start_, last_save_;
};

}  // namespace runner::train
