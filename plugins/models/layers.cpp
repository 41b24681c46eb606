#include "layers.hpp"

#include <ATen/autocast_mode.h>

namespace runner::models {

LayerNormImpl::LayerNormImpl(int64_t channels, double eps, bool channels_first)
    : channels_(channels), eps_(eps), channels_first_(channels_first) {
  weight_ = register_parameter("weight", torch::ones({channels}));
  bias_ = register_parameter("bias", torch::zeros({channels}));
}

torch::Tensor LayerNormImpl::forward(torch::Tensor x) {
  // Autocast must not re-cast inside: the normalisation runs in float32 whatever the input.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(
      c10::DispatchKeySet({c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA}));
  const auto in_type = x.scalar_type();
  const bool reduced = in_type == torch::kHalf || in_type == torch::kBFloat16;
  torch::Tensor y = reduced ? x.to(torch::kFloat) : x;
  if (channels_first_) y = y.permute({0, 2, 3, 1});
  y = torch::layer_norm(y, {channels_}, weight_.to(y.scalar_type()), bias_.to(y.scalar_type()),
                        eps_);
  if (channels_first_) y = y.permute({0, 3, 1, 2});
  return reduced ? y.to(in_type) : y;
}

torch::Tensor drop_path(const torch::Tensor& x, double p, bool training) {
  if (p <= 0.0 || !training) return x;
  const double keep = 1.0 - p;
  std::vector<int64_t> shape(x.dim(), 1);
  shape[0] = x.size(0);
  torch::Tensor mask = torch::empty(shape, x.options()).bernoulli_(keep);
  if (keep > 0.0) mask.div_(keep);
  return x * mask;
}

at::ScalarType autocast_type(const torch::Tensor& x) {
  const auto device = x.device().type();
  if (at::autocast::is_autocast_enabled(device) && x.is_floating_point())
    return at::autocast::get_autocast_dtype(device);
  return x.scalar_type();
}

void trunc_normal_(torch::Tensor w, double std) {
  torch::NoGradGuard no_grad;
  w.normal_(0.0, std).clamp_(-2.0, 2.0);
}

std::vector<double> linear_drop_rates(double rate, int64_t n) {
  std::vector<double> out(n, 0.0);
  for (int64_t i = 0; i < n && n > 1; ++i) out[i] = rate * static_cast<double>(i) / (n - 1);
  return out;
}

nlohmann::json drop_rate_property() {
  return {{"drop_rate",
           {{"type", "number"},
            {"minimum", 0},
            {"maximum", 1},
            {"default", 0.0},
            {"description",
             "Dropout before the classifier in training (timm's drop_rate, train.py's --drop): "
             "the pooled features are zeroed with this probability and the rest scaled by "
             "1/(1-p). 0: none."}}}};
}

double drop_rate_from(const nlohmann::json& params) { return params.value("drop_rate", 0.0); }

nlohmann::json no_grad_checkpointing_property(const std::string& why) {
  return {{"grad_checkpointing",
           {{"type", "boolean"},
            {"enum", {false}},
            {"default", false},
            {"description", "Not for this model: " + why + "."},
            {"x-runner-hint", why}}}};
}

nlohmann::json grad_checkpointing_property() {
  return {{"grad_checkpointing",
           {{"type", "boolean"},
            {"default", false},
            {"description",
             "Recompute each block's activations in backward instead of keeping them (timm's "
             "set_grad_checkpointing): less memory for one more forward of every block. The "
             "same losses and gradients; BatchNorm statistics and dropout draws as without it."}}}};
}

}  // namespace runner::models
