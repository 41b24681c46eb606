// model.grad_checkpointing: a checkpointed backbone computes the same losses, gradients and
// BatchNorm statistics as the plain one, dropout and drop path drawing alike.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/models/model.hpp"
#include "runner/registries.hpp"

namespace {

struct Pass {
  double loss = 0;
  std::vector<torch::Tensor> grads, buffers;
};

Pass train_step(const std::string& backbone, bool checkpointing, uint64_t draw_seed) {
  torch::manual_seed(3);  // the same initial weights for both
  nlohmann::json params = {{"backbone", backbone},
                           {"in_chans", 1},
                           {"num_classes", 10},
                           {"pretrained", false},
                           {"drop_path_rate", 0.3},
                           {"drop_rate", 0.2},
                           {"grad_checkpointing", checkpointing}};
  if (backbone == "resnet10t") params["zero_init_last"] = false;  // residual branches that act
  auto model = runner::registries().models.at(backbone).factory(params);
  model->train();
  torch::manual_seed(draw_seed);  // the same drop path and dropout draws for both
  const torch::Tensor x = torch::randn({4, 1, 32, 32});
  const torch::Tensor y = torch::tensor({1, 3, 5, 7});
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  loss.backward();
  Pass pass;
  pass.loss = loss.item<double>();
  for (const auto& p : model->parameters()) pass.grads.push_back(p.grad().clone());
  for (const auto& b : model->buffers()) pass.buffers.push_back(b.clone());
  return pass;
}

class GradCheckpointing : public ::testing::TestWithParam<std::string> {};

TEST_P(GradCheckpointing, SameLossGradientsAndStatisticsAsWithout) {
  const Pass plain = train_step(GetParam(), false, 11);
  const Pass kept = train_step(GetParam(), true, 11);
  EXPECT_NEAR(plain.loss, kept.loss, 1e-6);
  ASSERT_EQ(plain.grads.size(), kept.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i)
    EXPECT_TRUE(torch::allclose(plain.grads[i], kept.grads[i], 1e-5, 1e-6)) << "grad " << i;
  ASSERT_EQ(plain.buffers.size(), kept.buffers.size());
  for (size_t i = 0; i < plain.buffers.size(); ++i)  // running statistics updated once
    EXPECT_TRUE(torch::allclose(plain.buffers[i].to(torch::kDouble),
                                kept.buffers[i].to(torch::kDouble), 1e-6, 1e-7))
        << "buffer " << i;
  // Another draw gives another loss: drop path and dropout are at work in both.
  EXPECT_NE(train_step(GetParam(), true, 12).loss, kept.loss);
}

INSTANTIATE_TEST_SUITE_P(Backbones, GradCheckpointing,
                         ::testing::Values("convnext_atto", "resnet10t"));

}  // namespace
