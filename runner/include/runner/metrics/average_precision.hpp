#pragma once
// Average precision of one class, as scikit-learn's average_precision_score: the sum over the
// distinct scores, highest first, of the recall gained there times the precision there (tied
// scores are one threshold, as precision_recall_curve makes them). Shared by the `map` metric
// and the report's multi-label per-class table.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace runner::metrics {

/// `scores` of the samples and their 0/1 `positive` (same length); 0 without positives.
inline double average_precision(const std::vector<float>& scores,
                                const std::vector<float>& positive) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  double positives = 0;
  for (const float p : positive) positives += p > 0.5f;
  if (positives == 0) return 0;
  double ap = 0, tp = 0, seen = 0;
  for (size_t i = 0; i < order.size();) {
    double tp_here = 0, count = 0;
    size_t j = i;
    for (; j < order.size() && scores[order[j]] == scores[order[i]]; ++j) {
      tp_here += positive[order[j]] > 0.5f;
      ++count;
    }
    tp += tp_here;
    seen += count;
    ap += (tp_here / positives) * (tp / seen);
    i = j;
  }
  return ap;
}

}  // namespace runner::metrics
