#include "run/cross_key_checks.hpp"

#include <fmt/format.h>

#include "config/experiment_options.hpp"
#include "config/shared_memory_rules.hpp"
#include "data/class_name.hpp"
#include "data/class_sampling.hpp"
#include "data/sampler.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"
#include "util/counted.hpp"

namespace runner::run {
namespace {

// "exp.yaml:12:3: " (or "--set k=v: "): where the key of `pointer` was written, else its section.
std::string key_at(const config::Experiment& e, const std::string& pointer) {
  return e.marks.written_mark(pointer).to_string() + ": ";
}

size_t samples_in(const std::shared_ptr<data::Dataset>& split) { return split ? split->size() : 0; }

// What gives the dataset a validation split, in its own keys' words.
std::string how_to_get_val(const train::RunParts& parts) {
  return "the dataset (" + parts.about.dataset +
         ") has no validation split: give it one (data.dataset's val_split, val_size or val "
         "folder: 'runner plugins datasets')";
}

// An epoch's batches on each process, as the run's loader makes them: DistributedSampler's
// share with drop_last, whole batches only. Requires a numeric train.batch_size.
size_t batches_per_process(const config::Experiment& e, const train::RunParts& parts,
                           const CrossKeyContext& context) {
  const size_t n = e.options.data.samples_per_epoch.value_or(samples_in(parts.splits.train));
  const data::DistributedSampler sampler(
      n, {static_cast<size_t>(context.world_size), 0, true, 0, true});
  return sampler.num_samples() / static_cast<size_t>(*e.options.train.batch_size);
}

void check_batches(const config::Experiment& e, const train::RunParts& parts,
                   const CrossKeyContext& context) {
  const config::TrainOptions& train = e.options.train;
  const size_t split_size = samples_in(parts.splits.train);
  if (split_size == 0)
    throw ConfigError(key_at(e, "/data/dataset") + "the dataset (" + parts.about.dataset +
                      ") has no training samples" +
                      (e.options.data.limit_train ? " (data.limit.train)" : "") +
                      ": point data.dataset at data with a training split");
  if (!train.batch_size) return;  // auto: the search caps it at the split's share
  const size_t n = e.options.data.samples_per_epoch.value_or(split_size);
  const std::string epoch_is = e.options.data.samples_per_epoch ? " (data.samples_per_epoch)" : "";
  const size_t batches = batches_per_process(e, parts, context);
  if (batches == 0)
    throw ConfigError(key_at(e, "/train/batch_size") + "train.batch_size " +
                      std::to_string(*train.batch_size) + " x " +
                      util::counted(context.world_size, "process", "processes") +
                      " is larger than the training " + (epoch_is.empty() ? "split" : "epoch") +
                      " (" + std::to_string(n) + " samples" +
                      (e.options.data.limit_train ? " after data.limit.train" : "") + epoch_is +
                      "): lower train.batch_size or raise data.limit.train" +
                      (epoch_is.empty() ? "" : " or data.samples_per_epoch"));
  if (train.grad_accum_steps > static_cast<int64_t>(batches))
    throw ConfigError(key_at(e, "/train/grad_accum_steps") + "train.grad_accum_steps " +
                      std::to_string(train.grad_accum_steps) + " but an epoch has " +
                      util::counted(static_cast<int64_t>(batches), "batch", "batches") +
                      " per process (train.batch_size " + std::to_string(*train.batch_size) +
                      " x " + util::counted(context.world_size, "process", "processes") + ", " +
                      std::to_string(n) + " samples" + epoch_is +
                      "): the window would end at every epoch's end; set "
                      "train.grad_accum_steps at most " +
                      std::to_string(batches));
}

// data.sampler's class shares fit the training split's classes (one line at the key).
void check_sampler(const config::Experiment& e, const train::RunParts& parts) {
  const config::DataOptions& data = e.options.data;
  if (data.sampler == "shuffle") return;
  const std::string key = data.sampler == "weighted" ? "data.sampler_weights" : "data.sampler";
  try {
    data::training_sampling_weights(data.sampler, data.sampler_weights, parts.splits);
  } catch (const ConfigError& error) {
    throw ConfigError(
        key_at(e, data.sampler == "weighted" ? "/data/sampler_weights" : "/data/sampler") + key +
        ": " + error.what());
  }
}

// A single-label run on data with several labels per image would train on each image's first.
void check_labels_fit_task(const config::Experiment& e, const train::RunParts& parts) {
  const auto& train = parts.splits.train;
  if (e.options.multilabel || !train || !dynamic_cast<const data::MultiLabelDataset*>(train.get()))
    return;
  for (size_t i = 0; i < train->size(); ++i) {
    const std::vector<int64_t> labels = data::sample_labels(*train, i);
    if (labels.size() < 2) continue;
    const std::string file = data::sample_file(*train, i);
    const auto name = [&](int64_t c) { return data::class_name(parts.splits.class_names, c); };
    throw ConfigError(key_at(e, "/data/dataset") + "the dataset (" + parts.about.dataset +
                      ") gives images several labels (" +
                      (file.empty() ? "sample " + std::to_string(i) : file) + ": " +
                      name(labels[0]) + " and " + name(labels[1]) +
                      "), but the run trains one class per image: set task: multilabel, or "
                      "give each image one label");
  }
}

// train.profile's window lies within the run's optimizer steps (a window never reached would be
// a key without effect). Unknown with train.batch_size auto: the run then says so at its end.
void check_profile(const config::Experiment& e, const train::RunParts& parts,
                   const CrossKeyContext& context) {
  const config::TrainOptions& train = e.options.train;
  if (!train.profile.enabled || !train.batch_size) return;
  const auto batches = static_cast<int64_t>(batches_per_process(e, parts, context));
  const int64_t per_epoch = config::optimizer_steps_per_epoch(batches, train.grad_accum_steps);
  int64_t run_steps = per_epoch * train.epochs;
  std::string steps_are = fmt::format("train.epochs {} x {} an epoch", train.epochs,
                                      util::counted(per_epoch, "step", "steps"));
  if (train.max_steps && *train.max_steps < run_steps) {
    run_steps = *train.max_steps;
    steps_are = "train.max_steps";
  }
  const int64_t last = train.profile.skip_steps + train.profile.steps;
  if (last <= run_steps) return;
  // At the window's key the user wrote (steps first), else the section.
  std::string at = "/train/profile";
  for (const char* key : {"/train/profile/skip_steps", "/train/profile/steps"})
    if (config::user_set(e.doc, e.marks, key)) at = key;
  throw ConfigError(key_at(e, at) +
                    fmt::format("train.profile records steps {}-{}, but the run takes {} "
                                "optimizer steps ({}): lower train.profile.skip_steps or "
                                "train.profile.steps",
                                train.profile.skip_steps + 1, last, run_steps, steps_are));
}

void check_validation(const config::Experiment& e, const train::RunParts& parts) {
  if (samples_in(parts.splits.val) > 0) return;
  const config::TrainOptions& train = e.options.train;
  if (train.early_stopping.patience > 0)
    throw ConfigError(key_at(e, "/train/early_stopping/patience") +
                      "train.early_stopping watches the validation metric, but " +
                      how_to_get_val(parts) + ", or drop train.early_stopping");
  if (config::user_set(e.doc, e.marks, "/train/best"))
    throw ConfigError(key_at(e, "/train/best") +
                      "train.best picks best.pt by a validation metric, but " +
                      how_to_get_val(parts) + ", or drop train.best (the last weights predict)");
  if (config::user_set(e.doc, e.marks, "/metrics"))
    throw ConfigError(key_at(e, "/metrics") + "metrics are computed on the validation split, but " +
                      how_to_get_val(parts) + ", or drop metrics:");
}

// train.grad_transport shared_memory and train.shard_optimizer on require what the ranks would
// refuse at their start: the same rules (config/shared_memory_rules.hpp), asked of the config.
void check_shared_memory(const config::Experiment& e, const train::RunParts& parts) {
  const config::ExperimentOptions& o = e.options;
  const config::GradientSyncOptions& sync = o.train.gradient_sync;
  if (sync.shard_optimizer != "on" && sync.grad_transport != "shared_memory") return;
  config::SharedMemoryFacts facts;
  facts.cpu_ranks = o.launch.device != "cuda";
  facts.nodes = o.launch.nnodes;
  facts.grad_transport = sync.grad_transport;
  facts.grad_comm = sync.grad_comm;
  facts.precision = o.precision;
  facts.optimizer = parts.about.optimizer;
  // The built-in optimizers that implement optim::ShardedStep (the ranks ask the optimizer).
  facts.optimizer_steps_shares =
      parts.about.optimizer == "adam" || parts.about.optimizer == "adamw";
  facts.clip_grad_norm = o.train.clip_grad_norm.has_value();
  facts.ema = o.train.ema.enabled;
  if (sync.grad_transport == "shared_memory")
    if (const std::string why = config::why_no_shared_memory(facts); !why.empty())
      throw ConfigError(key_at(e, "/train/grad_transport") +
                        "train.grad_transport: shared_memory cannot be used here: " + why +
                        " (use auto or process_group)");
  if (sync.shard_optimizer != "on") return;
  if (const std::string why = config::why_not_sharded(facts); !why.empty())
    throw ConfigError(key_at(e, "/train/shard_optimizer") +
                      "train.shard_optimizer: on cannot be used here: " + why +
                      " (use auto or off)");
}

}  // namespace

std::vector<std::string> check_cross_keys(const config::Experiment& e, const train::RunParts& parts,
                                          const CrossKeyContext& context) {
  std::vector<std::string> warnings;
  const config::ExperimentOptions& o = e.options;
  if (context.training && !context.predict_input) {
    check_labels_fit_task(e, parts);
    check_batches(e, parts, context);
    check_sampler(e, parts);
    if (o.train.mixup.enabled() && parts.loss && !losses::takes_soft_targets(*parts.loss))
      throw ConfigError(key_at(e, "/train/mixup") +
                        "train.mixup trains with soft targets, which loss '" + parts.about.loss +
                        "' does not take: use loss: {name: cross_entropy} or switch mixup off");
    check_validation(e, parts);
    check_shared_memory(e, parts);
    check_profile(e, parts, context);
  }
  // Batches made from a split decoded up front have no sample to leave out: the decoding
  // stops at the first file it cannot read.
  if (o.data.on_bad_image == "skip" && (o.data.device == "cpu" || o.data.device == "cuda"))
    throw ConfigError(key_at(e, "/data/on_bad_image") + "data.on_bad_image skip leaves samples " +
                      "out as the loader makes batches, but data.device " + o.data.device +
                      " decodes every split before training: set data.device: loader (or auto)");
  // The split the predictions come from exists (a set key is refused, a default warned of).
  const bool predicts = !context.predict_input && (context.training ? o.predict.enabled : true);
  const auto& split = o.predict.split == "val" ? parts.splits.val : parts.splits.test;
  if (predicts && samples_in(split) == 0) {
    const std::string what =
        "the dataset (" + parts.about.dataset + ") has no " + o.predict.split + " split to predict";
    // Predictions asked for: a predict key set to other than its default, or runner predict.
    if (config::user_set(e.doc, e.marks, "/predict") || !context.training)
      throw ConfigError(key_at(e, "/predict") + "predict.split " + o.predict.split + ": " + what +
                        (context.training ? ": set predict.enabled: false, or predict.split to a "
                                            "split it has"
                                          : ": give --split val or test, or --input FOLDER"));
    warnings.push_back(what +
                       ": this run writes no predictions (predict.enabled: false says "
                       "so without this warning)");
  }
  return warnings;
}

}  // namespace runner::run
