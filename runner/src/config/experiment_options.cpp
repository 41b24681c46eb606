#include "config/experiment_options.hpp"

#include "runner/error.hpp"

namespace runner::config {
namespace {

using nlohmann::json;

// The value at `path` ("train.max_steps") as T; a document that skipped validation gets a
// ConfigError naming the key instead of nlohmann's message.
template <class T>
T get(const json& doc, const std::string& section, const std::string& key) {
  const json& where = section.empty() ? doc : doc.at(section);
  const std::string path = section.empty() ? key : section + "." + key;
  try {
    return where.at(key).get<T>();
  } catch (const json::exception& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

template <class T>
std::optional<T> optional(const json& doc, const std::string& section, const std::string& key) {
  const json& where = doc.at(section);
  if (!where.contains(key) || where.at(key).is_null()) return std::nullopt;
  return get<T>(doc, section, key);
}

}  // namespace

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
  o.name = get<std::string>(doc, "", "name");
  o.seed = get<uint64_t>(doc, "", "seed");
  o.log_level = get<std::string>(doc, "", "log_level");
  o.precision = parse_precision(get<std::string>(doc, "", "precision"));

  LaunchOptions& l = o.launch;
  l.num_processes = get<int>(doc, "launch", "num_processes");
  l.nnodes = get<int>(doc, "launch", "nnodes");
  l.node_rank = get<int>(doc, "launch", "node_rank");
  l.master_addr = get<std::string>(doc, "launch", "master_addr");
  l.master_port = get<int>(doc, "launch", "master_port");
  l.device = get<std::string>(doc, "launch", "device");
  l.backend = get<std::string>(doc, "launch", "backend");
  l.gpu_ids = get<std::vector<int>>(doc, "launch", "gpu_ids");
  l.threads_per_process = get<int>(doc, "launch", "threads_per_process");
  l.timeout_s = get<double>(doc, "launch", "timeout_s");
  l.cudnn_benchmark = get<bool>(doc, "launch", "cudnn_benchmark");

  DataOptions& d = o.data;
  d.num_workers = get<size_t>(doc, "data", "num_workers");
  d.prefetch_batches = get<size_t>(doc, "data", "prefetch_batches");
  const json& limit = doc.at("data").value("limit", json::object());
  auto limit_of = [&](const char* split) -> std::optional<int64_t> {
    if (!limit.contains(split) || limit.at(split).is_null()) return std::nullopt;
    return limit.at(split).get<int64_t>();
  };
  d.limit_train = limit_of("train");
  d.limit_val = limit_of("val");
  d.limit_test = limit_of("test");

  TrainOptions& t = o.train;
  const json& train = doc.at("train");
  t.epochs = get<int64_t>(doc, "train", "epochs");
  if (train.at("batch_size").is_number_integer())
    t.batch_size = train.at("batch_size").get<int64_t>();
  t.auto_batch_max = train.at("auto_batch").at("max").get<int64_t>();
  const json& budget = train.at("auto_batch").at("memory_budget_mb");
  if (budget.is_number()) t.auto_batch_memory_budget_mb = budget.get<double>();
  t.eval_batch_size = optional<int64_t>(doc, "train", "eval_batch_size");
  t.grad_accum_steps = get<int64_t>(doc, "train", "grad_accum_steps");
  t.clip_grad_norm = optional<double>(doc, "train", "clip_grad_norm");
  t.max_steps = optional<int64_t>(doc, "train", "max_steps");
  t.channels_last = get<bool>(doc, "train", "channels_last");
  t.best_metric = train.at("best").at("metric").get<std::string>();
  t.best_mode = train.at("best").at("mode").get<std::string>();
  t.patience = train.at("early_stopping").at("patience").get<int64_t>();
  t.min_delta = train.at("early_stopping").at("min_delta").get<double>();
  t.max_nonfinite_steps = get<int64_t>(doc, "train", "max_nonfinite_steps");
  t.checkpoint_every_steps = optional<int64_t>(doc, "train", "checkpoint_every_steps");
  t.checkpoint_every_minutes = optional<double>(doc, "train", "checkpoint_every_minutes");
  t.log_every_steps = get<int64_t>(doc, "train", "log_every_steps");
  t.bn_sync = get<std::string>(doc, "train", "bn_sync");
  t.bucket_cap_mb = get<double>(doc, "train", "bucket_cap_mb");
  t.grad_comm = get<std::string>(doc, "train", "grad_comm");
  t.find_unused_parameters = get<bool>(doc, "train", "find_unused_parameters");
  t.deterministic = get<bool>(doc, "train", "deterministic");

  PredictOptions& p = o.predict;
  p.enabled = get<bool>(doc, "predict", "enabled");
  p.split = get<std::string>(doc, "predict", "split");
  p.output = get<std::string>(doc, "predict", "output");
  p.format = get<std::string>(doc, "predict", "format");

  OutputOptions& out = o.output;
  out.root = get<std::string>(doc, "output", "root");
  out.run_dir = optional<std::string>(doc, "output", "run_dir");
  out.tensorboard = get<bool>(doc, "output", "tensorboard");
  return o;
}

}  // namespace runner::config
