#pragma once
// The experiment's core sections as typed options, read once from the resolved document (whose
// defaults the schema filled in): what the engine, the launcher and the CLI take instead of the
// JSON. Plugin sections stay JSON (their factories read them); the core reads none of their
// parameters.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::config {

/// `precision`: what the user asked for. The engine decides what runs (fp16 on a CPU runs as
/// bf16 or fp32).
enum class Precision { kFp32, kFp16, kBf16 };

/// "fp32", "fp16", "bf16".
std::string precision_name(Precision precision);
/// The inverse; throws ConfigError naming `precision` for another text.
Precision parse_precision(const std::string& text);

/// `launch`: where and how many ranks run.
struct LaunchOptions {
  int num_processes = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;           ///< 0: a free port (one node only)
  std::string device = "auto";   ///< auto, cpu, cuda
  std::string backend = "auto";  ///< auto, gloo, nccl
  std::vector<int> gpu_ids;      ///< CUDA device of each local rank; empty: local rank
  int threads_per_process = 0;   ///< 0: cores / local processes
  double timeout_s = 300;        ///< rendezvous and collective timeout
  int max_restarts = 0;          ///< own launcher: restarts from last.pt after a rank's failure
  double restart_backoff_s = 2;  ///< seconds before a restart
  bool slurm_requeue = false;    ///< SIGUSR1: save, mark requeued, scontrol requeue the job
  bool cudnn_benchmark = true;
};

/// `data` outside the plugin sections (dataset, transforms).
struct DataOptions {
  size_t num_workers = 2;             ///< loader threads per rank
  size_t prefetch_batches = 4;        ///< batches prepared ahead per rank
  std::string device = "auto";        ///< data.device: auto, loader, cpu, cuda
  double device_memory_share = 0.25;  ///< data.device auto: GPU memory share for the split
  std::optional<size_t> limit_train, limit_val, limit_test;  ///< data.limit.*
  std::string check = "header";                              ///< data.check: header, full, none
  bool allow_empty_classes = false;                          ///< data.allow_empty_classes
  std::string on_bad_image = "error";                        ///< data.on_bad_image: error, skip
  bool reduced_decode = true;       ///< data.reduced_decode: JPEGs decoded smaller where they may
  std::string sampler = "shuffle";  ///< data.sampler: shuffle, balanced, weighted
  std::vector<double> sampler_weights;      ///< data.sampler_weights, per class (weighted)
  std::optional<size_t> samples_per_epoch;  ///< data.samples_per_epoch, over all processes
  bool multi_hot = false;  ///< task: multilabel: batches carry every label as multi-hot targets
};

/// `train.auto_batch`: the search for `train.batch_size: auto`.
struct AutoBatchOptions {
  int64_t max = 4096;                      ///< largest per-process batch tried
  std::optional<double> memory_budget_mb;  ///< CPU: host memory a trial step may grow by
};

/// `train.best`: the metric that picks checkpoints/best.pt.
struct BestOptions {
  std::string metric = "accuracy";
  std::string mode = "auto";      ///< auto, max, min
  std::string weights = "model";  ///< model, ema: whose validation picks best.pt and predicts
};

/// `train.ema`: an exponential moving average of the weights, as timm's ModelEmaV3.
struct EmaOptions {
  bool enabled = false;
  double decay = 0.9998;
  bool warmup = false;  ///< train.ema.warmup.enabled
  double warmup_gamma = 1.0, warmup_power = 2.0 / 3.0;
  int64_t update_after_step = 0;
  double min_decay = 0.0;
  bool exclude_buffers = false;  ///< buffers copied, not averaged
  std::string device = "model";  ///< model (the model's device), cpu
};

/// `train.mixup`: mixup and cutmix with soft targets, as timm's Mixup. Off unless an alpha is
/// above 0 or cutmix_minmax is set.
struct MixupOptions {
  double mixup_alpha = 0, cutmix_alpha = 0;
  std::optional<std::pair<double, double>> cutmix_minmax;
  double prob = 1.0, switch_prob = 0.5;
  std::string mode = "batch";  ///< batch, pair, elem
  double label_smoothing = 0.0;
  bool correct_lam = true;
  std::optional<int64_t> off_epoch;  ///< 1-based: mixing stops from this epoch on
  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0 || cutmix_minmax; }
};

/// `train.early_stopping`.
struct EarlyStoppingOptions {
  int64_t patience = 0;  ///< epochs without improvement; 0: off
  double min_delta = 0;
};

