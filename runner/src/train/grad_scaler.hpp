#pragma once
// Dynamic loss scaling for fp16 training with torch.cuda.amp.GradScaler's semantics: scale the
// loss, unscale the gradients before clipping, skip the optimizer step when a gradient is
// inf/NaN, back the scale off on such a step and grow it after a run of good steps.
// The scale, the growth tracker and the found-inf flag live on the gradients' device and are
// updated there by ATen's own kernels (_amp_foreach_non_finite_check_and_unscale_,
// _amp_update_scale_; CPU and CUDA). The step is skipped on the device too: the optimizer reads
// the found-inf flag (runner::optim::Optimizer::update). Nothing here reads the device, except
// scale() and state() for logs and checkpoints.

#include <cstdint>
#include <functional>
#include <map>

#include <torch/torch.h>

namespace runner::train {

/// GradScaler's constructor arguments, with torch's defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;     ///< first scale (2^16)
  double growth_factor = 2.0;      ///< scale *= this after `growth_interval` good steps in a row
  double backoff_factor = 0.5;     ///< scale *= this on a step with inf/NaN gradients
  int64_t growth_interval = 2000;  ///< good steps in a row before growing
  bool enabled = true;             ///< false: every call is a pass-through (fp32, bf16)
};

/// What a checkpoint keeps of a scaler: plain numbers.
struct GradScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  ///< good steps in a row since the last growth or backoff
};

class GradScaler {
 public:
  /// Makes every rank agree on the found-inf flag: all-reduces a 1-element float32 tensor (on
  /// the gradients' device) in place with MAX. Called once per step inside unscale_(). Not
  /// needed for gradients that DDP already averaged (an inf anywhere is an inf everywhere).
  using AllReduceMax = std::function<void(torch::Tensor&)>;

  explicit GradScaler(GradScalerOptions options = {}, AllReduceMax all_reduce_max = nullptr);

  bool enabled() const { return options_.enabled; }
  /// The current scale (1 when disabled). Reads the device: for logs and checkpoints.
  double scale() const;
  /// The current scale as a float32 [1] device tensor (ones when disabled); no host read.
  torch::Tensor scale_tensor() const;

  /// `loss * scale()`; `loss` itself when disabled.
  torch::Tensor scale(const torch::Tensor& loss) const;

  /// Divides `optimizer`'s gradients by the scale in place and returns whether any is inf/NaN
  /// (agreed over ranks) as a float32 [1] device tensor, 1 or 0: the optimizer skips its update
  /// when it is set. A second call before update() only returns it again. Call it before gradient
  /// clipping so the clip sees the true gradients. Disabled: an undefined tensor.
  torch::Tensor unscale_(torch::optim::Optimizer& optimizer);

  /// Ends the step: backs off on inf/NaN, else counts a good step and grows the scale after
  /// `growth_interval` of them (only to a finite value). Requires unscale_() first.
  void update();

  /// Reads the device: for checkpoints.
  GradScalerState state() const;
  /// Restores a state() (from a checkpoint); throws runner::DataError on a non-positive scale.
  void load_state(const GradScalerState& state);

 private:
  struct PerOptimizer {
    bool unscaled = false;
    torch::Tensor found_inf;  ///< 1-element float32 on the scale's device: 1 = inf/NaN seen
  };
  /// Moves the scale and tracker to `device` when they are elsewhere (the first use, mostly).
  void place_on(const torch::Device& device) const;

  GradScalerOptions options_;
  AllReduceMax all_reduce_max_;
  mutable torch::Tensor scale_;           ///< float32 [1], as torch keeps it
  mutable torch::Tensor growth_tracker_;  ///< int32 [1]
  std::map<const torch::optim::Optimizer*, PerOptimizer> per_optimizer_;  // reset by update()
};

}  // namespace runner::train
