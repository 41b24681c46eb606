// runner::models::conv2d (the GEMM form of convolutions with few output pixels) against ATen's
// convolution: outputs and input, weight and bias gradients within float rounding, for the
// native ResNets' shapes at 56 px, strides, 1x1 and 3x3 kernels, NCHW and channels-last inputs,
// fp32 and bf16 autocast; larger outputs keep ATen's convolution; and a whole resnet18 step is
// the same with the GEMM form on and off.

#include "models/small_output_conv.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model_test_util.hpp"

namespace small_output_conv_test {

namespace nn = torch::nn;

struct Result {
  torch::Tensor out, grad_x, grad_w, grad_b;
};

// Restores the process-wide setting when a test ends.
struct GemmPixels {
  explicit GemmPixels(int64_t max) : saved(runner::models::gemm_output_pixels()) {
    runner::models::set_gemm_output_pixels(max);
  }
  ~GemmPixels() { runner::models::set_gemm_output_pixels(saved); }
  int64_t saved;
};

Result run(bool gemm, const nn::Conv2d& conv, const torch::Tensor& x0, const torch::Tensor& go,
           bool bf16) {
  GemmPixels pixels(gemm ? runner::models::kMaxGemmOutputPixels : 0);
  torch::Tensor x = x0.clone().requires_grad_(true);
  for (auto& p : conv->parameters()) p.mutable_grad().reset();
  torch::Tensor out;
  at::autocast::set_autocast_enabled(at::kCPU, bf16);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  out = runner::models::conv2d(*conv, x);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  (out.to(torch::kFloat) * go).sum().backward();
  return {out.detach(), x.grad(), conv->weight.grad().clone(),
          conv->bias.defined() ? conv->bias.grad().clone() : torch::Tensor()};
}

struct Case {
  int64_t in, size, out, kernel, stride;
  bool bias;
};

TEST(SmallOutputConv, OutputsAndGradientsEqualAtenConvolution) {
  torch::manual_seed(0);
  const std::vector<Case> cases = {{64, 2, 48, 3, 1, false}, {32, 4, 48, 3, 2, false},
                                   {40, 4, 24, 1, 2, false}, {24, 2, 40, 1, 1, true},
                                   {16, 3, 8, 2, 2, true},   {8, 1, 16, 3, 1, false}};
  for (const auto& c : cases) {
    for (bool channels_last : {false, true}) {
      for (bool bf16 : {false, true}) {
        SCOPED_TRACE(std::to_string(c.in) + "x" + std::to_string(c.size) + "px k" +
                     std::to_string(c.kernel) + " s" + std::to_string(c.stride) +
                     (channels_last ? ", channels last" : "") + (bf16 ? ", bf16 autocast" : ""));
        nn::Conv2d conv(nn::Conv2dOptions(c.in, c.out, c.kernel)
                            .stride(c.stride)
                            .padding(c.kernel == 2 ? 0 : c.kernel / 2)
                            .bias(c.bias));
        torch::Tensor x = torch::randn({3, c.in, c.size, c.size});
        if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
        const torch::Tensor want_out = conv->forward(x);
        ASSERT_LE(want_out.size(2) * want_out.size(3), runner::models::kMaxGemmOutputPixels);
        const torch::Tensor go = torch::randn(want_out.sizes());
        const Result want = run(false, conv, x, go, bf16);
        const Result got = run(true, conv, x, go, bf16);
        EXPECT_EQ(got.out.sizes(), want.out.sizes());
        EXPECT_EQ(got.out.scalar_type(), want.out.scalar_type());
        EXPECT_EQ(got.out.suggest_memory_format(), want.out.suggest_memory_format());
        EXPECT_EQ(got.grad_x.scalar_type(), torch::kFloat);
        EXPECT_EQ(got.grad_w.scalar_type(), torch::kFloat);
        // fp32: sums in another order; bf16: the same bf16 operands, products summed apart.
        const double tolerance = bf16 ? 2e-2 : 1e-5;
        EXPECT_LT(runner::test::relative_error(got.out, want.out), tolerance);
        EXPECT_LT(runner::test::relative_error(got.grad_x, want.grad_x), tolerance);
        EXPECT_LT(runner::test::relative_error(got.grad_w, want.grad_w), tolerance);
        if (c.bias) EXPECT_LT(runner::test::relative_error(got.grad_b, want.grad_b), tolerance);
      }
    }
  }
}

TEST(SmallOutputConv, LargerOutputsAndGroupedConvolutionsAreAtens) {
  torch::manual_seed(0);
  GemmPixels pixels(runner::models::kMaxGemmOutputPixels);
  // 3x3 outputs (9 pixels) and a grouped convolution at 2x2: ATen's result bit for bit.
  nn::Conv2d wide(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false));
  const torch::Tensor x = torch::randn({2, 8, 3, 3});
  EXPECT_TRUE(torch::equal(runner::models::conv2d(*wide, x), wide->forward(x)));
  nn::Conv2d grouped(nn::Conv2dOptions(8, 8, 3).padding(1).groups(2).bias(false));
  const torch::Tensor small = torch::randn({2, 8, 2, 2});
  EXPECT_TRUE(torch::equal(runner::models::conv2d(*grouped, small), grouped->forward(small)));
  // The GEMM form is not bit-equal to oneDNN's at 2x2: the path taken is the one claimed.
  nn::Conv2d dense(nn::Conv2dOptions(64, 64, 3).padding(1).bias(false));
  const torch::Tensor dense_x = torch::randn({4, 64, 2, 2});
  EXPECT_FALSE(torch::equal(runner::models::conv2d(*dense, dense_x), dense->forward(dense_x)));
}

// A native resnet18 at the reference workload's 56 px (its last stage 2x2: five convolutions
// in the GEMM form): the loss and every parameter's gradient as with ATen's convolutions.
TEST(SmallOutputConv, Resnet18StepMatchesAtenConvolutions) {
  runner::register_builtin_plugins(runner::registries());
  auto gradients = [](bool gemm) {
    GemmPixels pixels(gemm ? runner::models::kMaxGemmOutputPixels : 0);
    torch::manual_seed(0);
    auto model = runner::registries()
                     .models.at("resnet18")
                     .factory({{"backbone", "resnet18"},
                               {"in_chans", 1},
                               {"num_classes", 10},
                               {"pretrained", false}});
    model->train();
    const torch::Tensor x = torch::randn({4, 1, 56, 56});
    const torch::Tensor y = torch::randint(0, 10, {4});
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    std::vector<torch::Tensor> grads{loss.detach()};
    for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  const auto with_gemm = gradients(true);
  const auto with_aten = gradients(false);
  ASSERT_EQ(with_gemm.size(), with_aten.size());
  EXPECT_NEAR(with_gemm[0].item<double>(), with_aten[0].item<double>(), 1e-5);
  // Relative to each gradient's size (zero_init_last leaves some exactly 0 on both sides).
  for (size_t i = 1; i < with_gemm.size(); ++i) {
    const double difference = (with_gemm[i] - with_aten[i]).abs().max().item<double>();
    EXPECT_LE(difference, 1e-4 * with_aten[i].abs().max().item<double>() + 1e-9)
        << "parameter " << i - 1;
  }
}

}  // namespace small_output_conv_test
