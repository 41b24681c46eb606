#include "train/test_time_augmentation.hpp"

#include <cmath>

#include <torch/torch.h>

namespace runner::train {

torch::Tensor tta_view(const config::TtaView& view, const torch::Tensor& images) {
  if (view.name == "hflip") return images.flip({3});
  if (view.name == "vflip") return images.flip({2});
  const auto side = [&](int64_t size) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::floor(size * view.scale + 0.5)));
  };
  namespace F = torch::nn::functional;
  return F::interpolate(images,
                        F::InterpolateFuncOptions()
                            .size(std::vector<int64_t>{side(images.size(2)), side(images.size(3))})
                            .mode(torch::kBilinear)
                            .align_corners(false));
}

torch::Tensor tta_logits(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                         const torch::Tensor& images, const std::vector<config::TtaView>& views,
                         bool multilabel) {
  if (views.empty()) return forward(images);
  const auto probabilities = [&](const torch::Tensor& x) {
    const torch::Tensor logits = forward(x).to(torch::kFloat);
    return multilabel ? logits.sigmoid() : logits.softmax(1);
  };
  torch::Tensor sum = probabilities(images);
  for (const config::TtaView& view : views) sum = sum + probabilities(tta_view(view, images));
  const torch::Tensor mean = sum / static_cast<double>(views.size() + 1);
  // logit(p) = log p - log(1 - p); the smallest normal float keeps a probability of 0 (or, for
  // sigmoid, 1) finite for the loss.
  constexpr float kTiny = 1.17549435e-38f;
  if (multilabel) return mean.clamp_min(kTiny).log() - (1 - mean).clamp_min(kTiny).log();
  return mean.clamp_min(kTiny).log();
}

}  // namespace runner::train
