#include "small_output_conv.hpp"
#include "layers.hpp"

#include <atomic>

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include "runner/models/compute_copies.hpp"

namespace runner::models {
namespace {

std::atomic<int64_t> max_gemm_pixels{kMaxGemmOutputPixels};

struct Geometry {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

class GemmConv : public torch::autograd::Function<GemmConv> {
 public:
  // rows [N * L, C * kh * kw]: one im2col row per output pixel, (c, ky, kx) as the weight's
  // [O, C, kh, kw] flattens; y = rows @ weight^T.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const Geometry& g, int64_t out_h, int64_t out_w) {
    const at::ScalarType type = autocast_type(x);
    // The casts autocast would make, made here so that backward has the tensors it computed on.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(
        c10::DispatchKeySet({c10::DispatchKey::AutocastCPU, c10::DispatchKey::AutocastCUDA}));
    const int64_t n = x.size(0), pixels = out_h * out_w, out_channels = weight.size(0);
    const torch::Tensor w2 = weight.to(type).reshape({out_channels, -1});
    const torch::Tensor rows = at::im2col(x.to(type), g.kernel, g.dilation, g.padding, g.stride)
                                   .transpose(1, 2)
                                   .reshape({n * pixels, w2.size(1)});
    const bool has_bias = bias.numel() > 0;
    const torch::Tensor y =
        has_bias ? at::addmm(bias.to(type), rows, w2.t()) : at::mm(rows, w2.t());
    ctx->save_for_backward({rows, w2});
    ctx->saved_data["x_sizes"] = x.sizes();
    ctx->saved_data["x_type"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["w_sizes"] = weight.sizes();
    ctx->saved_data["w_type"] = static_cast<int64_t>(weight.scalar_type());
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["kernel"] = g.kernel;
    ctx->saved_data["stride"] = g.stride;
    ctx->saved_data["padding"] = g.padding;
    ctx->saved_data["dilation"] = g.dilation;
    // Into a tensor of x's memory format with its canonical strides (a permuted view of 1x1
    // outputs would read as channels last to the next op).
    torch::Tensor out = at::empty({n, out_channels, out_h, out_w},
                                  y.options().memory_format(x.suggest_memory_format()));
    out.copy_(y.view({n, out_h, out_w, out_channels}).permute({0, 3, 1, 2}));
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& rows = saved[0];
    const torch::Tensor& w2 = saved[1];
    const auto x_sizes = ctx->saved_data["x_sizes"].toIntVector();
    const int64_t n = x_sizes[0];
    const torch::Tensor grad_rows =
        grads[0].to(rows.scalar_type()).permute({0, 2, 3, 1}).reshape({-1, w2.size(0)});
    torch::Tensor grad_x, grad_w, grad_b;
    if (ctx->needs_input_grad(0)) {
      const auto grad_cols = grad_rows.mm(w2).view({n, -1, w2.size(1)}).transpose(1, 2);
      grad_x =
          at::col2im(grad_cols, {x_sizes[2], x_sizes[3]}, ctx->saved_data["kernel"].toIntVector(),
                     ctx->saved_data["dilation"].toIntVector(),
                     ctx->saved_data["padding"].toIntVector(),
                     ctx->saved_data["stride"].toIntVector())
              .to(static_cast<at::ScalarType>(ctx->saved_data["x_type"].toInt()));
    }
    if (ctx->needs_input_grad(1)) {
      grad_w = grad_rows.t()
                   .mm(rows)
                   .view(ctx->saved_data["w_sizes"].toIntVector())
                   .to(static_cast<at::ScalarType>(ctx->saved_data["w_type"].toInt()));
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2))
      grad_b = grad_rows.sum(0, false, at::kFloat);
    return {grad_x, grad_w, grad_b, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

int64_t output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace

void set_gemm_output_pixels(int64_t max) { max_gemm_pixels.store(max); }
int64_t gemm_output_pixels() { return max_gemm_pixels.load(); }

torch::Tensor conv2d(const torch::nn::Conv2dImpl& conv, const torch::Tensor& x) {
  const auto& o = conv.options;
  const auto* padding = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (padding == nullptr || !std::holds_alternative<torch::enumtype::kZeros>(o.padding_mode()))
    return const_cast<torch::nn::Conv2dImpl&>(conv).forward(x);
  const auto k = *o.kernel_size(), s = *o.stride(), d = *o.dilation(), p = **padding;
  // The weight a convolution computes with: under CPU bf16 autocast in training, its kept bf16
  // copy (written by the optimizer: no cast of every weight in every forward), else itself.
  const torch::Tensor weight = compute_weight(conv.weight);
  const at::ScalarType type = autocast_type(x);
  const int64_t max_pixels = max_gemm_pixels.load();
  if (max_pixels > 0 && x.is_cpu() && x.dim() == 4 && o.groups() == 1 &&
      (type == at::kFloat || type == at::kBFloat16)) {
    const int64_t out_h = output_size(x.size(2), k[0], s[0], p[0], d[0]);
    const int64_t out_w = output_size(x.size(3), k[1], s[1], p[1], d[1]);
    if (out_h * out_w <= max_pixels) {
      const Geometry g{{k[0], k[1]}, {s[0], s[1]}, {p[0], p[1]}, {d[0], d[1]}};
      // An autograd Function takes no undefined tensor: no bias is an empty one.
      const torch::Tensor bias =
          conv.bias.defined() ? compute_weight(conv.bias) : torch::empty({0});
      return GemmConv::apply(x, weight, bias, g, out_h, out_w);
    }
  }
  // What Conv2dImpl::forward computes for zero padding, with the weight above.
  return torch::conv2d(x, weight, conv.bias.defined() ? compute_weight(conv.bias) : conv.bias,
                       {s[0], s[1]}, {p[0], p[1]}, {d[0], d[1]}, o.groups());
}

}  // namespace runner::models
