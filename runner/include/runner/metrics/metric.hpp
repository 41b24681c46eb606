#pragma once
// What a metric plugin provides: a number computed on the gathered validation results
// (exactly one row per sample, in dataset order).

#include <string>

#include <torch/torch.h>

namespace runner::metrics {

class Metric {
 public:
  virtual ~Metric() = default;
  /// Name used in logs, metrics files and `train.best.metric` (e.g. "accuracy", "top5").
  virtual std::string name() const = 0;
  /// "max" when larger is better, else "min".
  virtual std::string mode() const { return "max"; }
  /// Value for `logits` [N, C] (float32, CPU) against `labels` [N] (int64, CPU).
  virtual double compute(const torch::Tensor& logits, const torch::Tensor& labels) const = 0;
};

}  // namespace runner::metrics
