#include "run/shape_checks.hpp"

#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "config/experiment_options.hpp"
#include "data/batch.hpp"
#include "models/torchscript_error.hpp"
#include "run/build_run_parts.hpp"
#include "run/data_checks.hpp"
#include "run/usable_sample.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"

namespace runner::run {
namespace {

// A dataset that decodes images in a mode (image_folder, webdataset, ...) can give the model
// the channels it was built for: the other fix, said beside model.in_chans.
std::string mode_hint(const config::Experiment& e, int64_t in_chans) {
  const nlohmann::json& dataset = e.doc.at("data").at("dataset");
  if (!dataset.contains("mode") || (in_chans != 1 && in_chans != 3)) return "";
  return ", or data.dataset.mode: " + std::string(in_chans == 1 ? "grayscale" : "color");
}

std::string size_text(const cv::Mat& image) {
  return std::to_string(image.rows) + "x" + std::to_string(image.cols) + "x" +
         std::to_string(image.channels());
}

// The classes the training labels need: the dataset's count, else the largest label + 1.
int64_t classes_needed(const data::DatasetSplits& splits) {
  if (splits.num_classes > 0 || !splits.train || !splits.train->has_labels())
    return splits.num_classes;
  int64_t largest = -1;
  for (size_t i = 0; i < splits.train->size(); ++i)
    largest = std::max(largest, splits.train->label(i));
  return largest + 1;
}

std::string shape_text(const torch::Tensor& t) {
  std::string text;
  for (const int64_t size : t.sizes()) text += (text.empty() ? "" : "x") + std::to_string(size);
  return text;
}

// A torchscript backbone has no in_chans/num_classes keys: its file decides both. One forward
// of the first training image (eval mode, no gradients) finds a module that cannot take the
// images or gives fewer class scores than the labels need, before any rank trains.
void check_scripted_fits_data(const config::Experiment& e, const train::RunParts& parts,
                              int64_t needed) {
  const data::DatasetSplits& splits = parts.splits;
  if (!splits.train || splits.train->size() == 0) return;
  const std::string where =
      e.marks.value_mark("/model/path").to_string() + ": model.path " + parts.about.model_path;
  auto [sample, index] = usable_sample(e, *splits.train, 0);
  parts.train_pipeline.apply(sample, e.options.seed, 0, index);
  const data::Batch batch = data::collate({sample}, {0}, {false});
  const std::shared_ptr<models::Model> model = parts.model ? parts.model : parts.make_model();
  const auto parameters = model->parameters();
  const torch::Device device = parameters.empty() ? torch::kCPU : parameters.front().device();
  torch::Tensor logits;
  try {
    // Evaluation mode and no gradients: the forward changes no statistic of the model.
    torch::NoGradGuard no_grad;
    model->eval();
    logits = model->forward(batch.images.to(device));
    model->train();
  } catch (const std::exception& error) {  // c10::Error, or TorchScript's JITException
    const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
    throw ConfigError(
        where + " cannot take the training images (" + shape_text(batch.images) +
        " after data.train_transforms): " +
        models::error_reason_line(c10_error ? c10_error->what_without_backtrace() : error.what()) +
        "; give the module images of the channels and size it was built for");
  }
  if (logits.dim() != 2)
    throw ConfigError(where + " returns " + shape_text(logits) + " for images " +
                      shape_text(batch.images) +
                      ", not logits [N, classes]: save the module with its classifier head");
  if (logits.size(1) < needed)
    throw ConfigError(where + " gives " + std::to_string(logits.size(1)) +
                      " class scores but the dataset (" + parts.about.dataset + ") has " +
                      std::to_string(needed) +
                      " classes: save the module with that many outputs (timm: num_classes=" +
                      std::to_string(needed) + ")");
}

}  // namespace

void check_data_fits_model(const config::Experiment& e, const train::RunParts& parts) {
  check_samples(e, parts);
  const data::DatasetSplits& splits = parts.splits;
  const data::Pipeline& train_transforms = parts.train_pipeline;
  const data::Pipeline& eval_transforms = parts.eval_pipeline;
  const int64_t needed = classes_needed(splits);
  if (!parts.about.model_options) return check_scripted_fits_data(e, parts, needed);
  const uint64_t seed = e.options.seed;
  const int64_t num_classes = parts.about.model_options->num_classes;
  if (needed > num_classes)
    throw ConfigError(e.marks.value_mark("/model/num_classes").to_string() +
                      ": model.num_classes " + std::to_string(num_classes) + " but the dataset (" +
                      parts.about.dataset + ") has " + std::to_string(needed) +
                      " classes (labels 0.." + std::to_string(needed - 1) +
                      "): set model.num_classes: " + std::to_string(needed));

  const int64_t in_chans = parts.about.model_options->in_chans;
  if (splits.train && splits.train->size() > 0) {
    auto [sample, index] = usable_sample(e, *splits.train, 0);
    train_transforms.apply(sample, seed, 0, index);
    if (sample.image.channels() != in_chans)
      throw ConfigError(e.marks.value_mark("/model/in_chans").to_string() + ": model.in_chans " +
                        std::to_string(in_chans) + " but the training images have " +
                        std::to_string(sample.image.channels()) +
                        " channel(s) after data.train_transforms (sample 0 is " +
                        size_text(sample.image) + "): set model.in_chans: " +
                        std::to_string(sample.image.channels()) + mode_hint(e, in_chans));
  }

  // Evaluation batches stack images: every one must come out of the transforms the same size.
  for (const auto& split : {splits.val, splits.test}) {
    if (!split || split->size() < 2) continue;
    auto [first, first_index] = usable_sample(e, *split, 0);
    auto [last, last_index] = usable_sample(e, *split, split->size() - 1, /*backwards=*/true);
    eval_transforms.apply(first, seed, 0, first_index);
    eval_transforms.apply(last, seed, 0, last_index);
    if (first.image.size() != last.image.size() || first.image.channels() != in_chans ||
        last.image.channels() != in_chans)
      throw ConfigError(e.marks.value_mark("/data/eval_transforms").to_string() +
                        ": data.eval_transforms give " + size_text(first.image) +
                        " for the first evaluation image and " + size_text(last.image) +
                        " for the last (model.in_chans " + std::to_string(in_chans) +
                        "): add a resize to one size (and the channel count the model takes)");
  }
}

void check_data_fits_model(const config::Experiment& e) {
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // quietly: the run logs what the dataset says
  try {
    PartsRequest data_only;
    data_only.model = false;
    data_only.training = false;
    check_data_fits_model(e, build_run_parts(e, data_only));
  } catch (...) {
    spdlog::set_level(level);
    throw;
  }
  spdlog::set_level(level);
}

}  // namespace runner::run
