// runner::models::max_pool_3x3_s2 (the ResNet stem's max pooling with runner's own forward)
// against ATen's max_pool2d_with_indices: the same values, the same indices (so ATen's backward
// routes each gradient to the same element) and the same gradients, bit for bit, for ties (the
// zeros after a ReLU), NaN, -inf, odd and even sizes down to one pixel, fp32 and bf16.

#include "models/max_pool.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace max_pool_test {

void expect_as_aten(const torch::Tensor& input) {
  const torch::Tensor x = input.clone().requires_grad_(true);
  const torch::Tensor x_aten = input.clone().requires_grad_(true);
  const torch::Tensor got = runner::models::max_pool_3x3_s2(x);
  const auto [want, want_indices] = at::max_pool2d_with_indices(x_aten, 3, 2, 1);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::equal(got.isnan(), want.isnan()));
  EXPECT_TRUE(torch::equal(got.nan_to_num(0), want.nan_to_num(0)));
  const torch::Tensor go = torch::randn(want.sizes()).to(input.scalar_type());
  (got * go).sum().backward();
  (want * go).sum().backward();
  // Equal gradients at every element: each output's gradient went to ATen's chosen index.
  EXPECT_TRUE(torch::equal(x.grad(), x_aten.grad()));
}

TEST(MaxPool3x3s2, ValuesIndicesAndGradientsAreAtens) {
  torch::manual_seed(0);
  for (auto type : {torch::kFloat, torch::kBFloat16}) {
    for (int64_t h : {1, 2, 3, 6, 7, 28}) {
      for (int64_t w : {1, 2, 5, 8, 28}) {
        SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) +
                     (type == torch::kFloat ? " fp32" : " bf16"));
        // Ties everywhere: small integers, half of them zeroed as by a ReLU.
        expect_as_aten(torch::randint(-3, 4, {2, 3, h, w}).clamp_min(0).to(type));
        expect_as_aten(torch::randn({2, 3, h, w}).to(type));
      }
    }
  }
}

TEST(MaxPool3x3s2, NanAndInfinityAsAten) {
  torch::manual_seed(0);
  torch::Tensor x = torch::randint(0, 3, {1, 2, 9, 9}).to(torch::kFloat);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  x.index_put_({0, 0, 2, 3}, nan);
  x.index_put_({0, 0, 3, 2}, nan);
  x.index_put_({0, 1}, -inf);
  x.index_put_({0, 1, 4, 4}, inf);
  expect_as_aten(x);
}

TEST(MaxPool3x3s2, OtherLayoutsAreAtens) {
  const torch::Tensor x = torch::randn({2, 4, 8, 8}).contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor got = runner::models::max_pool_3x3_s2(x);
  EXPECT_TRUE(torch::equal(got, torch::max_pool2d(x, 3, 2, 1)));
  EXPECT_EQ(got.suggest_memory_format(), torch::MemoryFormat::ChannelsLast);
}

}  // namespace max_pool_test
