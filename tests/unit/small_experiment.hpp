#pragma once
// Test helper: a small experiment of built-in plugins (synthetic images, small_cnn, adam),
// loaded and validated as `runner run` loads a file, with overrides as --set gives them.

#include <string>
#include <vector>

#include "config/experiment.hpp"
#include "temp_files.hpp"

namespace runner::testing {

/// The YAML of a one-process CPU experiment: 64 training, 20 validation and 10 test images of
/// 12x12 in 4 classes, small_cnn, adam, accuracy and the loss as metrics.
inline std::string small_experiment_yaml() {
  return R"(name: small
seed: 7
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 64, val_size: 20, test_size: 10, height: 12, width: 12,
            num_classes: 4, noise: 0.5}
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 4}
optimizer: {name: adam, lr: 0.01}
scheduler: {name: none}
loss: {name: cross_entropy}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 2, batch_size: 8, log_every_steps: 2}
output: {tensorboard: false}
)";
}

/// small_experiment_yaml() written into `dir` and loaded with `overrides` ("key=value").
inline config::Experiment load_small_experiment(const TempDir& dir,
                                                const std::vector<std::string>& overrides = {}) {
  return config::load_experiment(dir.write("small.yaml", small_experiment_yaml()), overrides);
}

}  // namespace runner::testing
