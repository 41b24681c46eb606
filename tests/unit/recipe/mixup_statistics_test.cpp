// train.mixup with the run's own draws: over many batches the share of mixed batches, of cutmix
// among them and lam's distribution are what the configuration asks; a batch's mix depends only
// on (seed, epoch, batch, rank).

#include <cmath>

#include <gtest/gtest.h>

#include "train/mixup.hpp"

namespace {

using runner::train::MixPlan;
using runner::train::Mixup;
using runner::train::RngMixRandom;

runner::config::MixupOptions recipe(const std::string& mode) {
  runner::config::MixupOptions o;
  o.mixup_alpha = 0.8;
  o.cutmix_alpha = 1.0;
  o.prob = 0.6;
  o.switch_prob = 0.3;
  o.mode = mode;
  return o;
}

TEST(MixupStatistics, SharesOfMixedAndCutmixBatchesAndLamMatchTheConfiguration) {
  const Mixup mixup(recipe("batch"), 10);
  const int batches = 6000;
  int mixed = 0, cutmix = 0, mixup_batches = 0;
  double lam_sum = 0, lam_sq = 0;
  for (int b = 0; b < batches; ++b) {
    RngMixRandom random(Mixup::stream(42, 0, b, 0, 1));
    const MixPlan plan = mixup.draw(random, 8, 56, 56, true);
    if (!plan.mixes()) continue;
    ++mixed;
    if (plan.batch_cutmix) {
      ++cutmix;
      // correct_lam: lam is the share of the image the box leaves, in whole pixels
      const double kept = (plan.yh - plan.yl) * (plan.xh - plan.xl);
      EXPECT_DOUBLE_EQ(plan.batch_lam, 1.0 - kept / (56.0 * 56.0));
    } else {
      ++mixup_batches;
      lam_sum += plan.batch_lam;
      lam_sq += plan.batch_lam * plan.batch_lam;
    }
  }
  EXPECT_NEAR(mixed / static_cast<double>(batches), 0.6, 0.03);
  EXPECT_NEAR(cutmix / static_cast<double>(mixed), 0.3, 0.03);
  const double mean = lam_sum / mixup_batches, var = lam_sq / mixup_batches - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.02);                         // Beta(a, a) is symmetric
  EXPECT_NEAR(var, 1.0 / (4.0 * (2 * 0.8 + 1)), 0.01);  // and its variance 1 / (4 (2a + 1))
}

TEST(MixupStatistics, PerElementDrawsMixTheConfiguredShareAndPairsMirror) {
  const Mixup elem(recipe("elem"), 10), pair(recipe("pair"), 10);
  int mixed = 0, total = 0;
  for (int b = 0; b < 500; ++b) {
    RngMixRandom random(Mixup::stream(1, 2, b, 1, 2));
    const MixPlan plan = elem.draw(random, 16, 32, 32, true);
    for (float lam : plan.lam) mixed += lam != 1.0f, ++total;
    RngMixRandom pairs_random(Mixup::stream(1, 2, b, 1, 2));
    const MixPlan p = pair.draw(pairs_random, 16, 32, 32, true);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(p.lam[i], p.lam[15 - i]);
      EXPECT_EQ(p.box_yl[i], p.box_yl[15 - i]);
    }
  }
  EXPECT_NEAR(mixed / static_cast<double>(total), 0.6, 0.03);
}

TEST(MixupStatistics, ABatchMixDependsOnlyOnSeedEpochBatchAndRank) {
  const Mixup mixup(recipe("elem"), 10);
  const auto plan_of = [&](uint64_t seed, int64_t epoch, int64_t batch, int rank) {
    RngMixRandom random(Mixup::stream(seed, epoch, batch, rank, 2));
    return mixup.draw(random, 8, 28, 28, true).lam;
  };
  EXPECT_EQ(plan_of(5, 1, 3, 0), plan_of(5, 1, 3, 0));
  EXPECT_NE(plan_of(5, 1, 3, 0), plan_of(5, 1, 4, 0));
  EXPECT_NE(plan_of(5, 1, 3, 0), plan_of(5, 1, 3, 1));
  EXPECT_NE(plan_of(5, 1, 3, 0), plan_of(5, 2, 3, 0));
  EXPECT_NE(plan_of(5, 1, 3, 0), plan_of(6, 1, 3, 0));
}

TEST(MixupStatistics, OffEpochStopsMixingButKeepsTheSmoothedTargets) {
  runner::config::MixupOptions o = recipe("batch");
  o.prob = 1.0;
  o.label_smoothing = 0.1;
  o.off_epoch = 2;
  const Mixup mixup(o, 4);
  EXPECT_TRUE(mixup.mixes_in(1));
  EXPECT_FALSE(mixup.mixes_in(2));  // timm: epoch >= mixup_off_epoch (0-based) stops it
  RngMixRandom random(Mixup::stream(1, 2, 0, 0, 1));
  const MixPlan plan = mixup.draw(random, 4, 8, 8, mixup.mixes_in(2));
  EXPECT_FALSE(plan.mixes());
  const torch::Tensor images = torch::rand({4, 1, 8, 8});
  const auto [out, targets] = mixup.apply(plan, images, torch::tensor({0, 1, 2, 3}));
  EXPECT_TRUE(out.equal(images));
  EXPECT_NEAR(targets[0][0].item<double>(), 1 - 0.1 + 0.1 / 4, 1e-6);
  EXPECT_NEAR(targets[0][1].item<double>(), 0.1 / 4, 1e-6);
}

TEST(MixupStatistics, AnOddBatchIsRefusedWithWhatToDo) {
  const Mixup mixup(recipe("batch"), 10);
  RngMixRandom random(Mixup::stream(1, 0, 0, 0, 1));
  try {
    mixup.draw(random, 7, 8, 8, true);
    FAIL() << "an odd batch was mixed";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("even"), std::string::npos) << e.what();
  }
}

}  // namespace
