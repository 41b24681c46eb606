#include "train/lr_range_test.hpp"

#include <cmath>

namespace runner::train {

std::vector<double> range_test_lrs(const LrRangeOptions& o) {
  std::vector<double> lrs;
  const double ratio = o.max_lr / o.min_lr;
  for (int64_t k = 0; k < o.steps; ++k)
    lrs.push_back(k == 0 ? o.min_lr
                         : o.min_lr * std::pow(ratio, static_cast<double>(k + 1) /
                                                          static_cast<double>(o.steps)));
  return lrs;
}

LrRangeTest::LrRangeTest(LrRangeOptions options) : options_(options) {}

bool LrRangeTest::record(double lr, double loss) {
  // Lightning counts trainer.global_step after the step: 1 for the first, so its bias
  // correction divides by 1 - beta^(step + 1) with step from 1 (kept, to suggest alike).
  const auto step = static_cast<double>(lrs_.size() + 1);
  average_ = options_.beta * average_ + (1 - options_.beta) * loss;
  const double smoothed = average_ / (1 - std::pow(options_.beta, step + 1));
  const bool diverged = options_.early_stop_threshold && step > 1 &&
                        smoothed > *options_.early_stop_threshold * best_;
  if (smoothed < best_ || step == 1) best_ = smoothed;
  lrs_.push_back(lr);
  losses_.push_back(loss);
  smoothed_.push_back(smoothed);
  if (!std::isfinite(loss)) {
    stop_reason_ = "non-finite loss";
    return true;
  }
  if (diverged) stop_reason_ = "diverged";
  return diverged;
}

std::optional<size_t> LrRangeTest::suggestion(size_t skip_begin, size_t skip_end) const {
  std::vector<double> x, y;
  std::vector<size_t> index;
  // Python's [skip_begin:-skip_end] (an empty slice when skip_end is 0, as there).
  const size_t end = skip_end == 0 || skip_end > smoothed_.size() ? 0 : smoothed_.size() - skip_end;
  for (size_t i = skip_begin; i < end; ++i) {
    if (!std::isfinite(smoothed_[i])) continue;
    x.push_back(lrs_[i]);
    y.push_back(smoothed_[i]);
    index.push_back(i);
  }
  if (y.size() < 2) return std::nullopt;
  const std::vector<double> g = gradient_on_coordinates(y, x);
  size_t lowest = 0;
  for (size_t i = 1; i < g.size(); ++i)
    if (g[i] < g[lowest]) lowest = i;  // the first of equal minima, as argmin
  return index[lowest];
}

std::vector<double> gradient_on_coordinates(const std::vector<double>& y,
                                            const std::vector<double>& x) {
  const size_t n = y.size();
  std::vector<double> g(n);
  g[0] = (y[1] - y[0]) / (x[1] - x[0]);
  g[n - 1] = (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]);
  for (size_t i = 1; i + 1 < n; ++i) {
    const double hl = x[i] - x[i - 1], hr = x[i + 1] - x[i];
    g[i] = (hl * hl * y[i + 1] - hr * hr * y[i - 1] + (hr * hr - hl * hl) * y[i]) /
           (hl * hr * (hl + hr));
  }
  return g;
}

}  // namespace runner::train
