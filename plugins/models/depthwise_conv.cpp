#include "depthwise_conv.hpp"
#include "layers.hpp"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace runner::models {
namespace {

// acc[tap][c] += grad[c] * in[c] for c in [begin, end): the inner loop, compiled for AVX-512,
// AVX2 and the baseline, picked at load time (the build targets plain x86-64).
__attribute__((target_clones("avx512f", "avx2", "default"))) void accumulate(
    float* __restrict acc, const float* __restrict grad, const float* __restrict in, int64_t begin,
    int64_t end) {
  for (int64_t c = begin; c < end; ++c) acc[c] += grad[c] * in[c];
}

class DepthwiseConv : public torch::autograd::Function<DepthwiseConv> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               bool has_bias, int64_t stride) {
    const at::ScalarType type = autocast_type(x);
    // The casts autocast would make, made here so that backward has the tensors it computed on.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(
        c10::DispatchKeySet({c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA}));
    const torch::Tensor xc = x.to(type), wc = weight.to(type);
    const torch::Tensor bc = has_bias ? bias.to(type) : torch::Tensor();
    const int64_t pad = (weight.size(2) - 1) / 2;
    ctx->save_for_backward({xc, wc});
    ctx->saved_data["x_type"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["stride"] = stride;
    return at::conv2d(xc, wc, bc, stride, pad, 1, x.size(1));
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& xc = saved[0];
    const torch::Tensor& wc = saved[1];
    const torch::Tensor grad = grads[0].to(xc.scalar_type());
    const int64_t k = wc.size(2), stride = ctx->saved_data["stride"].toInt();
    const auto x_type = static_cast<at::ScalarType>(ctx->saved_data["x_type"].toInt());
    const torch::Tensor grad_x = input_grad(xc, wc, grad, stride).to(x_type);
    const torch::Tensor grad_w = depthwise_weight_grad(xc, grad, k, stride);
    torch::Tensor grad_b;
    if (ctx->saved_data["has_bias"].toBool()) grad_b = grad.sum({0, 2, 3}, false, at::kFloat);
    return {grad_x, grad_w, grad_b, torch::Tensor(), torch::Tensor()};
  }

 private:
  /// d/dx: a stride-1 "same" convolution's is the convolution of its output gradient with the
  /// kernel turned by 180 degrees, and a stride-s one's output is the stride-1 output at every
  /// s-th pixel, so its gradient spread back to those pixels (zero between) takes the same path.
  /// ATen's own is as fast in float32 at stride 2, and 20-100x slower in bf16 (its generic path).
  static torch::Tensor input_grad(const torch::Tensor& xc, const torch::Tensor& wc,
                                  const torch::Tensor& grad, int64_t stride) {
    const int64_t k = wc.size(2), pad = (k - 1) / 2, channels = xc.size(1);
    if (stride > 1 && xc.scalar_type() == at::kFloat)
      return std::get<0>(at::convolution_backward(grad, xc, wc, std::nullopt, {stride, stride},
                                                  {pad, pad}, {1, 1}, false, {0, 0}, channels,
                                                  {true, false, false}));
    torch::Tensor spread = grad;
    if (stride > 1) {
      spread = at::zeros(xc.sizes(), grad.options().memory_format(xc.suggest_memory_format()));
      using torch::indexing::Slice;
      spread.index_put_(
          {Slice(), Slice(), Slice(0, std::nullopt, stride), Slice(0, std::nullopt, stride)}, grad);
    }
    return at::conv2d(spread, wc.flip({2, 3}), {}, 1, pad, 1, channels);
  }
};

}  // namespace

torch::Tensor depthwise_weight_grad(const torch::Tensor& x, const torch::Tensor& grad_output,
                                    int64_t kernel, int64_t stride) {
  TORCH_CHECK(x.is_cpu() && grad_output.is_cpu(), "depthwise_weight_grad runs on CPU tensors");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t out_h = grad_output.size(2), out_w = grad_output.size(3);
  const int64_t pad = (kernel - 1) / 2, taps = kernel * kernel;
  // Channels last in float32: each tap's update is one contiguous run over the channels.
  const at::Tensor in = x.to(at::kFloat).permute({0, 2, 3, 1}).contiguous();
  const at::Tensor grad = grad_output.to(at::kFloat).permute({0, 2, 3, 1}).contiguous();
  at::Tensor acc = at::zeros({taps, c}, at::kFloat);
  const float* in_data = in.data_ptr<float>();
  const float* grad_data = grad.data_ptr<float>();
  float* acc_data = acc.data_ptr<float>();
  // Threads split the channels (each owns its part of every tap's row: no reduction after).
  constexpr int64_t kChannelsPerTask = 64;
  at::parallel_for(0, c, kChannelsPerTask, [&](int64_t c0, int64_t c1) {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < out_h; ++y)
        for (int64_t xx = 0; xx < out_w; ++xx) {
          const float* g = grad_data + ((b * out_h + y) * out_w + xx) * c;
          // Input pixel (y * stride + i - pad, xx * stride + j - pad): the taps inside the image.
          const int64_t top = y * stride - pad, left = xx * stride - pad;
          for (int64_t i = std::max<int64_t>(0, -top); i < std::min(kernel, h - top); ++i) {
            const int64_t iy = top + i;
            for (int64_t j = std::max<int64_t>(0, -left); j < std::min(kernel, w - left); ++j) {
              const int64_t ix = left + j;
              accumulate(acc_data + (i * kernel + j) * c, g, in_data + ((b * h + iy) * w + ix) * c,
                         c0, c1);
            }
          }
        }
  });
  return acc.t().reshape({c, 1, kernel, kernel});
}

torch::Tensor depthwise_conv2d(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, int64_t stride) {
  const int64_t k = weight.size(2);
  TORCH_CHECK(
      weight.size(1) == 1 && weight.size(3) == k && k % 2 == 1 && weight.size(0) == x.size(1),
      "depthwise_conv2d takes a [C, 1, k, k] kernel with k odd for C input channels");
  TORCH_CHECK(stride >= 1, "depthwise_conv2d takes a stride of at least 1");
  if (!x.is_cpu()) return at::conv2d(x, weight, bias, stride, (k - 1) / 2, 1, x.size(1));
  // An autograd Function takes no undefined tensor: an absent bias is an empty one.
  return DepthwiseConv::apply(x, weight, bias.defined() ? bias : torch::empty({0}), bias.defined(),
                              stride);
}

}  // namespace runner::models
