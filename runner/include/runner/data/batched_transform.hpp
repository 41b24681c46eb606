#pragma once
// What a transform provides to run on whole batches of tensors (data.device): its random choices
// drawn per sample from the sample's own Rng, in the order its per-sample apply() draws them,
// then one tensor operation over the batch, on whichever device the batch is. Seed, epoch and
// sample index give the same augmentation on either path; a transform implements both by
// drawing through the same draw().
//
// A transform plugin opts in by deriving from Transform and BatchedTransform both; one that does
// not is refused by name under data.device.

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "runner/data/rng.hpp"

namespace runner::data {

class BatchedTransform {
 public:
  virtual ~BatchedTransform() = default;
  /// Numbers one sample's draw() writes (0: the transform draws nothing).
  virtual int draws_per_sample() const { return 0; }
  /// Draws one sample's random choices into `out[0 .. draws_per_sample())`, consuming `rng`
  /// exactly as the per-sample apply() does; `height` x `width` is the size of the images as
  /// they reach this transform (choices such as a crop box depend on it).
  virtual void draw(Rng& /*rng*/, int64_t /*height*/, int64_t /*width*/, double* /*out*/) const {}
  /// Transforms `images` [B, C, H, W] (uint8 or float32, any device) given `draws`, a float64
  /// CPU tensor [B, draws_per_sample()] of each sample's draw(); returns the new batch (uint8
  /// stays uint8 where the per-sample transform keeps u8 images u8).
  virtual at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const = 0;
};

/// Derived from instead of BatchedTransform by a transform whose batched form exists for some of
/// its parameters only, so that data.device names the parameter at fault rather than the
/// transform (a separate class, so that BatchedTransform's layout stays as plugins built it).
class WithoutBatchedForm {
 public:
  virtual ~WithoutBatchedForm() = default;
  /// Which parameter value has no batched form and why, e.g. "border_mode wrap (grid_sample has
  /// no wrapping border)".
  virtual std::string why_not_batched() const = 0;
};

}  // namespace runner::data
