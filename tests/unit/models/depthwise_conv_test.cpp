// runner::models::depthwise_conv2d (the native ConvNeXt's 7x7 depthwise convolution, and the
// 3x3 and 5x5 ones at strides 1 and 2 of scripted EfficientNets and MobileNets, with runner's own
// backward) against at::conv2d and ATen's backward: outputs, input, weight and bias gradients,
// for NCHW and channels-last inputs, fp32 and bf16 autocast, and images down to one pixel
// (convnext_small's last stages at 56 px), within float rounding.

#include "models/depthwise_conv.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

struct Result {
  torch::Tensor out, grad_x, grad_w, grad_b;
};

Result run(bool ours, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
           const torch::Tensor& go, bool bf16, int64_t stride) {
  torch::Tensor x = x0.clone().requires_grad_(true);
  torch::Tensor w = w0.clone().requires_grad_(true);
  torch::Tensor b = b0.clone().requires_grad_(true);
  torch::Tensor out;
  {
    at::autocast::set_autocast_enabled(at::kCPU, bf16);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    out = ours ? runner::models::depthwise_conv2d(x, w, b, stride)
               : at::conv2d(x, w, b, stride, (w.size(2) - 1) / 2, 1, x.size(1));
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
  (out.to(torch::kFloat) * go).sum().backward();
  return {out.detach().to(torch::kFloat), x.grad(), w.grad(), b.grad()};
}

double relative(const torch::Tensor& got, const torch::Tensor& want) {
  return ((got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max() /
          want.to(torch::kDouble).abs().max().clamp_min(1e-12))
      .item<double>();
}

void expect_equal_to_aten(int64_t kernel, int64_t stride) {
  torch::manual_seed(0);
  for (const auto& [channels, size] :
       {std::pair<int64_t, int64_t>{96, 14}, {40, 9}, {24, 3}, {16, 1}, {8, 5}}) {
    for (bool channels_last : {false, true}) {
      for (bool bf16 : {false, true}) {
        SCOPED_TRACE(std::to_string(kernel) + "x" + std::to_string(kernel) + " stride " +
                     std::to_string(stride) + ", " + std::to_string(channels) + " channels, " +
                     std::to_string(size) + " px" + (channels_last ? ", channels last" : "") +
                     (bf16 ? ", bf16 autocast" : ""));
        torch::Tensor x = torch::randn({3, channels, size, size});
        if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
        const torch::Tensor w = torch::randn({channels, 1, kernel, kernel}) * 0.1;
        const torch::Tensor b = torch::randn({channels});
        const int64_t out_size = (size - 1) / stride + 1;
        const torch::Tensor go = torch::randn({3, channels, out_size, out_size});
        const Result want = run(false, x, w, b, go, bf16, stride);
        const Result got = run(true, x, w, b, go, bf16, stride);
        EXPECT_TRUE(got.grad_x.sizes() == want.grad_x.sizes());
        EXPECT_EQ(got.grad_x.scalar_type(), x.scalar_type());
        EXPECT_EQ(got.grad_w.scalar_type(), w.scalar_type());
        // fp32: summation order only; bf16: the same bf16 products, sums in another order.
        const double tolerance = bf16 ? 2e-2 : 1e-5;
        EXPECT_EQ(relative(got.out, want.out), 0.0) << "the forward is at::conv2d's own";
        EXPECT_LT(relative(got.grad_x, want.grad_x), tolerance);
        EXPECT_LT(relative(got.grad_w, want.grad_w), tolerance);
        EXPECT_LT(relative(got.grad_b, want.grad_b), tolerance);
      }
    }
  }
}

TEST(DepthwiseConv, OutputsAndGradientsEqualAtenConv2d) { expect_equal_to_aten(7, 1); }

TEST(DepthwiseConv, EfficientNetsKernelsAndStridesEqualAtenConv2d) {
  for (int64_t kernel : {3, 5})
    for (int64_t stride : {1, 2}) expect_equal_to_aten(kernel, stride);
}

// depthwise_weight_grad of one image and one channel with a 3x3 kernel at `stride` against
// every tap summed by hand: output pixel (y, x) reads input (stride * y + i - 1, stride * x + j
// - 1), zero outside the image.
void expect_taps_summed_by_hand(const torch::Tensor& x, const torch::Tensor& go, int stride) {
  const torch::Tensor got = runner::models::depthwise_weight_grad(x, go, 3, stride);
  const auto xa = x.accessor<float, 4>(), ga = go.accessor<float, 4>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double want = 0;
      for (int y = 0; y < go.size(2); ++y)
        for (int xx = 0; xx < go.size(3); ++xx) {
          const int iy = stride * y + i - 1, ix = stride * xx + j - 1;
          if (iy >= 0 && iy < x.size(2) && ix >= 0 && ix < x.size(3))
            want += ga[0][0][y][xx] * xa[0][0][iy][ix];
        }
      EXPECT_EQ(got[0][0][i][j].item<double>(), want) << "tap " << i << "," << j;
    }
}

TEST(DepthwiseConv, TheWeightGradientIsTheSumOfEachTapsProducts) {
  expect_taps_summed_by_hand(torch::arange(1, 13, torch::kFloat).reshape({1, 1, 3, 4}),
                             torch::arange(1, 13, torch::kFloat).reshape({1, 1, 3, 4}).flip({3}),
                             1);
}

TEST(DepthwiseConv, AStrideTwoWeightGradientSumsEachTapOverTheSampledPixels) {
  // 5x4 at stride 2: a 3x2 output.
  expect_taps_summed_by_hand(torch::arange(1, 21, torch::kFloat).reshape({1, 1, 5, 4}),
                             torch::arange(1, 7, torch::kFloat).reshape({1, 1, 3, 2}).flip({3}), 2);
}

}  // namespace
