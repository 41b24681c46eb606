#pragma once
// predict.tta: the class probabilities of a batch averaged over views of it (flips, scales), as
// logits whose softmax is that mean, so metrics, the loss and the predictions take them as any.

#include <functional>
#include <vector>

#include <torch/types.h>

#include "config/experiment_options.hpp"

namespace runner::train {

/// `images` [B, C, H, W] as `view` shows them: mirrored (hflip: the width, vflip: the height) or
/// resized bilinearly (align_corners false) to floor(size x scale + 0.5) on each side.
torch::Tensor tta_view(const config::TtaView& view, const torch::Tensor& images);

/// log(mean over the images and each view of softmax(forward(view))), float32 [B, classes];
/// `multilabel`: logit(mean of sigmoid(forward(view))), each class on its own. Without views,
/// forward(images) itself.
torch::Tensor tta_logits(const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                         const torch::Tensor& images, const std::vector<config::TtaView>& views,
                         bool multilabel = false);

}  // namespace runner::train
