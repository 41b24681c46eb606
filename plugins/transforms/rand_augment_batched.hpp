#pragma once
// timm's RandAugment ops over a batch of u8 images on the batch's device, each sample with its
// own op: the Pillow arithmetic of rand_augment_ops.cpp as tensor ops (the table ops as one
// gathered table per image and channel, Color and Sharpness as float32 blends, the affine ops
// as gathers of Pillow's bilinear or bicubic taps in float64), so that the batched path equals
// the per-sample one bit for bit.

#include <array>
#include <vector>

#include <ATen/core/Tensor.h>

#include "rand_augment_ops.hpp"

namespace runner::data::rand_augment {

/// What one sample's step does: `op` with `argument` (op_argument's) where `applied`.
struct SampleOp {
  Op op = Op::kAutoContrast;
  double argument = 0;
  bool bicubic = false;
  bool applied = false;
};

/// Applies `ops[s]` to sample s of `images` (u8 [N, C, H, W], C 1 or 3, any device; ops has N
/// entries); `fill`: what the affine ops uncover. Returns the new batch on the same device.
at::Tensor apply_ops(const at::Tensor& images, const std::vector<SampleOp>& ops,
                     const std::array<double, 3>& fill);

}  // namespace runner::data::rand_augment
