#include "metrics/common.hpp"

#include "runner/error.hpp"

namespace runner::metrics {

void check_metric_inputs(const std::string& metric, const torch::Tensor& logits,
                         const torch::Tensor& labels) {
  const std::string where = "metric " + metric + ": ";
  if (logits.dim() != 2 || labels.dim() != 1 || logits.size(0) != labels.size(0))
    throw Error(where + "expected logits [N, C] and labels [N], got " +
                std::to_string(logits.dim()) + "-d logits and " + std::to_string(labels.dim()) +
                "-d labels of different lengths");
  if (logits.size(0) == 0) throw Error(where + "no samples to evaluate (empty validation split?)");
  const int64_t low = labels.min().item<int64_t>(), high = labels.max().item<int64_t>();
  if (low < 0 || high >= logits.size(1))
    throw Error(where + "label " + std::to_string(low < 0 ? low : high) + " outside [0, " +
                std::to_string(logits.size(1)) +
                "): does the model's num_classes match the dataset?");
}

}  // namespace runner::metrics
