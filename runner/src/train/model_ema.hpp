#pragma once
// An exponential moving average of the model's weights (train.ema), as timm's ModelEmaV3: after
// every optimizer step each floating-point entry of the model's state (parameters, and BatchNorm's
// running statistics unless exclude_buffers) moves toward the model's by 1 - decay, with timm's
// decay schedule (0 at the first update: the average starts as a copy). The decay is computed
// on the device from a device count of updates: an update reads nothing back to the host.

#include <cstdint>
#include <map>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"

namespace runner::train {

/// timm's ModelEmaV3.get_decay(step) for the `updates`-th update (1-based), on the host.
double ema_decay(const config::EmaOptions& options, int64_t updates);

class ModelEma {
 public:
  /// A copy of `model`'s state, on the model's device or (device: cpu) the host.
  ModelEma(torch::nn::Module& model, const config::EmaOptions& options);

  /// One update after an optimizer step: ema <- lerp(ema, model, 1 - decay(updates + 1)).
  void update(torch::nn::Module& model);

  /// The updates so far, as counted on the device (a resume restores it).
  void set_updates(int64_t updates);
  /// The device count read back (checkpoints).
  int64_t updates() const;

  /// Exchanges the model's state with the average, entry by entry: called twice, everything
  /// is back. While exchanged, the model computes with the averaged weights.
  void exchange_with(torch::nn::Module& model);

 private:
  struct Entries {
    std::vector<torch::Tensor> averaged, copied;  ///< lerped; copied (integers, excluded buffers)
  };
  Entries entries_of(torch::nn::Module& module) const;

  /// The averaged entries of one dtype (their indices into ema_.averaged), for one foreach lerp.
  struct LerpGroup {
    c10::ScalarType dtype;
    std::vector<size_t> indices;
    std::vector<torch::Tensor> averaged;
  };

  config::EmaOptions options_;
  Entries ema_;
  std::vector<LerpGroup> lerp_groups_;
  torch::Tensor updates_;  ///< float64 0-dim on the average's device
  torch::Device device_;
};

/// Puts the average into the model for a scope (evaluation, a checkpoint of the average), and
/// the model's own weights back at its end; nothing when `ema` is null.
class EmaWeightsInModel {
 public:
  EmaWeightsInModel(ModelEma* ema, torch::nn::Module& model) : ema_(ema), model_(model) {
    if (ema_) ema_->exchange_with(model_);
  }
  ~EmaWeightsInModel() {
    if (ema_) ema_->exchange_with(model_);
  }
  EmaWeightsInModel(const EmaWeightsInModel&) = delete;
  EmaWeightsInModel& operator=(const EmaWeightsInModel&) = delete;

 private:
  ModelEma* ema_;
  torch::nn::Module& model_;
};

}  // namespace runner::train
