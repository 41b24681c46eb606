// search: random as a user relies on it: the same seed draws the same points on every run,
// another seed draws others, and every value lies in its distribution (int and choice reach
// both ends).

#include <gtest/gtest.h>

#include <set>

#include "sweep/random_search.hpp"

namespace runner::sweep {
namespace {

using nlohmann::json;

const json kDistributions = json::parse(R"({
  "optimizer.lr": {"loguniform": [1e-5, 1e-1]},
  "optimizer.weight_decay": {"uniform": [0.0, 0.5]},
  "train.epochs": {"int": [1, 3]},
  "train.batch_size": {"choice": [16, 32, 64]}
})");
const std::vector<std::string> kOrder = {"optimizer.lr", "optimizer.weight_decay", "train.epochs",
                                         "train.batch_size"};

TEST(RandomSearch, SameSeedSamePointsOtherSeedOthers) {
  const auto a = draw_random_points(kDistributions, kOrder, 20, 7);
  const auto b = draw_random_points(kDistributions, kOrder, 20, 7);
  const auto c = draw_random_points(kDistributions, kOrder, 20, 8);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(RandomSearch, EveryValueInItsDistributionAndEndsReached) {
  std::set<int64_t> epochs;
  std::set<int64_t> batches;
  int small_lr = 0;
  for (const auto& p : draw_random_points(kDistributions, kOrder, 400, 1)) {
    const double lr = p.at("optimizer.lr").get<double>();
    EXPECT_GE(lr, 1e-5);
    EXPECT_LE(lr, 1e-1);
    small_lr += lr < 1e-3;  // log-uniform: half of the draws below the geometric middle
    const double wd = p.at("optimizer.weight_decay").get<double>();
    EXPECT_GE(wd, 0.0);
    EXPECT_LE(wd, 0.5);
    ASSERT_TRUE(p.at("train.epochs").is_number_integer());
    epochs.insert(p.at("train.epochs").get<int64_t>());
    batches.insert(p.at("train.batch_size").get<int64_t>());
  }
  EXPECT_EQ(epochs, (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(batches, (std::set<int64_t>{16, 32, 64}));
  EXPECT_GT(small_lr, 150);
  EXPECT_LT(small_lr, 250);
}

TEST(RandomSearch, FloatsShowTheValueTheyRunWith) {
  // Rounded to 4 significant digits: the point id and the override print the same number.
  for (const auto& p : draw_random_points(kDistributions, kOrder, 10, 3)) {
    const double lr = p.at("optimizer.lr").get<double>();
    char text[32];
    std::snprintf(text, sizeof(text), "%.4g", lr);
    EXPECT_EQ(std::strtod(text, nullptr), lr);
  }
}

TEST(RandomSearch, NarrowRangesStayInsideAfterRounding) {
  const json narrow = json::parse(R"({"x": {"uniform": [0.99991, 0.99999]},
                                      "y": {"loguniform": [1.00001e-3, 1.00004e-3]}})");
  for (const auto& p : draw_random_points(narrow, {"x", "y"}, 200, 5)) {
    EXPECT_GE(p.at("x").get<double>(), 0.99991);
    EXPECT_LE(p.at("x").get<double>(), 0.99999);
    EXPECT_GE(p.at("y").get<double>(), 1.00001e-3);
    EXPECT_LE(p.at("y").get<double>(), 1.00004e-3);
  }
}

}  // namespace
}  // namespace runner::sweep
