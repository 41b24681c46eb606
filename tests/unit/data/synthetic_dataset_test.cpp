// The `synthetic` dataset: deterministic, any shape, learnable (class-dependent).

#include <gtest/gtest.h>

#include "data/data_test_util.hpp"

namespace runner::data {
namespace {

TEST(SyntheticDataset, IsDeterministicAndShapedAsAsked) {
  const nlohmann::json p = {{"train_size", 50}, {"val_size", 5}, {"test_size", 0},  {"height", 6},
                            {"width", 5},       {"channels", 3}, {"num_classes", 4}};
  DatasetContext context;
  context.seed = 9;
  const DatasetSplits a = testing::make_dataset("synthetic", p, context);
  const DatasetSplits b = testing::make_dataset("synthetic", p, context);
  EXPECT_EQ(a.train->size(), 50u);
  EXPECT_EQ(a.val->size(), 5u);
  EXPECT_EQ(a.test, nullptr);
  EXPECT_EQ(a.num_classes, 4);
  const Sample s = a.train->get(7), t = b.train->get(7);
  EXPECT_EQ(s.image.type(), CV_8UC3);
  EXPECT_EQ(s.image.size(), cv::Size(5, 6));
  EXPECT_EQ(cv::countNonZero(s.image.reshape(1) != t.image.reshape(1)), 0);
  EXPECT_EQ(s.label, a.train->label(7));
  context.seed = 10;
  const DatasetSplits c = testing::make_dataset("synthetic", p, context);
  EXPECT_GT(cv::countNonZero(c.train->get(7).image.reshape(1) != s.image.reshape(1)), 0);
}

TEST(SyntheticDataset, SamplesOfOneClassShareAPattern) {
  const DatasetSplits d = testing::make_dataset(
      "synthetic", {{"train_size", 200}, {"num_classes", 2}, {"noise", 0.2}, {"seed", 1}});
  // Mean image per class; two samples of the same class are closer than of different classes.
  cv::Mat sum[2] = {cv::Mat::zeros(28, 28, CV_64F), cv::Mat::zeros(28, 28, CV_64F)};
  int count[2] = {0, 0};
  for (size_t i = 0; i < 200; ++i) {
    const Sample s = d.train->get(i);
    ASSERT_GE(s.label, 0);
    ASSERT_LT(s.label, 2);
    cv::Mat f;
    s.image.convertTo(f, CV_64F);
    sum[s.label] += f;
    ++count[s.label];
  }
  ASSERT_GT(count[0], 50);
  ASSERT_GT(count[1], 50);
  const double between = cv::norm(sum[0] / count[0], sum[1] / count[1]);
  const Sample x = d.train->get(0);
  cv::Mat f;
  x.image.convertTo(f, CV_64F);
  const double within = cv::norm(f, sum[x.label] / count[x.label]);
  EXPECT_LT(within, between);
}

}  // namespace
}  // namespace runner::data
