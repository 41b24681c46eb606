#include "run/one_step_check.hpp"

#include <string>

#include <torch/torch.h>

#include "config/source_map.hpp"
#include "data/batch.hpp"
#include "models/torchscript_error.hpp"
#include "run/build_run_parts.hpp"
#include "run/usable_sample.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"
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
  const std::shared_ptr<models::Model> model = parts.make_model();  // fresh, on the CPU
  try {  // the initial weights must fit it, as they will in the run
    if (initial_weights) load_initial_weights(e.doc.at("model"), *model, /*announce=*/false);
  } catch (const DataError& error) {
    const std::string key = e.doc.at("model").value("init_from", nlohmann::json()).is_string()
                                ? "init_from"
                                : "pretrained";
    throw ConfigError(e.marks.value_mark("/model/" + key).to_string() + ": model." + key + ": " +
                      error.what());
  }
  model->to(torch::kCPU);
  if (training) {  // the optimizer's groups (layer_decay, param_groups) fit this model
    try {
      parts.make_optimizer(*model);
    } catch (const ConfigError& error) {
      throw ConfigError(plugin_error_located(e, error.what(), "/optimizer"));
    }
  }
  // model.freeze's patterns name parameters of this model, and leave something to train.
  const models::FrozenPart frozen = freeze_part(e, *model);
  const bool backward = count_parameters(*model).first <= kFullStepLimit;
  const std::string where = step_model_where(e, parts);

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
    torch::Tensor logits;
    try {
      model->train();
      models::keep_frozen_statistics(frozen);
      torch::AutoGradMode grad(backward);
      logits = model->forward(batch.images);
    } catch (const std::exception& error) {
      const std::string reason = step_failure_reason(error);
      throw ConfigError(
          where + " cannot take the training images (" + tensor_shape_text(batch.images) +
          " after data.train_transforms): " + reason + "; " + step_what_to_do(parts, reason));
    }
    if (logits.dim() != 2)
      throw ConfigError(where + " returns " + tensor_shape_text(logits) + " for images " +
                        tensor_shape_text(batch.images) + ", not logits [N, classes]");
    const torch::Tensor labels = batch.labels.clamp_min(0);  // unlabelled samples: class 0
    try {
      const torch::Tensor loss = parts.loss->compute(logits, labels);
      if (backward && loss.requires_grad()) loss.backward();
    } catch (const ConfigError& error) {
      throw ConfigError(plugin_error_located(e, error.what(), "/loss"));
    } catch (const std::exception& error) {
      throw ConfigError(e.marks.value_mark("/loss").to_string() + ": loss " + parts.about.loss +
                        " on the model's logits (" + tensor_shape_text(logits) +
                        ") and labels failed: " + step_failure_reason(error) +
                        "; check the loss's parameters against model.num_classes");
    }
  }
  if (eval_sample) {
    auto [sample, index] = usable_sample(e, *eval_split, 0);
    parts.eval_pipeline.apply(sample, seed, 0, index);
    const data::Batch batch = data::collate({sample}, {0}, {false});
    try {
      torch::NoGradGuard no_grad;
      model->eval();
      model->forward(batch.images);
    } catch (const std::exception& error) {
      const std::string reason = step_failure_reason(error);
      throw ConfigError(
          where + " cannot take the evaluation images (" + tensor_shape_text(batch.images) +
          " after data.eval_transforms): " + reason + "; " + step_what_to_do(parts, reason));
    }  // predict.tta's views: a scale the model cannot take (too small to downsample, a timm
    // model of one input size) is refused here rather than after training.
    for (const config::TtaView& view : e.options.predict.tta) {
      const torch::Tensor images = train::tta_view(view, batch.images);
      try {
        torch::NoGradGuard no_grad;
        model->forward(images);
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
