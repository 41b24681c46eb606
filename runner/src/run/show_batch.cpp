#include "run/show_batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/class_name.hpp"
#include "data/loader.hpp"
#include "run/build_run_parts.hpp"
#include "run/rank_loader.hpp"
#include "runner/error.hpp"
#include "train/mixup.hpp"
#include "util/atomic_file.hpp"

namespace runner::run {

ShownBatch first_batch(const config::Experiment& experiment, const std::string& split,
                       int64_t count) {
  PartsRequest request;
  request.model = false;
  request.training = false;
  request.pretrained = false;
  const train::RunParts parts = build_run_parts(experiment, request);
  return first_batch(parts, experiment.options, split, count);
}

namespace {

// What `plan` did to each shown sample: its own image's weight, cutmix or mixup, and the label
// of the image mixed in (timm mixes element i with element N-1-i in every mode).
void describe_mix(const train::MixPlan& plan, const torch::Tensor& labels, ShownBatch& shown) {
  const torch::Tensor all = labels.to(torch::kLong).cpu().contiguous();
  const int64_t total = all.size(0);
  for (size_t i = 0; i < shown.lam.size(); ++i) {
    const double lam = plan.per_batch ? plan.batch_lam : plan.lam.at(i);
    if (lam >= 1.0) continue;
    const bool cutmix = plan.per_batch ? plan.batch_cutmix : plan.blend.at(i) == 1.0f;
    shown.lam[i] = lam;
    shown.mix_mode[i] = cutmix ? "cutmix" : "mixup";
    shown.mixed_with[i] = all.data_ptr<int64_t>()[total - 1 - static_cast<int64_t>(i)];
  }
}

}  // namespace

ShownBatch first_batch(const train::RunParts& parts, const config::ExperimentOptions& o,
                       const std::string& split, int64_t count) {
  const bool training = split == "train";
  const auto& dataset = training ? parts.splits.train : parts.splits.val;
  if (!dataset || dataset->size() == 0)
    throw ConfigError("runner show-batch: the dataset has no " + split + " split to show");
  // Rank 0's loader, its first batch whole even where the split is shorter than a batch.
  data::LoaderOptions lo = rank_loader_options(o, parts, training, 0, /*drop_last=*/false);
  lo.num_workers = 0;
  data::DataLoader loader(dataset, training ? parts.train_pipeline : parts.eval_pipeline, lo);
  loader.start_epoch(0);
  auto batch = loader.next();
  if (!batch) throw ConfigError("runner show-batch: the " + split + " split made no batch");
  ShownBatch shown;
  shown.class_names = parts.splits.class_names;
  shown.sampler = training ? o.data.sampler : "dataset order";
  const int64_t classes = parts.splits.num_classes > 0 ? parts.splits.num_classes
                                                       : batch->labels.max().item<int64_t>() + 1;
  if (shown.class_names.empty())
    for (int64_t c = 0; c < classes; ++c) shown.class_names.push_back(std::to_string(c));
  torch::Tensor images = batch->images, labels = batch->labels;
  torch::Tensor targets = batch->targets.defined()  // task: multilabel: every label
                              ? batch->targets
                              : torch::one_hot(labels.clamp_min(0), classes).to(torch::kFloat);
  const int64_t n = std::min<int64_t>(count, images.size(0));
  shown.lam.assign(static_cast<size_t>(n), 1.0);
  shown.mix_mode.assign(static_cast<size_t>(n), "none");
  shown.mixed_with.assign(static_cast<size_t>(n), -1);
  if (training && o.train.mixup.enabled() && images.size(0) % 2 == 0) {
    // The training loop's mix of this batch: rank 0's stream of epoch 0, batch 0.
    const train::Mixup mixup(o.train.mixup, classes);
    train::RngMixRandom random(
        train::Mixup::stream(o.seed, 0, 0, 0, static_cast<int>(lo.world_size)));
    const train::MixPlan plan =
        mixup.draw(random, images.size(0), images.size(2), images.size(3), mixup.mixes_in(0));
    std::tie(images, targets) = mixup.apply(plan, images, labels);
    describe_mix(plan, labels, shown);
  }
  shown.images = images.slice(0, 0, n).to(torch::kFloat).contiguous();
  shown.targets = targets.slice(0, 0, n).to(torch::kFloat).contiguous();
  shown.labels = batch->labels.slice(0, 0, n).to(torch::kLong).cpu().contiguous();
  shown.indices = batch->indices.slice(0, 0, n).to(torch::kLong).cpu().contiguous();
  return shown;
}

std::vector<std::string> captions(const ShownBatch& batch) {
  std::vector<std::string> out;
  const auto name = [&](int64_t c) { return data::class_name(batch.class_names, c); };
  for (int64_t i = 0; i < batch.targets.size(0); ++i) {
    const torch::Tensor row = batch.targets[i];
    if (row.gt(0.999).sum().item<int64_t>() > 1) {  // multi-hot: every label of the image
      std::string names;
      for (int64_t c = 0; c < row.size(0); ++c)
        if (row[c].item<double>() > 0.999) names += (names.empty() ? "" : " + ") + name(c);
      out.push_back(names);
      continue;
    }
    const auto s = static_cast<size_t>(i);
    const int64_t label = batch.labels[i].item<int64_t>();
    // Unmixed, or mixed with an image of its own class: the class alone.
    if (batch.mix_mode.empty() || batch.mix_mode[s] == "none" || batch.mixed_with[s] == label) {
      out.push_back(name(label));
      continue;
    }
    out.push_back(fmt::format("{} x{:.2f} + {} x{:.2f}{}", name(label), batch.lam[s],
                              name(batch.mixed_with[s]), 1 - batch.lam[s],
                              batch.mix_mode[s] == "cutmix" ? " cutmix" : ""));
  }
  return out;
}

nlohmann::json batch_description(const ShownBatch& batch) {
  nlohmann::json samples = nlohmann::json::array();
  const auto text = captions(batch);
  for (int64_t i = 0; i < batch.targets.size(0); ++i) {
    const torch::Tensor row = batch.targets[i].contiguous();
    std::vector<double> target(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
    const auto s = static_cast<size_t>(i);
    nlohmann::json sample = {{"caption", text[s]},
                             {"label", batch.labels[i].item<int64_t>()},
                             {"index", batch.indices[i].item<int64_t>()},
                             {"target", target},
                             {"lam", s < batch.lam.size() ? batch.lam[s] : 1.0},
                             {"mode", s < batch.mix_mode.size() ? batch.mix_mode[s] : "none"}};
    if (s < batch.mixed_with.size() && batch.mixed_with[s] >= 0)
      sample["mixed_with"] = batch.mixed_with[s];
    samples.push_back(std::move(sample));
  }
  return {{"samples", samples},
          {"sampler", batch.sampler},
          {"image_size", {batch.images.size(1), batch.images.size(2), batch.images.size(3)}}};
}

void write_batch_grid(const ShownBatch& batch, const std::filesystem::path& path) {
  const int64_t n = batch.images.size(0), c = batch.images.size(1);
  const int64_t h = batch.images.size(2), w = batch.images.size(3);
  // The batch's own range (1st..99th percentile) to 0..255: normalized images become visible.
  const torch::Tensor flat = batch.images.flatten();
  const auto sorted = std::get<0>(flat.sort());
  const double lo = sorted[static_cast<int64_t>(0.01 * (flat.numel() - 1))].item<double>();
  const double hi = sorted[static_cast<int64_t>(0.99 * (flat.numel() - 1))].item<double>();
  const torch::Tensor u8 = ((batch.images - lo) * (255.0 / std::max(hi - lo, 1e-6)))
                               .clamp(0, 255)
                               .to(torch::kByte)
                               .permute({0, 2, 3, 1})
                               .contiguous();
  const int scale =
      static_cast<int>(std::max<int64_t>(1, (112 + std::max(h, w) - 1) / std::max(h, w)));
  const int tile_w = static_cast<int>(w) * scale, tile_h = static_cast<int>(h) * scale;
  const int caption_h = 18, pad = 6, columns = static_cast<int>(std::min<int64_t>(n, 8));
  const int rows = static_cast<int>((n + columns - 1) / columns);
  const int cell_w = std::max(tile_w, 150) + pad;
  cv::Mat canvas(rows * (tile_h + caption_h + pad) + pad, columns * cell_w + pad, CV_8UC3,
                 cv::Scalar(255, 255, 255));
  const auto text = captions(batch);
  for (int64_t i = 0; i < n; ++i) {
    const int x = pad + static_cast<int>(i % columns) * cell_w;
    const int y = pad + static_cast<int>(i / columns) * (tile_h + caption_h + pad);
    cv::Mat image(static_cast<int>(h), static_cast<int>(w), CV_8UC(static_cast<int>(c)),
                  u8[i].data_ptr<uint8_t>());
    cv::Mat bgr;
    if (c == 1)
      cv::cvtColor(image, bgr, cv::COLOR_GRAY2BGR);
    else if (c == 3)
      cv::cvtColor(image, bgr, cv::COLOR_RGB2BGR);
    else {  // other channel counts: the first channel
      cv::Mat first;
      cv::extractChannel(image, first, 0);
      cv::cvtColor(first, bgr, cv::COLOR_GRAY2BGR);
    }
    cv::resize(bgr, bgr, cv::Size(tile_w, tile_h), 0, 0, cv::INTER_NEAREST);
    bgr.copyTo(canvas(cv::Rect(x, y, tile_w, tile_h)));
    cv::putText(canvas, text[static_cast<size_t>(i)], cv::Point(x, y + tile_h + 13),
                cv::FONT_HERSHEY_SIMPLEX, 0.38, cv::Scalar(30, 30, 30), 1, cv::LINE_AA);
  }
  std::vector<uint8_t> bytes;
  if (!cv::imencode(".png", canvas, bytes)) throw Error("OpenCV could not encode " + path.string());
  util::AtomicFile file(path.string());
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace runner::run
