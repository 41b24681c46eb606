#include "runner/models/batch_norm.hpp"

#include "models/batch_norm_cpu.hpp"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "runner/error.hpp"

namespace runner::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The all-reduce travels to backward inside ctx->saved_data, which holds only IValues.
struct SyncHook : torch::CustomClassHolder {
  explicit SyncHook(AllReduceSum fn) : all_reduce_sum(std::move(fn)) {}
  AllReduceSum all_reduce_sum;
};

// Every dimension but the channels (1).
std::vector<int64_t> reduce_dims(const torch::Tensor& input) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

// [C] -> [1, C, 1, ...] for broadcasting against the input.
torch::Tensor per_channel(const torch::Tensor& t, const torch::Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = -1;
  return t.view(shape);
}

// Statistics in fp32 at least: bf16/fp16 inputs would lose the variance.
torch::ScalarType widened_type(torch::ScalarType type) {
  return type == torch::kBFloat16 || type == torch::kHalf ? torch::kFloat : type;
}
torch::Tensor widened(const torch::Tensor& t) { return t.to(widened_type(t.scalar_type())); }

// Normalisation with given global statistics; backward completes the gradient through them
// with one all-reduce of per-channel sum(dy) and sum(dy * (x - mean)), as nn.SyncBatchNorm.
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& mean, const torch::Tensor& invstd, double count,
                               const c10::intrusive_ptr<SyncHook>& hook) {
    auto x = widened(input);
    auto y = (x - per_channel(mean, x)) * per_channel(invstd, x);
    if (weight.defined()) y = y * per_channel(weight, x);
    if (bias.defined()) y = y + per_channel(bias, x);
    ctx->save_for_backward({input, weight, mean, invstd});
    ctx->saved_data["count"] = count;
    ctx->saved_data["bias_type"] =
        static_cast<int64_t>(bias.defined() ? bias.scalar_type() : input.scalar_type());
    ctx->saved_data["hook"] = c10::IValue::make_capsule(hook);
    return y.to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const auto& input = saved[0];
    const auto& weight = saved[1];
    const auto& mean = saved[2];
    const auto& invstd = saved[3];
    const double count = ctx->saved_data["count"].toDouble();
    const auto bias_type = static_cast<torch::ScalarType>(ctx->saved_data["bias_type"].toInt());
    const auto capsule = ctx->saved_data["hook"].toCapsule();
    const auto* hook = static_cast<const SyncHook*>(capsule.get());

    auto x = widened(input);
    auto dy = widened(grad_outputs[0]).to(x.scalar_type());
    const auto dims = reduce_dims(x);
    auto xmu = x - per_channel(mean, x);
    auto sum_dy = dy.sum(dims);
    auto sum_dy_xmu = (dy * xmu).sum(dims);

    torch::Tensor grad_input, grad_weight, grad_bias;
    // Weight and bias get this rank's share; data parallelism sums the shares across ranks.
    if (weight.defined() && ctx->needs_input_grad(1)) grad_weight = sum_dy_xmu * invstd;
    if (ctx->needs_input_grad(2)) grad_bias = sum_dy.clone();
    if (ctx->needs_input_grad(0)) {
      const int64_t channels = mean.size(0);
      auto both = torch::cat({sum_dy, sum_dy_xmu});
      hook->all_reduce_sum(both);
      auto mean_dy = both.slice(0, 0, channels) / count;
      auto mean_dy_xmu = both.slice(0, channels, 2 * channels) / count;
      auto scale = weight.defined() ? invstd * weight : invstd;
      grad_input =
          (dy - per_channel(mean_dy, x) - xmu * per_channel(invstd * invstd * mean_dy_xmu, x)) *
          per_channel(scale, x);
      grad_input = grad_input.to(input.scalar_type());
    }
    if (grad_weight.defined()) grad_weight = grad_weight.to(weight.scalar_type());
    if (grad_bias.defined()) grad_bias = grad_bias.to(bias_type);
    return {grad_input,      grad_weight,     grad_bias,      torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

BatchNorm2dImpl::BatchNorm2dImpl(const torch::nn::BatchNormOptions& options) : options(options) {
  reset();
}

void BatchNorm2dImpl::reset() {
  const int64_t n = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", torch::empty({n}));
    bias = register_parameter("bias", torch::empty({n}));
  } else {
    weight = register_parameter("weight", torch::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({n}));
    running_var = register_buffer("running_var", torch::ones({n}));
    num_batches_tracked =
        register_buffer("num_batches_tracked", torch::tensor(0, torch::dtype(torch::kLong)));
  } else {
    running_mean = register_buffer("running_mean", torch::Tensor());
    running_var = register_buffer("running_var", torch::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", torch::Tensor());
  }
  reset_parameters();
}

void BatchNorm2dImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm2dImpl::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    torch::nn::init::ones_(weight);
    torch::nn::init::zeros_(bias);
  }
}

