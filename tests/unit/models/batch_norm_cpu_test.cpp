// runner's training-mode BatchNorm2d (+ ReLU) CPU kernel against ATen's batch_norm (+ relu):
// outputs, input/weight/bias gradients and running statistics within float rounding, for the
// native ResNets' plane sizes at 56 px down to 1x1, a mean far from zero (the one-pass
// statistics must not cancel), no affine, no running statistics, and the ReLU's mask at exact
// zeros; BatchNorm2d::forward_relu through the module; the inputs it leaves to ATen.

#include "models/batch_norm_cpu.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model_test_util.hpp"

#include "runner/models/batch_norm.hpp"

namespace batch_norm_cpu_test {

struct Result {
  torch::Tensor out, grad_x, grad_w, grad_b, running_mean, running_var;
};

Result run(bool ours, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
           const torch::Tensor& go, bool relu, bool running) {
  torch::Tensor x = x0.clone().requires_grad_(true);
  torch::Tensor w = w0.defined() ? w0.clone().requires_grad_(true) : torch::Tensor();
  torch::Tensor b = b0.defined() ? b0.clone().requires_grad_(true) : torch::Tensor();
  torch::Tensor rm = running ? torch::full({x0.size(1)}, 0.5) : torch::Tensor();
  torch::Tensor rv = running ? torch::full({x0.size(1)}, 2.0) : torch::Tensor();
  torch::Tensor out;
  if (ours) {
    out = runner::models::cpu_batch_norm_train(x, w, b, rm, rv, 0.1, 1e-5, relu);
  } else {
    out = torch::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, false);
    if (relu) out = torch::relu(out);
  }
  (out * go).sum().backward();
  return {out.detach(),
          x.grad(),
          w.defined() ? w.grad() : torch::Tensor(),
          b.defined() ? b.grad() : torch::Tensor(),
          rm,
          rv};
}

TEST(CpuBatchNorm, EqualsAtenBatchNormAndRelu) {
  torch::manual_seed(0);
  for (const auto& [batch, channels, size] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4, 8, 28}, {4, 16, 14}, {3, 16, 7}, {4, 8, 4}, {5, 32, 2}, {6, 8, 1}, {2, 3, 33}}) {
    for (bool relu : {false, true}) {
      for (double offset : {0.0, 100.0}) {
        SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(channels) + "x" +
                     std::to_string(size) + (relu ? " + relu" : "") + " offset " +
                     std::to_string(offset));
        const torch::Tensor x = torch::randn({batch, channels, size, size}) * 0.5 + offset;
        const torch::Tensor w = torch::rand({channels}) + 0.5;
        const torch::Tensor b = torch::randn({channels});
        const torch::Tensor go = torch::randn({batch, channels, size, size});
        const Result want = run(false, x, w, b, go, relu, true);
        const Result got = run(true, x, w, b, go, relu, true);
        // Far from zero, x itself carries float32 rounding of 100 * 6e-8 against a spread of
        // 0.5: both sides differ by that much; cancellation in the statistics would be 1e-2.
        EXPECT_LT(runner::test::relative_error(got.out, want.out), offset == 0.0 ? 1e-5 : 1e-4);
        EXPECT_LT(runner::test::relative_error(got.grad_x, want.grad_x), 1e-4);
        EXPECT_LT(runner::test::relative_error(got.grad_w, want.grad_w), 1e-4);
        EXPECT_LT(runner::test::relative_error(got.grad_b, want.grad_b), 1e-5);
        EXPECT_LT(runner::test::relative_error(got.running_mean, want.running_mean), 1e-6);
        EXPECT_LT(runner::test::relative_error(got.running_var, want.running_var), 1e-5);
      }
    }
  }
}

TEST(CpuBatchNorm, WithoutAffineOrRunningStatistics) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({4, 6, 5, 5});
  const torch::Tensor go = torch::randn({4, 6, 5, 5});
  const Result want = run(false, x, {}, {}, go, true, false);
  const Result got = run(true, x, {}, {}, go, true, false);
  EXPECT_LT(runner::test::relative_error(got.out, want.out), 1e-5);
  EXPECT_LT(runner::test::relative_error(got.grad_x, want.grad_x), 1e-4);
}

// Outputs exactly 0 after the ReLU pass no gradient, as torch's threshold_backward.
TEST(CpuBatchNorm, ReluMaskAtExactZeros) {
  torch::Tensor x = torch::tensor({-1.0f, 1.0f, -1.0f, 1.0f}).view({4, 1, 1, 1});
  const torch::Tensor go = torch::ones({4, 1, 1, 1});
  const Result want = run(false, x, torch::ones({1}), torch::zeros({1}), go, true, true);
  const Result got = run(true, x, torch::ones({1}), torch::zeros({1}), go, true, true);
  EXPECT_TRUE(torch::allclose(got.out, want.out));
  EXPECT_TRUE(torch::allclose(got.grad_x, want.grad_x, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(got.grad_b, want.grad_b));
}

TEST(CpuBatchNorm, ForwardReluThroughTheModule) {
  torch::manual_seed(2);
  runner::models::BatchNorm2d ours(8);
  torch::nn::BatchNorm2d theirs(8);
  const torch::Tensor x = torch::randn({4, 8, 6, 6});
  const torch::Tensor a = ours->forward_relu(x);
  const torch::Tensor b = torch::relu(theirs->forward(x));
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(ours->running_var, theirs->running_var, 1e-5, 1e-6));
  ours->eval();
  theirs->eval();
  // Eval mode is ATen's, on running statistics that agree to float rounding.
  EXPECT_TRUE(torch::allclose(ours->forward_relu(x), torch::relu(theirs->forward(x)), 1e-5, 1e-6));
}

TEST(CpuBatchNorm, LeavesOtherInputsToAten) {
  const torch::Tensor w = torch::ones({4});
  EXPECT_TRUE(runner::models::cpu_batch_norm_applies(torch::randn({2, 4, 3, 3}), w));
  EXPECT_FALSE(runner::models::cpu_batch_norm_applies(
      torch::randn({2, 4, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast), w));
  EXPECT_FALSE(
      runner::models::cpu_batch_norm_applies(torch::randn({2, 4, 3, 3}).to(torch::kBFloat16), w));
  EXPECT_FALSE(runner::models::cpu_batch_norm_applies(torch::randn({1, 4, 1, 1}), w));
  EXPECT_FALSE(
      runner::models::cpu_batch_norm_applies(torch::randn({2, 4, 3, 3}), w.to(torch::kDouble)));
}

}  // namespace batch_norm_cpu_test
