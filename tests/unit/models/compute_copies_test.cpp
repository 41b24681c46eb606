// runner::models::compute_weight: a weight's kept bf16 copy under the CPU's bf16 autocast gives
// the outputs and gradients of autocast's own cast, bit for bit; it is read only once an
// optimizer writes it, read as written, and written again from the weight when anything else
// changed the weight.

#include "runner/models/compute_copies.hpp"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "config/schema_validator.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"

namespace {

using runner::models::compute_copy_to_write;
using runner::models::compute_copy_written;
using runner::models::compute_weight;

// CPU bf16 autocast for a scope, as the trainer's AutocastGuard sets it.
struct Bf16Autocast {
  Bf16Autocast() {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  }
  ~Bf16Autocast() {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
};

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         torch::equal(a.contiguous().view(a.element_size() == 2 ? torch::kInt16 : torch::kInt32),
                      b.contiguous().view(b.element_size() == 2 ? torch::kInt16 : torch::kInt32));
}

// As an optimizer that writes the copy: the copy written from the weight, then recorded.
void write_as_optimizer(const torch::Tensor& weight) {
  torch::Tensor copy = compute_copy_to_write(weight);
  ASSERT_TRUE(copy.defined());
  copy.copy_(weight.detach());
  compute_copy_written(weight);
}

struct Linear {
  torch::Tensor w = torch::randn({29, 37}).requires_grad_(true);
  torch::Tensor b = torch::randn({29}).requires_grad_(true);
};

TEST(ComputeCopies, TheCopyGivesAutocastsOutputsAndGradientsBitForBit) {
  torch::manual_seed(3);
  Linear reference, kept;
  {
    torch::NoGradGuard no_grad;
    kept.w.copy_(reference.w);
    kept.b.copy_(reference.b);
  }
  const torch::Tensor x = torch::randn({8, 37});
  const torch::Tensor grad_out = torch::randn({8, 29});
  torch::Tensor want, got;
  {
    Bf16Autocast autocast;
    want = torch::linear(x, reference.w, reference.b);
    (void)compute_weight(kept.w), (void)compute_weight(kept.b);  // the forward asks first
  }
  write_as_optimizer(kept.w);
  write_as_optimizer(kept.b);
  {
    Bf16Autocast autocast;
    const torch::Tensor w = compute_weight(kept.w);
    EXPECT_EQ(w.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(w.data_ptr(), compute_copy_to_write(kept.w).data_ptr()) << "the kept copy is read";
    got = torch::linear(x, w, compute_weight(kept.b));
  }
  EXPECT_TRUE(same_bits(got, want));
  (want.to(torch::kFloat) * grad_out).sum().backward();
  (got.to(torch::kFloat) * grad_out).sum().backward();
  ASSERT_TRUE(kept.w.grad().defined());
  EXPECT_EQ(kept.w.grad().scalar_type(), torch::kFloat);
  EXPECT_TRUE(same_bits(kept.w.grad(), reference.w.grad()));
  EXPECT_TRUE(same_bits(kept.b.grad(), reference.b.grad()));
}

TEST(ComputeCopies, NoCopyIsReadUntilAnOptimizerWritesIt) {
  Linear layer;
  Bf16Autocast autocast;
  EXPECT_TRUE(compute_weight(layer.w).is_same(layer.w));
  EXPECT_TRUE(compute_weight(layer.w).is_same(layer.w));  // asked twice: still autocast's cast
}

TEST(ComputeCopies, AWeightChangedByAnythingElseIsReadAsItsNewValue) {
  Linear layer;
  {
    Bf16Autocast autocast;
    (void)compute_weight(layer.w);
  }
  write_as_optimizer(layer.w);
  {
    torch::NoGradGuard no_grad;
    layer.w.add_(1.5);  // a checkpoint loaded, the average swapped in: not the optimizer
  }
  Bf16Autocast autocast;
  EXPECT_TRUE(same_bits(compute_weight(layer.w).detach(), layer.w.detach().to(torch::kBFloat16)));
}

TEST(ComputeCopies, TheCopyIsReadAsTheOptimizerWroteIt) {
  Linear layer;
  {
    Bf16Autocast autocast;
    (void)compute_weight(layer.w);
  }
  // What the optimizer writes is what the forward reads (no cast in between): a marker value.
  compute_copy_to_write(layer.w).fill_(0.25);
  compute_copy_written(layer.w);
  Bf16Autocast autocast;
  EXPECT_TRUE(torch::all(compute_weight(layer.w).detach() == 0.25).item<bool>());
}

TEST(ComputeCopies, EvaluationReadsTheCopyWithoutAGraph) {
  Linear layer;
  {
    Bf16Autocast autocast;
    (void)compute_weight(layer.w);
  }
  write_as_optimizer(layer.w);
  torch::NoGradGuard no_grad;
  Bf16Autocast autocast;
  const torch::Tensor w = compute_weight(layer.w);
  EXPECT_FALSE(w.requires_grad());
  EXPECT_EQ(w.data_ptr(), compute_copy_to_write(layer.w).data_ptr());
}

TEST(ComputeCopies, OutsideBf16AutocastOrForAFrozenWeightTheWeightItself) {
  Linear layer;
  {
    Bf16Autocast autocast;
    (void)compute_weight(layer.w);
  }
  write_as_optimizer(layer.w);
  EXPECT_TRUE(compute_weight(layer.w).is_same(layer.w)) << "no autocast";
  const torch::Tensor frozen = torch::randn({4, 4});
  Bf16Autocast autocast;
  EXPECT_TRUE(compute_weight(frozen).is_same(frozen));
  runner::models::set_compute_copies(false);
  EXPECT_TRUE(compute_weight(layer.w).is_same(layer.w)) << "copies off";
  EXPECT_FALSE(compute_copy_to_write(layer.w).defined());
  runner::models::set_compute_copies(true);
}

// A native model (ConvNeXt with its MLP as 1x1 convolutions: atto; as linear layers: tiny; a
// ResNet, whose convolutions all read copies, the last stage's at 1x1 through the GEMM form)
// trained by the adam plugin under bf16 autocast: with kept copies the same weights, bit for bit,
// as with autocast's cast every forward.
struct TrainedModel {
  std::vector<torch::Tensor> params;
  int64_t kept_copies = 0;
};

TrainedModel train_model(const std::string& name, bool copies) {
  runner::models::set_compute_copies(copies);
  torch::manual_seed(7);
  auto model = runner::registries().models.at(name).factory({{"backbone", name},
                                                             {"in_chans", 1},
                                                             {"num_classes", 10},
                                                             {"drop_path_rate", 0.0},
                                                             {"pretrained", false}});
  model->train();
  const auto& adam = runner::registries().optimizers.at("adam");
  nlohmann::json params = {{"lr", 1e-3}};
  runner::config::apply_schema_defaults(params, adam.schema);
  auto optimizer = adam.factory(params, *model);
  const torch::Tensor x = torch::randn({2, 1, 32, 32});
  const torch::Tensor y = torch::randint(0, 10, {2});
  for (int step = 0; step < 2; ++step) {
    optimizer->torch_optimizer().zero_grad();
    torch::Tensor logits;
    {
      Bf16Autocast autocast;
      logits = model->forward(x);
    }
    torch::nn::functional::cross_entropy(logits.to(torch::kFloat), y).backward();
    optimizer->update(torch::full({}, 1e-3, torch::kDouble), {});
  }
  TrainedModel out;
  for (const auto& p : model->parameters()) {
    out.params.push_back(p.detach().clone());
    out.kept_copies += compute_copy_to_write(p).defined();
  }
  runner::models::set_compute_copies(true);
  return out;
}

TEST(ComputeCopies, TheNativeModelsTrainAsWithAutocastsCast) {
  // ConvNeXt: each block's MLP weights and biases read kept copies, 4 per block (atto 12 blocks,
  // tiny 18); resnet18: its 20 convolution weights.
  for (const auto& [name, copied] : std::vector<std::pair<std::string, int64_t>>{
           {"convnext_atto", 4 * 12}, {"convnext_tiny", 4 * 18}, {"resnet18", 20}}) {
    const auto with = train_model(name, true);
    const auto without = train_model(name, false);
    EXPECT_EQ(with.kept_copies, copied) << name;
    EXPECT_EQ(without.kept_copies, 0) << name;
    ASSERT_EQ(with.params.size(), without.params.size());
    int64_t differing = 0;
    for (size_t i = 0; i < with.params.size(); ++i)
      differing += !same_bits(with.params[i], without.params[i]);
    EXPECT_EQ(differing, 0) << name << ": parameters that differ after 2 steps";
  }
}

}  // namespace
