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
                         const torch::Tensor& images, const std::vector<config::TtaView>& views) {
  if (views.empty()) return forward(images);
  torch::Tensor sum = forward(images).to(torch::kFloat).softmax(1);
  for (const config::TtaView& view : views)
    sum = sum + forward(tta_view(view, images)).to(torch::kFloat).softmax(1);
  // The smallest normal float keeps a class no view gave any probability finite for the loss.
  return (sum / static_cast<double>(views.size() + 1)).clamp_min(1.17549435e-38f).log();
}

}  // namespace runner::train
