// runner::models::depthwise_conv2d (the native ConvNeXt's 7x7 depthwise convolution with
// runner's own backward) against at::conv2d and ATen's backward: outputs, input, weight and bias
// gradients, for NCHW and channels-last inputs, fp32 and bf16 autocast, and images down to one
// pixel (convnext_small's last stages at 56 px), within float rounding.

#include "models/depthwise_conv.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

struct Result {
  torch::Tensor out, grad_x, grad_w, grad_b;
};

Result run(bool ours, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
           const torch::Tensor& go, bool bf16) {
  torch::Tensor x = x0.clone().requires_grad_(true);
  torch::Tensor w = w0.clone().requires_grad_(true);
  torch::Tensor b = b0.clone().requires_grad_(true);
  torch::Tensor out;
  {
    at::autocast::set_autocast_enabled(at::kCPU, bf16);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    out = ours ? runner::models::depthwise_conv2d(x, w, b)
               : at::conv2d(x, w, b, 1, (w.size(2) - 1) / 2, 1, x.size(1));
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

TEST(DepthwiseConv, OutputsAndGradientsEqualAtenConv2d) {
  torch::manual_seed(0);
  for (const auto& [channels, size] :
       {std::pair<int64_t, int64_t>{96, 14}, {40, 9}, {24, 3}, {16, 1}, {8, 5}}) {
    for (bool channels_last : {false, true}) {
      for (bool bf16 : {false, true}) {
        SCOPED_TRACE(std::to_string(channels) + " channels, " + std::to_string(size) + " px" +
                     (channels_last ? ", channels last" : "") + (bf16 ? ", bf16 autocast" : ""));
        torch::Tensor x = torch::randn({3, channels, size, size});
        if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
        const torch::Tensor w = torch::randn({channels, 1, 7, 7}) * 0.1;
        const torch::Tensor b = torch::randn({channels});
        const torch::Tensor go = torch::randn({3, channels, size, size});
        const Result want = run(false, x, w, b, go, bf16);
        const Result got = run(true, x, w, b, go, bf16);
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

TEST(DepthwiseConv, TheWeightGradientIsTheSumOfEachTapsProducts) {
  // One image, one channel, a 3x3 kernel: every tap by hand (zero outside the image).
  const torch::Tensor x = torch::arange(1, 13, torch::kFloat).reshape({1, 1, 3, 4});
  const torch::Tensor go = torch::arange(1, 13, torch::kFloat).reshape({1, 1, 3, 4}).flip({3});
  const torch::Tensor got = runner::models::depthwise_weight_grad(x, go, 3);
  const auto xa = x.accessor<float, 4>(), ga = go.accessor<float, 4>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double want = 0;
      for (int y = 0; y < 3; ++y)
        for (int xx = 0; xx < 4; ++xx) {
          const int iy = y + i - 1, ix = xx + j - 1;
          if (iy >= 0 && iy < 3 && ix >= 0 && ix < 4) want += ga[0][0][y][xx] * xa[0][0][iy][ix];
        }
      EXPECT_EQ(got[0][0][i][j].item<double>(), want) << "tap " << i << "," << j;
    }
}

}  // namespace
