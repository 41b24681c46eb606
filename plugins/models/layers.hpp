#pragma once
// Small layers the timm backbones share: LayerNorm2d, stochastic depth, truncated-normal init.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

namespace runner::models {

/// LayerNorm over dim `channel_dim` (1 for NCHW, -1 for NHWC) with timm's parameters
/// `weight`/`bias`. Reduced-precision inputs are normalised in float32 and cast back:
/// Debian's libtorch 1.13 crashes in layer_norm under CPU autocast otherwise.
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t channels, double eps, bool channels_first);
  torch::Tensor forward(torch::Tensor x);

 private:
  int64_t channels_;
  double eps_;
  bool channels_first_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(LayerNorm);

/// timm's drop_path: in training, zeroes whole samples with probability `p` and scales the
/// survivors by 1/(1-p); the identity in eval mode or when p == 0.
torch::Tensor drop_path(const torch::Tensor& x, double p, bool training);

/// The type a convolution or matrix product of `x` runs in under autocast on x's device (x's own
/// type when autocast is off there).
at::ScalarType autocast_type(const torch::Tensor& x);

/// timm's trunc_normal_(std): N(0, std) truncated to [-2, 2] (absolute bounds, as timm's).
void trunc_normal_(torch::Tensor w, double std);

/// `rate` * i / (n - 1) for block i of n, as timm spreads drop_path_rate over blocks.
std::vector<double> linear_drop_rates(double rate, int64_t n);

/// The schema of `drop_rate`, the classifier dropout a native backbone takes (timm's
/// drop_rate), as {"drop_rate": {...}} for model_params_schema.
nlohmann::json drop_rate_property();

/// model.drop_rate of a validated `model:` section (0 when absent).
double drop_rate_from(const nlohmann::json& params);

/// The schema of `grad_checkpointing` (timm's set_grad_checkpointing), as {"grad_checkpointing":
/// {...}} for model_params_schema.
nlohmann::json grad_checkpointing_property();

/// The same key for a model that cannot recompute: only false, with `why` as the hint.
nlohmann::json no_grad_checkpointing_property(const std::string& why);

/// model.grad_checkpointing: every `Block` of `model` recomputes in backward (or not).
template <class Block>
void set_block_checkpointing(torch::nn::Module& model, bool on) {
  for (const auto& m : model.modules(/*include_self=*/false))
    if (auto* block = dynamic_cast<Block*>(m.get())) block->set_checkpointing(on);
}

}  // namespace runner::models
