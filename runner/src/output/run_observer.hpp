#pragma once
// What the training loop and the run assembly report about a run as it goes: the one way what
// they learn reaches the run folder and the trackers. Implemented by the recorder (metrics
// files, best_examples.json, report.html), the summary writer (summary.json) and
// the trackers (output/tracker_set: TensorBoard, MLflow, ...); only the main process observes
// (non-main ranks report to a RunObserver that does nothing).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "output/profile_summary.hpp"
#include "runner/data/dataset.hpp"

namespace runner::output {

/// A log window of training steps ("step" record).
struct WindowRecord {
  int64_t epoch = 0;  ///< 1-based
  int64_t step = 0;   ///< optimizer steps taken
  double loss = 0, lr = 0, scale = 1;
  double images_per_s = 0;
  double data_wait = 0;  ///< share of the window's time spent waiting for batches
  double peak_rss_mib = 0;
};

/// An epoch pass and its validation ("epoch" record).
struct EpochRecord {
  int64_t epoch = 0;   ///< 1-based
  int64_t epochs = 0;  ///< of the run (train.epochs)
  int64_t step = 0;
  double loss = 0;  ///< mean training loss of the pass
  std::optional<double> images_per_s;
  double epoch_seconds = 0, peak_rss_mib = 0, peak_gpu_mib = 0;
  bool partial = false;                      ///< cut short by train.max_steps
  std::map<std::string, double> validation;  ///< metric -> value ("loss" among them)
  /// data.on_bad_image skip: samples left out of this epoch's training and validation passes
  /// (all ranks); unset otherwise.
  std::optional<int64_t> skipped_train, skipped_val;
};

/// A new best epoch: its validation predictions, for the report's per-class table, confusion
/// matrix and most confident mistakes.
struct BestRecord {
  int64_t epoch = 0, step = 0;
  std::string metric;
  double value = 0;
  torch::Tensor logits;  ///< float32 [N, C], dataset order
  std::vector<int64_t> labels;
  const data::Dataset* validation = nullptr;  ///< the split, for its images
  std::vector<std::string> class_names;
  std::vector<int64_t> indices;  ///< each row's sample of `validation` (empty: row i is sample i)
  /// task: multilabel: float32 [N, C] multi-hot targets (labels then hold each row's first);
  /// undefined for single-label runs.
  torch::Tensor targets;
};

/// Training stopped by a signal, with its work saved (checkpoints/last.pt).
struct StopRecord {
  std::string status = "interrupted";                ///< or "requeued" (launch.slurm_requeue)
  std::string signal;                                ///< "SIGINT", "SIGTERM", "SIGUSR1"
  std::string stopped_at;                            ///< "epoch 2, batch 14, optimizer step 86"
  std::string resume_command;                        ///< "runner run --resume RUN_DIR"
  nlohmann::json fields = nlohmann::json::object();  ///< what else summary.json says (the best)
  int64_t optimizer_steps = 0;
  double seconds = 0;  ///< trained over all the run's segments
};

/// What the training loop knows of its training when fit() ends, however it ends (finished,
/// stopped, failed): summary.json's account of the best, early stopping, speed, the data each
/// epoch saw and the gradient sync.
struct TrainingReport {
  std::string best_metric, best_mode;
  std::optional<double> best_value;  ///< nullopt until a validation picked one
  int64_t best_epoch = 0;
  struct EarlyStop {
    int64_t epoch = 0;
    std::string reason;
  };
  std::optional<EarlyStop> early_stopped;
  std::optional<EarlyStop> pruned;  ///< a sweep's search stopped the trial after this epoch
  std::optional<double> train_images_per_s;  ///< steady state of the last pass; nullopt: too short
  double first_step_unix_time = 0;           ///< when this process's first step ended (0: none)
  double mean_epoch_seconds = 0;             ///< training passes of this process
  int64_t loader_worker_threads = 0, loader_prefetch_batches = 0;
  std::string batches_made_on;  ///< data.device as run
  /// Samples the last epoch trained on and validated, over all ranks.
  int64_t samples_train = 0, samples_val = 0;
  /// data.on_bad_image skip: samples left out (training over the run, the last validation).
  std::optional<std::pair<int64_t, int64_t>> skipped_train_val;
  struct GradientSync {
    int64_t buckets = 0;
    bool find_unused_parameters = false;
    std::string transport, optimizer_step;
  };
  std::optional<GradientSync> gradient_sync;  ///< nullopt: gradients stayed local
};

/// train.profile's window, once recorded: its summary and the trace, which `save_trace` writes
/// to the path it is given, whole or not at all (Kineto's Chrome trace, written beside and
/// renamed; throws runner::Error naming the path and the reason when it cannot, leaving nothing).
struct ProfileReport {
  ProfileSummary summary;
  std::function<void(const std::string& path)> save_trace;
};

/// How the run ended when it was not stopped: "finished" or "failed".
struct RunEnd {
  std::string status;
  nlohmann::json fields = nlohmann::json::object();  ///< what summary.json says of it
  int64_t optimizer_steps = 0;
  double seconds = 0;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// Training begins, or resumes from a checkpoint taken at optimizer step `resumed_at` (the
  /// records after it are dropped: the resumed run writes them again).
  virtual void on_start(std::optional<int64_t> resumed_at) { (void)resumed_at; }
  virtual void on_window(const WindowRecord& record) { (void)record; }
  virtual void on_epoch(const EpochRecord& record) { (void)record; }
  virtual void on_best(const BestRecord& record) { (void)record; }
  /// The loop's account of the training, once, as fit() ends (before on_stop or on_end).
  virtual void on_training(const TrainingReport& report) { (void)report; }
  /// train.profile's window, as soon as its last step is recorded (or the run ended first).
  virtual void on_profile(const ProfileReport& report) { (void)report; }
  virtual void on_stop(const StopRecord& record) { (void)record; }
  virtual void on_end(const RunEnd& end) { (void)end; }
  /// After every observer has recorded the stop or the end: the run folder's files are final.
  virtual void on_files_final() {}
};

/// Passes every event to its observers in order.
class ObserverChain : public RunObserver {
 public:
  void add(std::unique_ptr<RunObserver> observer) { observers_.push_back(std::move(observer)); }
  void on_start(std::optional<int64_t> resumed_at) override {
    for (auto& o : observers_) o->on_start(resumed_at);
  }
  void on_window(const WindowRecord& record) override {
    for (auto& o : observers_) o->on_window(record);
  }
  void on_epoch(const EpochRecord& record) override {
    for (auto& o : observers_) o->on_epoch(record);
  }
  void on_best(const BestRecord& record) override {
    for (auto& o : observers_) o->on_best(record);
  }
  void on_training(const TrainingReport& report) override {
    for (auto& o : observers_) o->on_training(report);
  }
  void on_profile(const ProfileReport& report) override {
    for (auto& o : observers_) o->on_profile(report);
  }
  void on_stop(const StopRecord& record) override {
    for (auto& o : observers_) o->on_stop(record);
    on_files_final();
  }
  void on_end(const RunEnd& end) override {
    for (auto& o : observers_) o->on_end(end);
    on_files_final();
  }
  void on_files_final() override {
    for (auto& o : observers_) o->on_files_final();
  }

 private:
  std::vector<std::unique_ptr<RunObserver>> observers_;
};

}  // namespace runner::output
