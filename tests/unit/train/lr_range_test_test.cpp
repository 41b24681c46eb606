// The lr range test's bookkeeping, by Lightning's Tuner.lr_find formulas.

#include <cmath>

#include <gtest/gtest.h>

#include "train/lr_range_test.hpp"

namespace runner::train {
namespace {

TEST(LrRangeTest, LrsRiseAsLightningsExponentialScheduler) {
  LrRangeOptions o;
  o.min_lr = 1e-6;
  o.max_lr = 1e-2;
  o.steps = 4;
  const auto lrs = range_test_lrs(o);
  ASSERT_EQ(lrs.size(), 4u);
  EXPECT_DOUBLE_EQ(lrs[0], 1e-6);                             // the first step keeps the base lr
  EXPECT_NEAR(lrs[1], 1e-6 * std::pow(1e4, 2.0 / 4), 1e-15);  // then (k + 1) / steps
  EXPECT_NEAR(lrs[2], 1e-6 * std::pow(1e4, 3.0 / 4), 1e-15);
  EXPECT_NEAR(lrs[3], 1e-2, 1e-15);  // the last reaches max_lr
}

TEST(LrRangeTest, SmoothsWithLightningsBiasCorrectionAndStopsOnDivergence) {
  LrRangeOptions o;
  o.steps = 100;
  LrRangeTest test(o);
  EXPECT_FALSE(test.record(1e-8, 2.0));
  // avg = 0.02 x 2; divided by 1 - 0.98^2 (Lightning's global_step is 1 after the first step).
  EXPECT_NEAR(test.smoothed()[0], 0.02 * 2.0 / (1 - 0.98 * 0.98), 1e-12);
  EXPECT_FALSE(test.record(1e-7, 2.0));
  EXPECT_NEAR(test.smoothed()[1], (0.98 * 0.04 + 0.04) / (1 - std::pow(0.98, 3)), 1e-12);
  // A loss far above: the smoothed loss passes 4 x its best and the test stops there, the
  // diverged point recorded.
  EXPECT_TRUE(test.record(1e-6, 1000.0));
  EXPECT_STREQ(test.stop_reason(), "diverged");
  EXPECT_EQ(test.smoothed().size(), 3u);
  LrRangeTest nan_test(o);
  nan_test.record(1e-8, 2.0);
  EXPECT_TRUE(nan_test.record(1e-7, std::nan("")));
  EXPECT_STREQ(nan_test.stop_reason(), "non-finite loss");
  o.early_stop_threshold = std::nullopt;  // never stops on divergence
  LrRangeTest no_stop(o);
  no_stop.record(1e-8, 2.0);
  EXPECT_FALSE(no_stop.record(1e-7, 1000.0));
}

TEST(LrRangeTest, GradientIsNumpysOnUnevenSpacing) {
  // Second-order central differences are exact for a quadratic: d(x^2)/dx = 2x inside; the ends
  // are one-sided first differences.
  const std::vector<double> x = {1, 2, 4, 7, 11};
  std::vector<double> y;
  for (double v : x) y.push_back(v * v);
  const auto g = gradient_on_coordinates(y, x);
  EXPECT_DOUBLE_EQ(g[0], 3.0);  // (4 - 1) / 1
  for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(g[i], 2 * x[i], 1e-12) << i;
  EXPECT_DOUBLE_EQ(g[4], (121.0 - 49.0) / 4.0);
}

TEST(LrRangeTest, SuggestsTheSteepestFallAfterSkippingTheEnds) {
  LrRangeOptions o;
  o.early_stop_threshold = std::nullopt;
  o.beta = 0;  // no smoothing: smoothed == loss
  LrRangeTest test(o);
  // Losses on lrs 1..20: a cliff between lr 14 and 15 (the fastest fall), a bigger one at the
  // start (left out: the first 10) and a rise at the end.
  const std::vector<double> losses = {9, 1, 1, 1, 1,   1,   1,   1,   1,   1,
                                      1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 3};
  for (size_t i = 0; i < losses.size(); ++i) test.record(static_cast<double>(i + 1), losses[i]);
  const auto at = test.suggestion();
  ASSERT_TRUE(at.has_value());
  EXPECT_TRUE(*at == 13 || *at == 14) << *at;  // the central differences around the cliff
  EXPECT_DOUBLE_EQ(test.lrs()[*at], static_cast<double>(*at + 1));
  // Too few points left after skipping: no suggestion.
  LrRangeTest short_test(o);
  for (int i = 0; i < 12; ++i) short_test.record(i + 1.0, 1.0);
  EXPECT_FALSE(short_test.suggestion().has_value());
}

}  // namespace
}  // namespace runner::train
