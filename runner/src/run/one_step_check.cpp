#include "run/one_step_check.hpp"

#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include <torch/torch.h>

#include "config/source_map.hpp"
#include "data/batch.hpp"
#include "models/torchscript_error.hpp"
#include "run/build_run_parts.hpp"
#include "run/usable_sample.hpp"
#include "runner/error.hpp"
#include "train/autocast_guard.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/mixup.hpp"
#include "train/model_ema.hpp"
#include "train/step_rig.hpp"
#include "train/test_time_augmentation.hpp"

namespace runner::run {
namespace {

std::string tensor_shape_text(const torch::Tensor& t) {
  std::string text;
  for (const int64_t size : t.sizes()) text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

std::string step_failure_reason(const std::exception& error) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  return models::error_reason_line(c10_error ? c10_error->what_without_backtrace() : error.what());
}

// The model key a failed forward names: model.path for a TorchScript file, else the backbone.
std::string step_model_where(const config::Experiment& e, const train::RunParts& parts) {
  if (!parts.about.model_options)
    return e.marks.value_mark("/model/path").to_string() + ": model.path " + parts.about.model_path;
  return e.marks.value_mark("/model/backbone").to_string() + ": model.backbone " +
         parts.about.backbone;
}

// What to change when the model refuses the images: a model of one input size (timm's ViTs and
// other patch models check it) takes model.kwargs.img_size or a resize; else channels or size.
std::string step_what_to_do(const train::RunParts& parts, const std::string& reason) {
  const bool fixed_size = reason.find("doesn't match model") != std::string::npos ||
                          reason.find("img_size") != std::string::npos ||
                          reason.find("Input image size") != std::string::npos;
  if (fixed_size && parts.about.backbone.rfind("timm/", 0) == 0)
    return "the model was built for one input size: set model.kwargs.img_size to the images' "
           "[height, width], or resize the images to the model's size in data.train_transforms "
           "and data.eval_transforms";
  if (fixed_size)
    return "the model was built for one input size: resize the images to it in "
           "data.train_transforms and data.eval_transforms";
  return "make data.train_transforms and data.eval_transforms give the images the model takes "
         "(model.in_chans channels, a size its layers fit)";
}

// The run's CPU random stream (model init, transforms, dropout) goes on as if this had not run.
class RandomStateKept {
 public:
  RandomStateKept() : state_(train::cpu_rng_state()) {}
  ~RandomStateKept() { train::set_cpu_rng_state(state_); }
  RandomStateKept(const RandomStateKept&) = delete;
  RandomStateKept& operator=(const RandomStateKept&) = delete;

 private:
  torch::Tensor state_;
};

// A model the check steps, put back afterwards as the run built it: its parameters (where the
// check's backward and optimizer step change them), its buffers (BatchNorm's running
// statistics) and no gradients.
class ModelStateKept {
 public:
  ModelStateKept(torch::nn::Module& model, bool parameters) : model_(model) {
    torch::NoGradGuard no_grad;
    if (parameters)
      for (const auto& p : model.parameters()) parameters_.push_back(p.detach().clone());
    for (const auto& b : model.buffers()) buffers_.push_back(b.detach().clone());
  }
  ~ModelStateKept() {
    torch::NoGradGuard no_grad;
    const auto parameters = model_.parameters();
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (i < parameters_.size()) parameters[i].copy_(parameters_[i]);
      parameters[i].mutable_grad() = torch::Tensor();
    }
    const auto buffers = model_.buffers();
    for (size_t i = 0; i < buffers.size() && i < buffers_.size(); ++i)
      buffers[i].copy_(buffers_[i]);
  }
  ModelStateKept(const ModelStateKept&) = delete;
  ModelStateKept& operator=(const ModelStateKept&) = delete;

 private:
  torch::nn::Module& model_;
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> buffers_;
};

bool on_cpu(torch::nn::Module& model) {
  const auto parameters = model.parameters();
  return parameters.empty() || parameters.front().device().is_cpu();
}

// The run's loss, telling afterwards whether it was the loss that threw: the step's failure is
// then the loss's (its key and parameters) rather than the model's.
class WatchedLoss final : public losses::Loss {
 public:
  explicit WatchedLoss(losses::Loss& loss) : loss_(loss) {}
  torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) override {
    try {
      return loss_.compute(logits, targets);
    } catch (...) {
      threw_ = true;
      throw;
    }
  }
  bool threw() const { return threw_; }

 private:
  losses::Loss& loss_;
  bool threw_ = false;
};

// "bf16 (autocast on the CPU, as the run has it)" for the lines that name the precision.
std::string precision_words(config::Precision precision) {
  return config::precision_name(precision) + " (autocast on the CPU, as the run has it)";
}