/// `train.profile`: a window of training steps recorded by PyTorch's profiler (main process).
struct ProfileOptions {
  bool enabled = false;
  int64_t skip_steps = 10;  ///< optimizer steps of this command before the window
  int64_t steps = 20;       ///< optimizer steps recorded
};

/// How gradients and BatchNorm statistics travel between ranks (train.bn_sync,
/// train.bucket_cap_mb, train.grad_comm, train.grad_transport, train.shard_optimizer,
/// train.find_unused_parameters).
struct GradientSyncOptions {
  std::string bn_sync = "broadcast";  ///< broadcast, local, sync
  double bucket_cap_mb = 25;
  std::string grad_comm = "fp32";        ///< fp32, fp16, bf16
  std::string grad_transport = "auto";   ///< auto, shared_memory, process_group
  std::string shard_optimizer = "auto";  ///< auto, on, off
  bool find_unused_parameters = false;
};

/// `train`: the loop.
struct TrainOptions {
  int64_t epochs = 1;
  std::optional<int64_t> batch_size;  ///< per process; nullopt: `auto` (found by auto batch)
  AutoBatchOptions auto_batch;
  std::optional<int64_t> eval_batch_size;  ///< nullopt: 2 x batch_size
  int64_t grad_accum_steps = 1;
  std::optional<double> clip_grad_norm;
  std::optional<int64_t> max_steps;
  std::optional<int64_t> unfreeze_at_epoch;  ///< epochs model.freeze's part stays frozen
  bool eval_tta = false;  ///< train.eval_tta: validation averages predict.tta's views too
  std::string channels_last_mode = "auto";  ///< train.channels_last: auto, true or false
  bool channels_last = false;  ///< as run: set where the rank knows its device and precision
  BestOptions best;
  EmaOptions ema;
  MixupOptions mixup;
  EarlyStoppingOptions early_stopping;
  ProfileOptions profile;
  int64_t max_nonfinite_steps = 20;
  std::optional<int64_t> checkpoint_every_steps;
  std::optional<double> checkpoint_every_minutes;
  std::string checkpoints = "best_and_last";  ///< kept when the run ends: best, last, none
  int64_t log_every_steps = 50;
  /// Step records over a run at least (not a config key: tests lower it): see the loop.
  int64_t report_points = 200;
  GradientSyncOptions gradient_sync;
  bool deterministic = false;
};

/// `predict`: the predictions written after training.
/// One view of test-time augmentation (predict.tta): the images flipped ("hflip", "vflip") or
/// resized by `scale` ("scale", one per entry of a `{name: scales, factors: [...]}` item).
struct TtaView {
  std::string name;
  double scale = 1.0;
  /// "hflip", "vflip" or "scale 0.875" (for logs and errors).
  std::string text() const;
};

struct PredictOptions {
  bool enabled = true;
  std::string split = "test";  ///< test, val
  std::string output = "submission.csv";
  std::string format = "kaggle";  ///< kaggle, csv
  std::vector<TtaView> tta;       ///< views averaged with the images themselves; empty: none
};

/// `output`: where runs go.
struct OutputOptions {
  std::string root = "runs";
  std::optional<std::string> run_dir;
  bool tensorboard = true;
};

/// The core sections of one experiment.
struct ExperimentOptions {
  std::string name;
  uint64_t seed = 42;
  bool multilabel = false;  ///< task: multilabel (else classification)
  std::string log_level = "info";
  Precision precision = Precision::kFp32;
  LaunchOptions launch;
  DataOptions data;
  TrainOptions train;
  PredictOptions predict;
  OutputOptions output;
};

/// Reads the core sections of a resolved, validated experiment document. Throws ConfigError
/// naming the key when a value has the wrong type (a document that skipped validation).
/// Called once, where an experiment is loaded (config::Experiment::options): everything else
/// takes the struct.
ExperimentOptions read_experiment_options(const nlohmann::json& doc);

/// The global batch: processes x per-process batch x accumulation steps (Accelerate's rule).
int64_t global_batch(int64_t per_process, int64_t processes, int64_t accumulation_steps);

/// Optimizer steps an epoch of `batches` takes: one per window of `accumulation_steps`, the
/// epoch's last window possibly short.
int64_t optimizer_steps_per_epoch(int64_t batches, int64_t accumulation_steps);

/// The processes of a world laid out by `launch`: nodes x processes per node.
int world_processes(const LaunchOptions& launch);

}  // namespace runner::config
