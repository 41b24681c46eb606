#include "train/mixup.hpp"

#include <algorithm>
#include <cmath>

#include "runner/error.hpp"

namespace runner::train {

// ---- draws ---------------------------------------------------------------------------------

// Marsaglia and Tsang's method; a shape below 1 through Gamma(shape + 1) * U^(1 / shape).
double RngMixRandom::gamma(double shape) {
  if (shape < 1.0) return gamma(shape + 1.0) * std::pow(1.0 - rng_.uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng_.normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - rng_.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double RngMixRandom::beta(double alpha) {
  const double a = gamma(alpha), b = gamma(alpha);
  return a + b > 0 ? a / (a + b) : 0.5;
}

int64_t RngMixRandom::randint(int64_t low, int64_t high) {
  return high <= low ? low : rng_.uniform_int(low, high - 1);
}

data::Rng Mixup::stream(uint64_t seed, int64_t epoch, int64_t batch, int rank, int world_size) {
  // A stream of its own beside the samples' augmentation streams (seed, epoch, sample index).
  constexpr uint64_t kMixupStream = 0x6D69787570ULL;  // "mixup"
  return data::Rng(seed ^ kMixupStream, static_cast<uint64_t>(epoch),
                   static_cast<uint64_t>(batch * world_size + rank));
}

// ---- the plan, as timm's Mixup draws it --------------------------------------------------------

bool MixPlan::mixes() const {
  if (per_batch) return batch_lam != 1.0;
  return std::any_of(lam.begin(), lam.end(), [](float l) { return l != 1.0f; });
}

Mixup::Mixup(const config::MixupOptions& options, int64_t num_classes)
    : options_(options),
      cutmix_alpha_(options.cutmix_minmax ? 1.0 : options.cutmix_alpha),
      num_classes_(num_classes) {
  if (num_classes_ < 1) throw Error("internal: train.mixup needs the number of classes");
}

bool Mixup::mixes_in(int64_t epoch) const {
  return !options_.off_epoch || epoch < *options_.off_epoch;
}

// timm's cutmix_bbox_and_lam: rand_bbox (a square-ish box of sqrt(1 - lam) of each side around
// a uniform centre, clipped) or rand_bbox_minmax, and lam corrected to the box's area.
Mixup::Box Mixup::cutmix_box(MixRandom& random, int64_t h, int64_t w, double lam) const {
  Box box{};
  if (options_.cutmix_minmax) {
    const auto [lo, hi] = *options_.cutmix_minmax;
    const int64_t cut_h =
        random.randint(static_cast<int64_t>(h * lo), static_cast<int64_t>(h * hi));
    const int64_t cut_w =
        random.randint(static_cast<int64_t>(w * lo), static_cast<int64_t>(w * hi));
    box.yl = random.randint(0, h - cut_h + 1);
    box.xl = random.randint(0, w - cut_w + 1);
    box.yh = box.yl + cut_h;
    box.xh = box.xl + cut_w;
  } else {
    const double ratio = std::sqrt(1.0 - lam);
    const auto cut_h = static_cast<int64_t>(static_cast<double>(h) * ratio);
    const auto cut_w = static_cast<int64_t>(static_cast<double>(w) * ratio);
    const int64_t cy = random.randint(0, h), cx = random.randint(0, w);
    box.yl = std::clamp<int64_t>(cy - cut_h / 2, 0, h);
    box.yh = std::clamp<int64_t>(cy + (cut_h + 1) / 2, 0, h);  // timm 1.0: odd cuts stay whole
    box.xl = std::clamp<int64_t>(cx - cut_w / 2, 0, w);
    box.xh = std::clamp<int64_t>(cx + (cut_w + 1) / 2, 0, w);
  }
  box.lam = lam;
  if (options_.correct_lam || options_.cutmix_minmax)
    box.lam = 1.0 - static_cast<double>((box.yh - box.yl) * (box.xh - box.xl)) /
                        static_cast<double>(h * w);
  return box;
}

void Mixup::params_per_element(MixRandom& random, int64_t count, bool enabled,
                               std::vector<float>& lam, std::vector<uint8_t>& cutmix) const {
  lam.assign(static_cast<size_t>(count), 1.0f);
  cutmix.assign(static_cast<size_t>(count), 0);
  if (!enabled) return;
  const auto n = static_cast<size_t>(count);
  std::vector<double> mixed(n);
  const double mixup_alpha = options_.mixup_alpha;
  if (mixup_alpha > 0 && cutmix_alpha_ > 0) {  // numpy's vectorised order: all of each in turn
    for (size_t i = 0; i < n; ++i) cutmix[i] = random.uniform() < options_.switch_prob;
    std::vector<double> of_cutmix(n), of_mixup(n);
    for (auto& v : of_cutmix) v = random.beta(cutmix_alpha_);
    for (auto& v : of_mixup) v = random.beta(mixup_alpha);
    for (size_t i = 0; i < n; ++i) mixed[i] = cutmix[i] ? of_cutmix[i] : of_mixup[i];
  } else if (mixup_alpha > 0) {
    for (auto& v : mixed) v = random.beta(mixup_alpha);
  } else {
    std::fill(cutmix.begin(), cutmix.end(), 1);
    for (auto& v : mixed) v = random.beta(cutmix_alpha_);
  }
  for (size_t i = 0; i < n; ++i)
    if (random.uniform() < options_.prob) lam[i] = static_cast<float>(mixed[i]);
}

MixPlan Mixup::draw(MixRandom& random, int64_t batch, int64_t h, int64_t w, bool enabled) const {
  if (batch % 2 != 0)
    throw ConfigError("train.mixup: a batch of " + std::to_string(batch) +
                      " images; mixup pairs image i with image N-1-i and needs an even "
                      "per-process batch (timm's rule): set train.batch_size to an even number");
  MixPlan plan;
  plan.per_batch = options_.mode == "batch";
  if (plan.per_batch) {  // timm's _params_per_batch and _mix_batch
    if (!enabled || random.uniform() >= options_.prob) return plan;
    double lam = 1.0;
    bool use_cutmix = false;
    if (options_.mixup_alpha > 0 && cutmix_alpha_ > 0) {
      use_cutmix = random.uniform() < options_.switch_prob;
      lam = use_cutmix ? random.beta(cutmix_alpha_) : random.beta(options_.mixup_alpha);
    } else if (options_.mixup_alpha > 0) {
      lam = random.beta(options_.mixup_alpha);
    } else {
      use_cutmix = true;
      lam = random.beta(cutmix_alpha_);
    }
    plan.batch_lam = lam;
    if (lam == 1.0) return plan;
    if (use_cutmix) {
      const Box box = cutmix_box(random, h, w, lam);
      plan.batch_cutmix = true;
      plan.batch_lam = box.lam;
      plan.yl = box.yl, plan.yh = box.yh, plan.xl = box.xl, plan.xh = box.xh;
    }
    return plan;
  }
  // elem: a draw per element; pair: per pair (i, N-1-i), both sides alike.
  const bool pairs = options_.mode == "pair";
  const int64_t draws = pairs ? batch / 2 : batch;
  std::vector<float> lam;
  std::vector<uint8_t> cutmix;
  params_per_element(random, draws, enabled, lam, cutmix);
  const auto n = static_cast<size_t>(batch);
  plan.lam.assign(n, 1.0f);
  plan.blend.assign(n, 1.0f);
  plan.box_yl.assign(n, 0), plan.box_yh.assign(n, 0), plan.box_xl.assign(n, 0),
      plan.box_xh.assign(n, 0);
  for (int64_t i = 0; i < draws; ++i) {
    const auto at = static_cast<size_t>(i);
    std::vector<size_t> sides{at};
    if (pairs) sides.push_back(n - 1 - at);
    float element_lam = lam[at];
    float blend = element_lam;
    Box box{};
    if (element_lam != 1.0f && cutmix[at]) {
      box = cutmix_box(random, h, w, element_lam);
      element_lam = static_cast<float>(box.lam);
      blend = 1.0f;
    }
    for (size_t s : sides) {
      plan.lam[s] = element_lam;
      plan.blend[s] = blend;
      plan.box_yl[s] = box.yl, plan.box_yh[s] = box.yh, plan.box_xl[s] = box.xl,
      plan.box_xh[s] = box.xh;
    }
  }
  return plan;
}

// ---- on the device ----------------------------------------------------------------------------

std::pair<torch::Tensor, torch::Tensor> Mixup::smoothed_one_hots(
    const torch::Tensor& labels) const {
  const double off = options_.label_smoothing / static_cast<double>(num_classes_);
  const double on = 1.0 - options_.label_smoothing + off;
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(labels.device());
  const auto one_hot = [&](const torch::Tensor& y) {
    return torch::full({labels.size(0), num_classes_}, off, options)
        .scatter_(1, y.view({-1, 1}), on);
  };
  return {one_hot(labels), one_hot(labels.flip(0))};
}

torch::Tensor Mixup::soft_targets(const torch::Tensor& labels, const torch::Tensor& lam) const {
  const auto [y1, y2] = smoothed_one_hots(labels);
  return y1 * lam + y2 * (1 - lam);
}

torch::Tensor Mixup::soft_targets(const torch::Tensor& labels, double lam) const {
  const auto [y1, y2] = smoothed_one_hots(labels);
  return y1 * lam + y2 * (1.0 - lam);
}

std::pair<torch::Tensor, torch::Tensor> Mixup::apply(const MixPlan& plan,
                                                     const torch::Tensor& images,
                                                     const torch::Tensor& labels) const {
  const int64_t n = images.size(0);
  if (plan.per_batch) {
    const double lam = plan.batch_lam;
    torch::Tensor mixed = images;
    if (lam != 1.0 && plan.batch_cutmix) {
      mixed = images.clone();
      mixed.slice(2, plan.yl, plan.yh)
          .slice(3, plan.xl, plan.xh)
          .copy_(images.flip(0).slice(2, plan.yl, plan.yh).slice(3, plan.xl, plan.xh));
    } else if (lam != 1.0) {
      const torch::Tensor flipped = images.flip(0).mul_(1.0 - lam);
      mixed = images.mul(lam).add_(flipped);
    }
    return {mixed, soft_targets(labels, lam)};
  }
  const auto on_device = [&](const auto& values, torch::ScalarType dtype) {
    return torch::tensor(values, torch::TensorOptions().dtype(dtype))
        .to(images.device(), /*non_blocking=*/true);
  };
  const torch::Tensor lam = on_device(plan.lam, torch::kFloat).view({n, 1});
  torch::Tensor mixed = images;
  if (plan.mixes()) {
    const torch::Tensor blend = on_device(plan.blend, torch::kFloat).view({n, 1, 1, 1});
    const torch::Tensor flipped = images.flip(0);
    mixed = images * blend + flipped * (1 - blend);
    const auto h = images.size(2), w = images.size(3);
    const auto index = torch::TensorOptions().dtype(torch::kLong).device(images.device());
    const torch::Tensor ys = torch::arange(h, index).view({1, h, 1});
    const torch::Tensor xs = torch::arange(w, index).view({1, 1, w});
    const auto bound = [&](const std::vector<int64_t>& v) {
      return on_device(v, torch::kLong).view({n, 1, 1});
    };
    const torch::Tensor inside = (ys >= bound(plan.box_yl)) & (ys < bound(plan.box_yh)) &
                                 (xs >= bound(plan.box_xl)) & (xs < bound(plan.box_xh));
    mixed = torch::where(inside.unsqueeze(1), flipped, mixed);
  }
  return {mixed, soft_targets(labels, lam.to(images.scalar_type()))};
}

std::pair<torch::Tensor, torch::Tensor> Mixup::mix_batch(uint64_t seed, int64_t epoch,
                                                         int64_t batch, int rank, int world_size,
                                                         const torch::Tensor& images,
                                                         const torch::Tensor& labels) const {
  RngMixRandom random(stream(seed, epoch, batch, rank, world_size));
  const MixPlan plan =
      draw(random, images.size(0), images.size(2), images.size(3), mixes_in(epoch));
  return apply(plan, images, labels);
}

}  // namespace runner::train
