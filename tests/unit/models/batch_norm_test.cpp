// runner::models::BatchNorm2d: torch's BatchNorm2d until a sync group is attached (in training
// on the CPU through runner's kernel, equal to float rounding; bit for bit through ATen); with
// one, statistics over the group's batch (here a world of one, where they are the local ones).

#include "runner/models/batch_norm.hpp"

#include "models/batch_norm_cpu.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using runner::models::BatchNorm2d;

struct Step {
  torch::Tensor output, input_grad, weight_grad, bias_grad, running_mean, running_var;
};

// One training forward + backward of a fixed weighted-sum loss, on a fresh copy of x.
template <typename Bn>
Step train_step(Bn& bn, const torch::Tensor& x, const torch::Tensor& loss_weights) {
  auto input = x.clone().requires_grad_(true);
  bn->zero_grad();
  auto out = bn->forward(input);
  (out.to(torch::kFloat) * loss_weights).sum().backward();
  return {out.detach(),
          input.grad(),
          bn->weight.grad().clone(),
          bn->bias.grad().clone(),
          bn->running_mean.clone(),
          bn->running_var.clone()};
}

void randomise_affine(torch::nn::BatchNorm2dImpl& bn) {
  torch::NoGradGuard no_grad;
  bn.weight.uniform_(0.5, 1.5);
  bn.bias.uniform_(-0.5, 0.5);
}

TEST(BatchNorm2d, KeepsTorchsStateDictNames) {
  BatchNorm2d ours(8);
  torch::nn::BatchNorm2d theirs(8);
  EXPECT_EQ(ours->named_parameters().keys(), theirs->named_parameters().keys());
  EXPECT_EQ(ours->named_buffers().keys(), theirs->named_buffers().keys());
}

// Three training steps and an eval forward against torch::nn::BatchNorm2d: bit for bit through
// ATen (the CPU kernel off), within float rounding through runner's CPU kernel.
void expect_torch_batch_norm(bool cpu_kernel) {
  runner::models::set_cpu_batch_norm(cpu_kernel);
  torch::manual_seed(3);
  BatchNorm2d ours(4);
  torch::nn::BatchNorm2d theirs(4);
  randomise_affine(*theirs);
  {
    torch::NoGradGuard no_grad;
    ours->weight.copy_(theirs->weight);
    ours->bias.copy_(theirs->bias);
  }
  auto same = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return cpu_kernel ? torch::allclose(a, b, 1e-5, 1e-6) : torch::equal(a, b);
  };
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({5, 4, 3, 3}) * 2 + 1;
    auto w = torch::randn({5, 4, 3, 3});
    auto a = train_step(ours, x, w);
    auto b = train_step(theirs, x, w);
    EXPECT_TRUE(same(a.output, b.output));
    EXPECT_TRUE(same(a.input_grad, b.input_grad));
    EXPECT_TRUE(same(a.weight_grad, b.weight_grad));
    EXPECT_TRUE(same(a.bias_grad, b.bias_grad));
    EXPECT_TRUE(same(a.running_mean, b.running_mean));
    EXPECT_TRUE(same(a.running_var, b.running_var));
  }
  EXPECT_TRUE(torch::equal(ours->num_batches_tracked, theirs->num_batches_tracked));
  ours->eval();
  theirs->eval();
  auto x = torch::randn({2, 4, 3, 3});
  EXPECT_TRUE(same(ours->forward(x), theirs->forward(x)));
  runner::models::set_cpu_batch_norm(true);
}

TEST(BatchNorm2d, WithoutSyncGroupIsTorchBatchNorm2dBitForBitThroughAten) {
  expect_torch_batch_norm(false);
}

TEST(BatchNorm2d, WithoutSyncGroupIsTorchBatchNorm2dThroughTheCpuKernel) {
  expect_torch_batch_norm(true);
}

// A world of one: the sync path's statistics and gradient formula must equal torch's.
void expect_sync_path_matches_torch(const torch::nn::BatchNormOptions& options) {
  torch::manual_seed(5);
  BatchNorm2d ours(options);
  torch::nn::BatchNorm2d theirs(options);
  randomise_affine(*theirs);
  {
    torch::NoGradGuard no_grad;
    ours->weight.copy_(theirs->weight);
    ours->bias.copy_(theirs->bias);
  }
  int calls = 0;
  ours->set_sync([&calls](torch::Tensor&) { ++calls; });
  ASSERT_TRUE(ours->synchronised());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 3, 4, 2}) * 3 + 2;
    auto w = torch::randn({6, 3, 4, 2});
    auto a = train_step(ours, x, w);
    auto b = train_step(theirs, x, w);
    EXPECT_TRUE(torch::allclose(a.output, b.output, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(a.input_grad, b.input_grad, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(a.weight_grad, b.weight_grad, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(a.bias_grad, b.bias_grad, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(a.running_mean, b.running_mean, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(a.running_var, b.running_var, 1e-5, 1e-6));
  }
  EXPECT_EQ(calls, 6);  // one all-reduce in each forward and each backward
  ours->eval();
  theirs->eval();
  auto x = torch::randn({2, 3, 4, 2});
  EXPECT_TRUE(torch::allclose(ours->forward(x), theirs->forward(x), 1e-5, 1e-5));
  EXPECT_EQ(calls, 6);  // evaluation never synchronises
}

TEST(BatchNorm2d, SyncPathMatchesTorchInAWorldOfOne) {
  expect_sync_path_matches_torch(torch::nn::BatchNormOptions(3));
}

TEST(BatchNorm2d, SyncPathFollowsCumulativeAverageWithoutMomentum) {
  expect_sync_path_matches_torch(torch::nn::BatchNormOptions(3).momentum(c10::nullopt));
}

TEST(BatchNorm2d, SyncPathKeepsBfloat16InputsInBfloat16WithFp32Statistics) {
  torch::manual_seed(9);
  BatchNorm2d ours(3);
  ours->set_sync([](torch::Tensor&) {});
  auto x = torch::randn({4, 3, 5, 5}) * 4 + 100;  // a mean that bf16 statistics would blur
  auto input = x.to(torch::kBFloat16).requires_grad_(true);
  auto out = ours->forward(input);
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  out.to(torch::kFloat).sum().backward();
  EXPECT_EQ(input.grad().scalar_type(), torch::kBFloat16);
  auto reference =
      torch::batch_norm(input.detach().to(torch::kFloat), {}, {}, {}, {}, true, 0.1, 1e-5, false);
  EXPECT_LT((out.to(torch::kFloat) - reference).abs().max().item<double>(), 0.05);
}

}  // namespace
