// runner's kernels inside a TorchScript model (models/scripted_kernels.hpp): a scripted block
// with the convolutions a timm graph holds (depthwise 5x5 at stride 2 and 3x3 at stride 1, a
// dilated and a channel-multiplying grouped one that stay ATen's, a plain one) and BatchNorms
// calls runner's ops after the rewrite, and trains as ATen's graph does: the same forward, input
// and parameter gradients and running statistics to float rounding in float32 and bf16
// autocast, the same bits in eval mode.

#include "models/scripted_kernels.hpp"

#include <cstdlib>

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "model_test_util.hpp"
#include "runner/error.hpp"

namespace scripted_kernels_test {

using runner::test::relative_error;

constexpr int64_t kChannels = 8;

/// The block's parameters and buffers, shared by both modules (each gets clones).
std::vector<std::pair<std::string, torch::Tensor>> block_tensors() {
  torch::manual_seed(3);
  return {{"dw5", torch::randn({kChannels, 1, 5, 5}) * 0.2},
          {"dw3", torch::randn({kChannels, 1, 3, 3}) * 0.2},
          {"dilated", torch::randn({kChannels, 1, 3, 3}) * 0.2},
          {"doubled", torch::randn({2 * kChannels, 1, 3, 3}) * 0.2},
          {"plain", torch::randn({kChannels, 2 * kChannels, 1, 1}) * 0.2},
          {"bn_w", torch::rand({kChannels}) + 0.5},
          {"bn_b", torch::randn({kChannels}) * 0.1}};
}

torch::jit::Module scripted_block() {
  torch::jit::Module m("ScriptedBlock");
  for (const auto& [name, t] : block_tensors()) m.register_parameter(name, t.clone(), false);
  m.register_buffer("running_mean", torch::zeros({kChannels}));
  m.register_buffer("running_var", torch::ones({kChannels}));
  m.register_attribute("training", c10::BoolType::get(), true);
  // aten::batch_norm as timm's BatchNormAct2d calls it (through F.batch_norm), in a method of
  // its own as a layer's, after the convolutions timm makes.
  m.define(R"JIT(
def norm(self, x):
    return torch.batch_norm(x, self.bn_w, self.bn_b, self.running_mean, self.running_var,
                            self.training, 0.1, 1e-5, False)

def forward(self, x):
    y = torch.conv2d(x, self.dw5, None, [2, 2], [2, 2], [1, 1], 8)
    y = torch.silu(self.norm(y))
    y = torch.conv2d(y, self.dw3, None, [1, 1], [1, 1], [1, 1], 8)
    y = torch.conv2d(y, self.dilated, None, [1, 1], [2, 2], [2, 2], 8)
    y = torch.conv2d(y, self.doubled, None, [1, 1], [1, 1], [1, 1], 8)
    y = torch.conv2d(y, self.plain, None, [1, 1], [0, 0], [1, 1], 1)
    return self.norm(y)
)JIT");
  return m;
}

int count(const torch::jit::Graph& graph, const char* kind) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes())
    n += node->kind() == c10::Symbol::fromQualString(kind);
  return n;
}

TEST(ScriptedKernels, TheGraphCallsRunnersOpsForGroupedConvolutionsAndBatchNorms) {
  torch::jit::Module m = scripted_block();
  const runner::models::ScriptedKernelCalls calls = runner::models::rewrite_to_runner_kernels(m);
  // forward's 4 grouped convolutions and its 2 BatchNorms (norm's, inlined).
  EXPECT_EQ(calls.grouped_convolutions, 4);
  EXPECT_EQ(calls.batch_norms, 2);
  const auto graph = m.get_method("forward").graph();
  EXPECT_EQ(count(*graph, "runner::conv2d"), 4);
  EXPECT_EQ(count(*graph, "runner::batch_norm"), 2);
  EXPECT_EQ(count(*graph, "aten::conv2d"), 1) << "a convolution with groups 1 stays ATen's";
  EXPECT_EQ(count(*graph, "aten::batch_norm"), 0);
}

struct Step {
  torch::Tensor out, grad_x, running_mean, running_var;
  std::vector<torch::Tensor> grads;
};

Step train_step(torch::jit::Module& m, const torch::Tensor& x0, bool bf16) {
  torch::Tensor x = x0.clone().requires_grad_(true);
  for (const auto& p : m.parameters()) p.requires_grad_(true);
  at::autocast::set_autocast_enabled(at::kCPU, bf16);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const torch::Tensor out = m.forward({x}).toTensor().to(torch::kFloat);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  (out * torch::linspace(-1, 1, out.numel()).reshape(out.sizes())).sum().backward();
  Step step{out.detach(), x.grad(), m.attr("running_mean").toTensor().clone(),
            m.attr("running_var").toTensor().clone()};
  for (const auto& p : m.parameters()) step.grads.push_back(p.grad());
  return step;
}

TEST(ScriptedKernels, TheRewrittenGraphTrainsAsAtensGraph) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "fp32");
    torch::jit::Module aten = scripted_block(), ours = scripted_block();
    runner::models::rewrite_to_runner_kernels(ours);
    torch::manual_seed(1);
    const torch::Tensor x = torch::randn({4, kChannels, 11, 11});
    // Two steps: the second starts from the running statistics the first left.
    for (int repeat = 0; repeat < 2; ++repeat) {
      const Step want = train_step(aten, x, bf16), got = train_step(ours, x, bf16);
      const double tolerance = bf16 ? 3e-2 : 1e-5;
      EXPECT_LT(relative_error(got.out, want.out), tolerance);
      EXPECT_LT(relative_error(got.grad_x, want.grad_x), tolerance);
      EXPECT_LT(relative_error(got.running_mean, want.running_mean), tolerance);
      EXPECT_LT(relative_error(got.running_var, want.running_var), tolerance);
      ASSERT_EQ(got.grads.size(), want.grads.size());
      for (size_t i = 0; i < want.grads.size(); ++i)
        EXPECT_LT(relative_error(got.grads[i], want.grads[i]), tolerance) << "parameter " << i;
    }
    aten.eval();
    ours.eval();
    torch::NoGradGuard no_grad;
    // The same running statistics (training left them equal to float rounding only).
    for (const char* name : {"running_mean", "running_var"})
      ours.attr(name).toTensor().copy_(aten.attr(name).toTensor());
    EXPECT_TRUE(torch::equal(ours.forward({x}).toTensor(), aten.forward({x}).toTensor()))
        << "in eval mode every op is ATen's own (a depthwise forward is at::conv2d's)";
  }
}

TEST(ScriptedKernels, RunnerScriptedKernelsAtenLeavesTheGraphAndAnotherValueIsRefused) {
  torch::jit::Module m = scripted_block();
  ::setenv("RUNNER_SCRIPTED_KERNELS", "aten", 1);
  EXPECT_EQ(runner::models::use_runner_kernels(m).batch_norms, 0);
  EXPECT_EQ(count(*m.get_method("forward").graph(), "runner::conv2d"), 0);
  ::setenv("RUNNER_SCRIPTED_KERNELS", "fast", 1);
  EXPECT_THROW(runner::models::use_runner_kernels(m), runner::ConfigError);
  ::unsetenv("RUNNER_SCRIPTED_KERNELS");
  EXPECT_EQ(runner::models::use_runner_kernels(m).batch_norms, 2);
}

}  // namespace scripted_kernels_test