// "model.backbone small_cnn" or "model.path m.pt", without where it was written.
std::string model_words(const train::RunParts& parts) {
  return parts.about.model_options ? "model.backbone " + parts.about.backbone
                                   : "model.path " + parts.about.model_path;
}

// A forward `run` that failed at the run's reduced precision: whether it runs in fp32, which
// makes the precision the thing to change.
bool runs_in_fp32(const std::function<void()>& forward) {
  try {
    forward();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

void check_one_step(const config::Experiment& e, const train::RunParts& parts, bool training,
                    bool initial_weights) {
  const data::DatasetSplits& splits = parts.splits;
  const bool train_sample = training && splits.train && splits.train->size() > 0;
  const std::shared_ptr<data::Dataset> eval_split =
      splits.val && splits.val->size() > 0 ? splits.val : splits.test;
  const bool eval_sample = eval_split && eval_split->size() > 0;
  if (!parts.make_model || !parts.about.model_options || (!train_sample && !eval_sample)) return;

  const RandomStateKept kept;
  const uint64_t seed = e.options.seed;
  const config::TrainOptions& t = e.options.train;
  // As a CPU rank runs: its precision (fp16 runs as bf16 or fp32) and weight layout.
  const config::Precision precision = train::precision_on_cpu(e.options.precision);
  // The run's own model where it is on the CPU (validate's parts have none, a GPU run's is on
  // its device): stepped, then put back as it was; else a fresh one with the initial weights.
  const bool runs_model = parts.model && on_cpu(*parts.model);
  std::shared_ptr<models::Model> model = runs_model ? parts.model : parts.make_model();
  if (!runs_model) {
    if (initial_weights) load_initial_weights(e, *model, /*announce=*/false);
    model->to(torch::kCPU);
  }
  const bool backward = count_parameters(*model).first <= kFullStepLimit;
  std::optional<ModelStateKept> model_kept;
  if (runs_model) {
    model_kept.emplace(*model, /*parameters=*/backward);
    // Thawed while the optimizer is made, as the run made its own: its groups hold the part
    // model.freeze froze (freeze_part below freezes it again).
    models::FrozenPart thawed = parts.frozen;
    models::set_frozen(thawed, false);
  }
  if (!runs_model)  // the run's model has the run's layout
    train::apply_memory_format(
        train::channels_last_as_run(t.channels_last_mode, torch::kCPU, precision), *model);
  std::unique_ptr<optim::Optimizer> optimizer;
  if (training) {  // the optimizer's groups (layer_decay, param_groups) fit this model
    try {
      optimizer = parts.make_optimizer(*model);
    } catch (const ConfigError& error) {
      throw ConfigError(plugin_error_located(e, error.what(), "/optimizer"));
    }
  }
  // model.freeze's patterns name parameters of this model, and leave something to train.
  const models::FrozenPart frozen = freeze_part(e, *model);
  const std::string where = step_model_where(e, parts);
  // The model refuses images at the run's precision but not in fp32: the precision is the key.
  const auto refuse_precision = [&](const std::string& reason) {
    return ConfigError(e.marks.value_mark("/precision").to_string() + ": " + model_words(parts) +
                       " cannot run at precision " + precision_words(precision) + ": " + reason +
                       "; set precision: fp32");
  };

  if (train_sample) {
    // Two samples: one sample breaks BatchNorm after global pooling in training mode.
    std::vector<data::Sample> samples;
    size_t next = 0;
    for (size_t i = 0; i < 2; ++i) {
      const auto [sample, index] = usable_sample(e, *splits.train, next);
      samples.push_back(sample);
      parts.train_pipeline.apply(samples.back(), seed, 0, index);
      next = std::min(index + 1, splits.train->size() - 1);
    }
    const data::Batch batch = data::collate(samples, {0, 1}, {false, false});
    model->train();
    models::keep_frozen_statistics(frozen);
    // The forward alone first, so that images the model cannot take are said as such.
    const auto forward_at = [&](config::Precision p) {
      torch::NoGradGuard no_grad;
      const train::AutocastGuard autocast(p, torch::kCPU);
      return model->forward(batch.images);
    };
    torch::Tensor logits;
    try {
      logits = forward_at(precision);
    } catch (const std::exception& error) {
      const std::string reason = step_failure_reason(error);
      if (precision != config::Precision::kFp32 &&
          runs_in_fp32([&] { forward_at(config::Precision::kFp32); }))
        throw refuse_precision(reason);
      throw ConfigError(
          where + " cannot take the training images (" + tensor_shape_text(batch.images) +
          " after data.train_transforms): " + reason + "; " + step_what_to_do(parts, reason));
    }
    if (logits.dim() != 2)
      throw ConfigError(where + " returns " + tensor_shape_text(logits) + " for images " +
                        tensor_shape_text(batch.images) + ", not logits [N, classes]");
    // Then the run's own step: autocast, the loss on train.mixup's soft targets (or the task's
    // targets), the scaled backward, clipping, the optimizer and train.ema's update.
    const torch::Tensor labels =
        (batch.targets.defined() ? batch.targets : batch.labels).clamp_min(0);  // unlabelled: 0
    const bool mixup = t.mixup.enabled();
    WatchedLoss loss(*parts.loss);
    try {
      if (backward && optimizer) {
        train::StepRigOptions rig;
        rig.clip_grad_norm = t.clip_grad_norm;
        rig.ema = t.ema.enabled;
        const double lr = optim::first_group_lr(optimizer->torch_optimizer());
        rig.lrs = {lr, lr};
        train::StepRig steps({nullptr, torch::kCPU, precision}, model, *optimizer, loss, rig);
        std::unique_ptr<train::ModelEma> ema;
        if (t.ema.enabled) {
          ema = std::make_unique<train::ModelEma>(*model, t.ema);
          steps.step().attach_ema(ema.get());
        }
        torch::Tensor images = batch.images, targets = labels;
        if (mixup)
          std::tie(images, targets) = train::Mixup(t.mixup, parts.about.model_options->num_classes)
                                          .mix_batch(seed, 0, 0, 0, 1, batch.images, labels);
        steps.step().micro_batch(images, targets, t.grad_accum_steps, /*sync=*/true);
        steps.step().finish();
      } else {
        loss.compute(logits.to(torch::kFloat), labels);
      }
    } catch (const ConfigError& error) {
      throw ConfigError(plugin_error_located(e, error.what(), "/loss"));
    } catch (const std::exception& error) {
      const std::string reason = step_failure_reason(error);
      if (loss.threw() && mixup)
        throw ConfigError(e.marks.value_mark("/loss/name").to_string() + ": loss " +
                          parts.about.loss + " on the model's logits (" +
                          tensor_shape_text(logits) +
                          ") and train.mixup's soft targets failed: " + reason +
                          "; use a loss that takes class probabilities (cross_entropy) or switch "
                          "train.mixup off");
      if (loss.threw())
        throw ConfigError(e.marks.value_mark("/loss/name").to_string() + ": loss " +
                          parts.about.loss + " on the model's logits (" +
                          tensor_shape_text(logits) + ") and labels failed: " + reason +
                          "; check the loss's parameters against model.num_classes");
      throw ConfigError(where + " fails in the training step (forward and backward at precision " +
                        precision_words(precision) + (mixup ? ", train.mixup's images" : "") +
                        "): " + reason);
    }
  }
  if (eval_sample) {
    auto [sample, index] = usable_sample(e, *eval_split, 0);
    parts.eval_pipeline.apply(sample, seed, 0, index);
    const data::Batch batch = data::collate({sample}, {0}, {false});
    model->eval();
    // As the Evaluator runs it: inference mode, autocast at the run's precision.
    const auto evaluate_at = [&](config::Precision p, const torch::Tensor& images) {
      c10::InferenceMode inference;
      const train::AutocastGuard autocast(p, torch::kCPU);
      return model->forward(images);
    };
    try {
      evaluate_at(precision, batch.images);
    } catch (const std::exception& error) {
      const std::string reason = step_failure_reason(error);
      if (precision != config::Precision::kFp32 &&
          runs_in_fp32([&] { evaluate_at(config::Precision::kFp32, batch.images); }))
        throw refuse_precision(reason);
      throw ConfigError(
          where + " cannot take the evaluation images (" + tensor_shape_text(batch.images) +
          " after data.eval_transforms): " + reason + "; " + step_what_to_do(parts, reason));
    }  // predict.tta's views: a scale the model cannot take (too small to downsample, a timm
    // model of one input size) is refused here rather than after training.
    for (const config::TtaView& view : e.options.predict.tta) {
      const torch::Tensor images = train::tta_view(view, batch.images);
      try {
        evaluate_at(precision, images);
      } catch (const std::exception& error) {
        throw ConfigError(e.marks.value_mark("/predict/tta").to_string() + ": predict.tta " +
                          view.text() + " gives the model images of " + tensor_shape_text(images) +
                          ", which it cannot take: " + step_failure_reason(error) +
                          "; drop the view or choose a factor nearer 1");
      }
    }
  }
}

}  // namespace runner::run
