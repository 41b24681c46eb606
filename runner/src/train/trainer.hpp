#pragma once
// The fit/predict loop of one rank: train epochs over the training split, validate on the
// gathered predictions of all ranks, keep the best checkpoint, stop early or on a diverged loss,
// and predict a split into a file. Every rank runs every collective; only I/O is main-only.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "config/experiment_options.hpp"
#include "data/loader.hpp"
#include "data/pipeline.hpp"
#include "dist/data_parallel.hpp"
#include "dist/world.hpp"
#include "output/metrics_writer.hpp"
#include "output/progress.hpp"
#include "runner/data/dataset.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/optim/scheduler.hpp"
#include "train/device_schedule.hpp"
#include "train/grad_scaler.hpp"
#include "train/train_step.hpp"

namespace runner::train {

/// Everything a rank trains with, built from the experiment.
struct TrainerParts {
  std::shared_ptr<dist::World> world;
  torch::Device device = torch::kCPU;
  config::Precision precision = config::Precision::kFp32;  ///< as run (fp16 on a CPU: bf16/fp32)
  std::shared_ptr<models::Model> model;
  std::unique_ptr<optim::Optimizer> optimizer;
  /// Builds the schedule once the Trainer knows the run's steps (the scheduler plugin's section
  /// stays with the run assembly).
  std::function<std::unique_ptr<optim::Scheduler>(const optim::ScheduleContext&)> make_scheduler;
  std::shared_ptr<losses::Loss> loss;
  std::vector<std::shared_ptr<metrics::Metric>> metrics;
  data::DatasetSplits splits;
  data::Pipeline train_pipeline, eval_pipeline;
  /// runner predict: no training split, loader, scheduler or metrics files.
  bool predict_only = false;
};

/// Validation results: metric name -> value ("loss" always present).
using MetricValues = std::map<std::string, double>;

class Trainer {
  using Clock = std::chrono::steady_clock;

 public:
  /// `options`: the experiment's core sections (train.batch_size resolved); `run_dir` exists on
  /// the main process.
  Trainer(TrainerParts parts, config::ExperimentOptions options, std::string run_dir);
  ~Trainer();

  /// Continues from `checkpoint` (the run's checkpoints/last.pt) before fit().
  void resume_from(const std::string& checkpoint);
  /// Trains until the configured epochs, max_steps or early stopping; returns the last
  /// validation metrics (empty without a validation split).
  MetricValues fit();
  /// Loads the best checkpoint's weights when there is one (all ranks, after the main process
  /// has written it).
  void load_best();
  /// Predicts `split` ("test" or "val") into `output` (main process writes) in `format`
  /// ("kaggle" or "csv"); returns the number of rows written.
  size_t predict(const std::string& split, const std::string& output, const std::string& format);
  /// Validation metrics of the current weights on the validation split.
  MetricValues evaluate();

  /// Steady-state training images/s of the last epoch; nullopt when it was too short to measure.
  std::optional<double> train_images_per_s() const { return images_per_s_; }
  /// Optimizer steps taken (steps the fp16 loss scaler skipped not counted), as of the last read
  /// of the device's window (every log window, epoch end, checkpoint and stop).
  int64_t optimizer_steps() const { return optimizer_steps_; }
  /// The signal (SIGINT/SIGTERM) that stopped fit() early on every rank, or 0: fit() then
  /// returned after saving checkpoints/last.pt at the step where the ranks agreed to stop.
  int stopped_by() const { return stopped_by_; }
  /// Agrees over all ranks (a collective) whether any rank was asked to stop; the signal or 0.
  int agree_on_stop();
  /// Seconds this run has trained over all its segments: the earlier ones (up to the checkpoint
  /// a resume started from) plus this process's so far.
  double run_seconds() const;
  /// The epoch (1-based) and batch within it that training has reached.
  int64_t epoch_reached() const { return epoch_ + 1; }
  int64_t batches_done() const { return batches_done_; }
  /// Wall-clock time (seconds since the Unix epoch) when this run's first optimizer step ended.
  double first_step_unix_time() const { return first_step_unix_time_; }
  /// Mean training time per epoch pass in this run (seconds; validation excluded); a pass cut
  /// short by train.max_steps or begun mid-epoch by a resume counts as it ran.
  double mean_epoch_seconds() const {
    return epochs_timed_ ? epoch_seconds_sum_ / epochs_timed_ : 0.0;
  }
  torch::nn::Module& model() { return *parts_.model; }
  /// The gradient averaging the run built; nullptr for prediction.
  const dist::DataParallel* data_parallel() const { return data_parallel_.get(); }
  /// The training loader's figures (threads, prefetch, waiting); empty for prediction.
  data::LoaderStats train_loader_stats() const {
    return train_loader_ ? train_loader_->stats() : data::LoaderStats{};
  }
  /// The metric that picks the best checkpoint, its direction ("max"/"min") and best value.
  const std::string& best_metric() const { return best_metric_; }
  const std::string& best_mode() const { return best_mode_; }
  std::optional<double> best_value() const { return best_value_; }

