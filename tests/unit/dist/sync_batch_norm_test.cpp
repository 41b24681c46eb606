// convert_sync_batchnorm: which layers it accepts, and what it says about the others.

#include "dist/sync_batch_norm.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/error.hpp"
#include "runner/models/batch_norm.hpp"

namespace runner::dist {
namespace {

TEST(ConvertSyncBatchnorm, CountsSyncableLayersAndAttachesNothingInAWorldOfOne) {
  torch::nn::Sequential model(torch::nn::Conv2d(3, 4, 3), models::BatchNorm2d(4), torch::nn::ReLU(),
                              models::BatchNorm2d(4));
  EXPECT_EQ(convert_sync_batchnorm(*model, World::single()), 2);
  for (const auto& m : model->modules()) {
    if (auto* bn = dynamic_cast<models::BatchNorm2dImpl*>(m.get())) {
      EXPECT_FALSE(bn->synchronised());
    }
  }
}

TEST(ConvertSyncBatchnorm, PlainTorchBatchNormIsAConfigErrorNamingTheLayer) {
  struct Block : torch::nn::Module {
    Block() {
      register_module("ok", models::BatchNorm2d(4));
      register_module("norm", torch::nn::BatchNorm1d(4));
    }
  };
  struct Net : torch::nn::Module {
    Net() { register_module("block", std::make_shared<Block>()); }
  };
  Net model;
  try {
    convert_sync_batchnorm(model, World::single());
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'block.norm'"), std::string::npos) << message;
    EXPECT_NE(message.find("runner::models::BatchNorm2d"), std::string::npos) << message;
    EXPECT_NE(message.find("train.bn_sync"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace runner::dist