torch::Tensor BatchNorm2dImpl::forward(const torch::Tensor& input) { return apply(input, false); }

torch::Tensor BatchNorm2dImpl::forward_relu(const torch::Tensor& input) {
  return apply(input, true);
}

torch::Tensor BatchNorm2dImpl::apply(const torch::Tensor& input, bool relu) {
  if (input.dim() != 4) {
    throw Error("BatchNorm2d: expected a 4-d input [N, C, H, W] (got " +
                std::to_string(input.dim()) + "-d)");
  }
  // The momentum logic of torch's BatchNormImplBase::forward, shared by both paths.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
    num_batches_tracked += 1;
    if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();
  }
  if (is_training() && !all_reduce_sum_ && cpu_batch_norm_applies(input, weight)) {
    return cpu_batch_norm_train(input, weight, bias, running_mean, running_var, factor,
                                options.eps(), relu);
  }
  if (!is_training() || !all_reduce_sum_) {
    torch::Tensor out = torch::nn::functional::detail::batch_norm(
        input, running_mean, running_var, weight, bias,
        is_training() || !options.track_running_stats(), factor, options.eps());
    return relu ? torch::relu(out) : out;
  }
  const int64_t channels = input.size(1);
  torch::Tensor mean, invstd;
  double count = 0;
  {
    torch::NoGradGuard no_grad;
    // Per rank: count, sum and sum of squares from a stable local mean and variance, in
    // double, so that the global variance loses nothing to cancellation. One all-reduce.
    auto local = torch::zeros({2 * channels + 1}, input.options().dtype(torch::kDouble));
    const int64_t local_count = channels > 0 ? input.numel() / channels : 0;
    if (local_count > 0) {
      auto [var, m] = torch::var_mean(widened(input.detach()), reduce_dims(input),
                                      /*unbiased=*/false, /*keepdim=*/false);
      auto md = m.to(torch::kDouble);
      auto vd = var.to(torch::kDouble);
      const double n = static_cast<double>(local_count);
      local.slice(0, 0, channels).copy_(md * n);
      local.slice(0, channels, 2 * channels).copy_((vd + md * md) * n);
      local[2 * channels] = n;
    }
    all_reduce_sum_(local);
    count = local[2 * channels].item<double>();
    if (count <= 1) {
      throw Error(
          "SyncBatchNorm: expected more than 1 value per channel across all ranks in "
          "training (got " +
          std::to_string(static_cast<int64_t>(count)) +
          "); use a larger batch size or bn_sync: broadcast");
    }
    auto global_mean = local.slice(0, 0, channels) / count;
    auto global_var =
        (local.slice(0, channels, 2 * channels) / count - global_mean * global_mean).clamp_min(0);
    const auto stats_type = widened_type(input.scalar_type());
    mean = global_mean.to(stats_type);
    invstd = (global_var + options.eps()).rsqrt().to(stats_type);

    if (options.track_running_stats()) {
      auto unbiased = global_var * (count / (count - 1));
      running_mean.mul_(1 - factor).add_(global_mean.to(running_mean.scalar_type()), factor);
      running_var.mul_(1 - factor).add_(unbiased.to(running_var.scalar_type()), factor);
    }
  }
  torch::Tensor out = SyncBatchNormFunction::apply(input, weight, bias, mean, invstd, count,
                                                   c10::make_intrusive<SyncHook>(all_reduce_sum_));
  return relu ? torch::relu(out) : out;
}

torch::Tensor batch_norm(const torch::Tensor& input, const torch::Tensor& weight,
                         const torch::Tensor& bias, const torch::Tensor& running_mean,
                         const torch::Tensor& running_var, bool training, double momentum,
                         double eps, bool cudnn_enabled) {
  if (training && weight.defined() == bias.defined() &&
      running_mean.defined() == running_var.defined() && cpu_batch_norm_applies(input, weight))
    return cpu_batch_norm_train(input, weight, bias, running_mean, running_var, momentum, eps,
                                false);
  return at::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                        cudnn_enabled);
}

void BatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "runner::models::BatchNorm2d(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << (options.affine() ? "true" : "false")
         << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false")
         << ", sync=" << (synchronised() ? "true" : "false") << ")";
}

}  // namespace runner::models
