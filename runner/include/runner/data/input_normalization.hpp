#pragma once
// Implemented beside Transform by a transform that normalises the model's input (normalize):
// the mean and std it applies, in timm's pretrained_cfg units (of pixel values scaled to
// 0..1), so that `runner export` writes what a user feeds the model with, read from the built
// transform rather than from the document. (A second base class, not a virtual of Transform:
// plugins built for ABI 2 keep working.)

#include <vector>

namespace runner::data {

class InputNormalization {
 public:
  virtual ~InputNormalization() = default;
  /// One value for every channel, or one per channel.
  virtual std::vector<double> input_mean() const = 0;
  virtual std::vector<double> input_std() const = 0;
};

}  // namespace runner::data
