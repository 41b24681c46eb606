#pragma once
// Leslie Smith's learning-rate range test with the semantics of Lightning's Tuner.lr_find: an
// exponential lr ramp from min_lr to max_lr, the loss smoothed by an exponential moving average,
// a stop once the smoothed loss exceeds early_stop_threshold x its best, and the suggestion at
// the steepest fall of the smoothed loss against the lr. What drives the steps is elsewhere
// (run/lr_find.cpp); this is the bookkeeping, testable without a model.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace runner::train {

struct LrRangeOptions {
  double min_lr = 1e-8;
  double max_lr = 1.0;
  int64_t steps = 100;  ///< optimizer steps at most (Lightning's num_training)
  /// Stop when the smoothed loss exceeds this many times the best one; nullopt: never.
  std::optional<double> early_stop_threshold = 4.0;
  double beta = 0.98;  ///< the smoothing's weight of the past
};

/// The lr of each step, as Lightning's _ExponentialLR gives them: min_lr at step 0, then
/// min_lr x (max_lr / min_lr)^((k + 1) / steps) at step k >= 1 (its first increase skips one
/// exponent; the last step reaches max_lr).
std::vector<double> range_test_lrs(const LrRangeOptions& options);

class LrRangeTest {
 public:
  explicit LrRangeTest(LrRangeOptions options);

  /// Records the loss of the step taken at `lr` (the mean over its micro-batches); returns
  /// whether the test should stop there: the smoothed loss diverged past the threshold (from
  /// the second step on, as Lightning), or the loss is NaN/inf (Lightning would go on with NaN).
  bool record(double lr, double loss);

  /// The index of the suggested lr (Lightning's suggestion(skip_begin, skip_end)): of the
  /// smoothed losses without the first `skip_begin` and the last `skip_end`, the finite ones,
  /// the one where their gradient against the lr (numpy's/torch.gradient's second-order
  /// central differences on the uneven lr spacing, first order at the ends) is lowest. nullopt
  /// with fewer than 2 such points.
  std::optional<size_t> suggestion(size_t skip_begin = 10, size_t skip_end = 1) const;

  const std::vector<double>& lrs() const { return lrs_; }
  const std::vector<double>& losses() const { return losses_; }  ///< as measured
  const std::vector<double>& smoothed() const { return smoothed_; }
  /// Why it stopped before options.steps: "diverged" or "non-finite loss"; "" when it did not.
  const char* stop_reason() const { return stop_reason_; }

 private:
  LrRangeOptions options_;
  std::vector<double> lrs_, losses_, smoothed_;
  double average_ = 0, best_ = 0;
  const char* stop_reason_ = "";
};

/// d(y)/d(x) at every point as numpy.gradient(y, x) and torch.gradient(y, spacing=[x]) give it
/// (edge_order 1). Requires y.size() == x.size() >= 2 and distinct x.
std::vector<double> gradient_on_coordinates(const std::vector<double>& y,
                                            const std::vector<double>& x);

}  // namespace runner::train
