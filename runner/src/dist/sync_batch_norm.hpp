#pragma once
// `train.bn_sync: sync`: attaches a world's all-reduce to a model's syncable BatchNorm layers
// (runner::models::BatchNorm2d), as PyTorch's nn.SyncBatchNorm.convert_sync_batchnorm.

#include <memory>

#include <torch/nn/module.h>

#include "dist/world.hpp"

namespace runner::dist {

/// Makes every runner::models::BatchNorm2d in `module` (itself included) take its training
/// statistics over all ranks of `world`; in a single-process world nothing is attached (local
/// statistics are the global ones). Returns the number of syncable layers. Throws ConfigError
/// naming the first torch::nn::BatchNorm{1,2,3}d layer that cannot synchronise, before
/// attaching anything.
int convert_sync_batchnorm(torch::nn::Module& module, const std::shared_ptr<World>& world);

}  // namespace runner::dist
