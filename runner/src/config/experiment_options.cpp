#include "config/experiment_options.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "runner/error.hpp"

namespace runner::config {
namespace {

using nlohmann::json;

json::json_pointer pointer_of(std::string path) {  // "train.best.metric" -> /train/best/metric
  std::replace(path.begin(), path.end(), '.', '/');
  return json::json_pointer("/" + path);
}

// The value at the dotted `path` as T; a document that skipped validation gets a ConfigError
// naming the key instead of nlohmann's message.
template <class T>
T get(const json& doc, const std::string& path) {
  try {
    return doc.at(pointer_of(path)).get<T>();
  } catch (const json::exception& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

// The same where null (or absent) means "not set".
template <class T>
std::optional<T> optional(const json& doc, const std::string& path) {
  const json::json_pointer pointer = pointer_of(path);
  if (!doc.contains(pointer) || doc.at(pointer).is_null()) return std::nullopt;
  return get<T>(doc, path);
}

}  // namespace

std::string TtaView::text() const {
  return name == "scale" ? fmt::format("scale {:g}", scale) : name;
}

std::string precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  throw ConfigError("precision '" + text + "' is not one of fp32, fp16, bf16");
}

ExperimentOptions read_experiment_options(const json& doc) {
  ExperimentOptions o;
  o.name = get<std::string>(doc, "name");
  o.seed = get<uint64_t>(doc, "seed");
  o.multilabel = get<std::string>(doc, "task") == "multilabel";
  o.log_level = get<std::string>(doc, "log_level");
  o.precision = parse_precision(get<std::string>(doc, "precision"));

  LaunchOptions& l = o.launch;
  l.num_processes = get<int>(doc, "launch.num_processes");
  l.nnodes = get<int>(doc, "launch.nnodes");
  l.node_rank = get<int>(doc, "launch.node_rank");
  l.master_addr = get<std::string>(doc, "launch.master_addr");
  l.master_port = get<int>(doc, "launch.master_port");
  l.device = get<std::string>(doc, "launch.device");
  l.backend = get<std::string>(doc, "launch.backend");
  l.gpu_ids = get<std::vector<int>>(doc, "launch.gpu_ids");
  l.threads_per_process = get<int>(doc, "launch.threads_per_process");
  l.timeout_s = get<double>(doc, "launch.timeout_s");
  l.max_restarts = get<int>(doc, "launch.max_restarts");
  l.restart_backoff_s = get<double>(doc, "launch.restart_backoff_s");
  l.slurm_requeue = get<bool>(doc, "launch.slurm_requeue");
  l.cudnn_benchmark = get<bool>(doc, "launch.cudnn_benchmark");

  DataOptions& d = o.data;
  d.num_workers = get<size_t>(doc, "data.num_workers");
  d.prefetch_batches = get<size_t>(doc, "data.prefetch_batches");
  d.device = get<std::string>(doc, "data.device");
  d.device_memory_share = get<double>(doc, "data.device_memory_share");
  d.limit_train = optional<size_t>(doc, "data.limit.train");
  d.limit_val = optional<size_t>(doc, "data.limit.val");
  d.limit_test = optional<size_t>(doc, "data.limit.test");
  d.check = get<std::string>(doc, "data.check");
  d.allow_empty_classes = get<bool>(doc, "data.allow_empty_classes");
  d.on_bad_image = get<std::string>(doc, "data.on_bad_image");
  d.reduced_decode = get<bool>(doc, "data.reduced_decode");
  d.sampler = get<std::string>(doc, "data.sampler");
  if (const nlohmann::json& weights = doc.at("data").at("sampler_weights"); weights.is_array())
    d.sampler_weights = weights.get<std::vector<double>>();
  d.samples_per_epoch = optional<size_t>(doc, "data.samples_per_epoch");
  d.multi_hot = o.multilabel;

  TrainOptions& t = o.train;
  t.epochs = get<int64_t>(doc, "train.epochs");
  if (doc.at("train").at("batch_size").is_number_integer())  // else "auto"
    t.batch_size = get<int64_t>(doc, "train.batch_size");
  t.auto_batch.max = get<int64_t>(doc, "train.auto_batch.max");
  t.auto_batch.memory_budget_mb = optional<double>(doc, "train.auto_batch.memory_budget_mb");
  t.eval_batch_size = optional<int64_t>(doc, "train.eval_batch_size");
  t.grad_accum_steps = get<int64_t>(doc, "train.grad_accum_steps");
  t.clip_grad_norm = optional<double>(doc, "train.clip_grad_norm");
  t.max_steps = optional<int64_t>(doc, "train.max_steps");
  t.unfreeze_at_epoch = optional<int64_t>(doc, "train.unfreeze_at_epoch");
  t.eval_tta = get<bool>(doc, "train.eval_tta");
  const nlohmann::json& layout = doc.at("train").at("channels_last");
  t.channels_last_mode = layout.is_boolean() ? (layout.get<bool>() ? "true" : "false") : "auto";
  t.channels_last = t.channels_last_mode == "true";
  t.best.metric = get<std::string>(doc, "train.best.metric");
  t.best.mode = get<std::string>(doc, "train.best.mode");
  t.best.weights = get<std::string>(doc, "train.best.weights");
  EmaOptions& ema = t.ema;
  ema.enabled = get<bool>(doc, "train.ema.enabled");
  ema.decay = get<double>(doc, "train.ema.decay");
  ema.warmup = get<bool>(doc, "train.ema.warmup.enabled");
  ema.warmup_gamma = get<double>(doc, "train.ema.warmup.gamma");
  ema.warmup_power = get<double>(doc, "train.ema.warmup.power");
  ema.update_after_step = get<int64_t>(doc, "train.ema.update_after_step");
  ema.min_decay = get<double>(doc, "train.ema.min_decay");
  ema.exclude_buffers = get<bool>(doc, "train.ema.exclude_buffers");
  ema.device = get<std::string>(doc, "train.ema.device");
  MixupOptions& mix = t.mixup;
  mix.mixup_alpha = get<double>(doc, "train.mixup.mixup_alpha");
  mix.cutmix_alpha = get<double>(doc, "train.mixup.cutmix_alpha");
  if (const auto minmax = optional<std::vector<double>>(doc, "train.mixup.cutmix_minmax"))
    mix.cutmix_minmax = std::make_pair(minmax->at(0), minmax->at(1));
  mix.prob = get<double>(doc, "train.mixup.prob");
  mix.switch_prob = get<double>(doc, "train.mixup.switch_prob");
  mix.mode = get<std::string>(doc, "train.mixup.mode");
  mix.label_smoothing = get<double>(doc, "train.mixup.label_smoothing");
  mix.correct_lam = get<bool>(doc, "train.mixup.correct_lam");
  mix.off_epoch = optional<int64_t>(doc, "train.mixup.off_epoch");
  t.early_stopping.patience = get<int64_t>(doc, "train.early_stopping.patience");
  t.early_stopping.min_delta = get<double>(doc, "train.early_stopping.min_delta");
  t.profile.enabled = get<bool>(doc, "train.profile.enabled");
  t.profile.skip_steps = get<int64_t>(doc, "train.profile.skip_steps");
  t.profile.steps = get<int64_t>(doc, "train.profile.steps");
  t.max_nonfinite_steps = get<int64_t>(doc, "train.max_nonfinite_steps");
  t.checkpoint_every_steps = optional<int64_t>(doc, "train.checkpoint_every_steps");
  t.checkpoint_every_minutes = optional<double>(doc, "train.checkpoint_every_minutes");
  t.checkpoints = get<std::string>(doc, "train.checkpoints");
  t.log_every_steps = get<int64_t>(doc, "train.log_every_steps");
  GradientSyncOptions& sync = t.gradient_sync;
  sync.bn_sync = get<std::string>(doc, "train.bn_sync");
  sync.bucket_cap_mb = get<double>(doc, "train.bucket_cap_mb");
  sync.grad_comm = get<std::string>(doc, "train.grad_comm");
  sync.grad_transport = get<std::string>(doc, "train.grad_transport");
  sync.shard_optimizer = get<std::string>(doc, "train.shard_optimizer");
  sync.find_unused_parameters = get<bool>(doc, "train.find_unused_parameters");
  t.deterministic = get<bool>(doc, "train.deterministic");

  PredictOptions& p = o.predict;
  p.enabled = get<bool>(doc, "predict.enabled");
  p.split = get<std::string>(doc, "predict.split");
  p.output = get<std::string>(doc, "predict.output");
  p.format = get<std::string>(doc, "predict.format");
  for (const nlohmann::json& view : doc.at("predict").at("tta")) {
    if (view.is_string()) {
      p.tta.push_back({view.get<std::string>(), 1.0});
    } else {
      for (const double factor : view.at("factors").get<std::vector<double>>())
        p.tta.push_back({"scale", factor});
    }
  }

  OutputOptions& out = o.output;
  out.root = get<std::string>(doc, "output.root");
  out.run_dir = optional<std::string>(doc, "output.run_dir");
  out.tensorboard = get<bool>(doc, "output.tensorboard");
  return o;
}

int64_t global_batch(int64_t per_process, int64_t processes, int64_t accumulation_steps) {
  return per_process * processes * accumulation_steps;
}

int64_t optimizer_steps_per_epoch(int64_t batches, int64_t accumulation_steps) {
  return (batches + accumulation_steps - 1) / accumulation_steps;
}

int world_processes(const LaunchOptions& launch) { return launch.num_processes * launch.nnodes; }

}  // namespace runner::config