 private:
  struct EpochResult {
    double loss = 0;
    bool stopped_by_max_steps = false;
    int stopped_by_signal = 0;  ///< SIGINT/SIGTERM every rank agreed to stop at
  };
  /// Training losses of all ranks summed on the host since a point (a log window, an epoch).
  struct LossTotals {
    double sum = 0, finite = 0, nonfinite = 0;
    void add(const LossTotals& other);
    double mean() const;  ///< of the finite losses; NaN when there were none
    nlohmann::json to_json() const;
    static LossTotals from_json(const nlohmann::json& j);
  };
  /// What the host decides each step, agreed over the ranks by a host-side collective.
  struct StepFlags {
    int stop_signal = 0;  ///< SIGINT/SIGTERM when any rank was asked to stop, else 0
    bool save_due = false;
  };
  EpochResult train_epoch(int64_t epoch);
  /// The loader settings of a training (shuffled, whole batches) or an evaluation pass.
  /// The loader settings for `dataset` (train: shuffled, drop_last; else dataset order), with its
  /// resident copy when data.device makes batches from one.
  data::LoaderOptions loader_options(int64_t batch_size, bool training,
                                     const std::shared_ptr<data::Dataset>& dataset);
  /// data.device resolved: the device batches are made on, or nullopt for the per-sample loader.
  std::optional<torch::Device> resolve_data_device();
  StepFlags agree_on_flags(bool save_due);
  /// Reads the device's sums since the last read (all ranks: a SUM and a MAX all-reduce, then
  /// one host read) into the window's and the epoch's totals, with the steps taken, the lr and
  /// the loss scale; stops a diverged run (train.max_nonfinite_steps). A collective.
  void read_window(int64_t epoch);
  /// The "step" record of the log window that just ended; resets the window.
  void log_window(int64_t epoch, double seconds, double data_wait_seconds, int64_t images);
  torch::Tensor predict_logits(const std::shared_ptr<data::Dataset>& dataset);
  MetricValues compute_metrics(const torch::Tensor& logits, const torch::Tensor& labels);
  void save(const std::string& name, bool with_optimizer);
  nlohmann::json state_json() const;
  /// A "best" record in metrics.jsonl and best_examples.json, from the last evaluation.
  void record_best_epoch(int64_t epoch);
  bool improved(double value) const;

  TrainerParts parts_;
  config::ExperimentOptions options_;
  std::string run_dir_;
  std::unique_ptr<dist::DataParallel> data_parallel_;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<TrainStep> train_step_;
  std::unique_ptr<optim::Scheduler> scheduler_;
  std::unique_ptr<DeviceSchedule> schedule_;
  std::unique_ptr<data::DataLoader> train_loader_;
  std::optional<torch::Device> data_device_;  ///< data.device: where batches are made, or loader
  /// Each split decoded once (data.device), kept across evaluations.
  std::map<const data::Dataset*, std::shared_ptr<const data::ResidentSplit>> resident_splits_;
  std::unique_ptr<output::MetricsWriter> writer_;
  output::Progress progress_;

  int64_t epochs_, batch_size_, eval_batch_size_, accum_, log_every_, max_nonfinite_;
  /// Optimizer steps between metrics.jsonl step records (train.report_points over the run).
  int64_t record_every_ = 1;
  std::optional<int64_t> max_steps_;
  std::optional<double> clip_;
  int64_t checkpoint_every_steps_ = 0;   ///< train.checkpoint_every_steps (0: off)
  double checkpoint_every_seconds_ = 0;  ///< train.checkpoint_every_minutes x 60 (0: off)
  Clock::time_point last_save_;          ///< of last.pt, for checkpoint_every_minutes
  std::string best_metric_, best_mode_;
  int64_t patience_;
  double min_delta_;

  // Position: what a checkpoint restores. optimizer_steps_, nonfinite_run_, lr_ and scale_ are
  // as of the last read_window(); steps_attempted_ (the log and checkpoint cadence) counts
  // every step, skipped ones too.
  int64_t epoch_ = 0, batches_done_ = 0, optimizer_steps_ = 0, nonfinite_run_ = 0;
  int64_t steps_attempted_ = 0, attempted_at_read_ = 0, last_logged_step_ = 0;
  double lr_ = 0, scale_ = 1;
  LossTotals window_totals_, epoch_totals_;
  std::optional<double> best_value_;
  int64_t best_epoch_ = -1, epochs_without_improvement_ = 0;
  nlohmann::json history_ = nlohmann::json::object();
  torch::Tensor last_val_logits_;  ///< of the last evaluate(), for the best epoch's report
  std::vector<int64_t> last_val_labels_;
  std::optional<double> images_per_s_;
  double first_step_unix_time_ = 0, epoch_seconds_sum_ = 0;
  int64_t epochs_timed_ = 0;
  bool finished_ = false;
  int stopped_by_ = 0;
  double seconds_before_ = 0;        ///< training time of the segments before this resume
  Clock::time_point segment_start_;  ///< when this process began
};

}  // namespace runner::train
