// The `kaggle_csv` dataset: the digit-recognizer layout, its split, and bad rows.

#include <gtest/gtest.h>

#include "data/data_test_util.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

using testing::TempDir;

/// A 2x2 Kaggle CSV: header, then `rows` of "label,p0,p1,p2,p3" (or pixels only).
std::string csv(bool labelled, const std::vector<std::string>& rows) {
  std::string text =
      labelled ? "label,pixel0,pixel1,pixel2,pixel3\n" : "pixel0,pixel1,pixel2,pixel3\n";
  for (const auto& r : rows) text += r + "\n";
  return text;
}

std::string error_of(const TempDir& dir) {
  try {
    testing::make_dataset("kaggle_csv", {{"root", dir.str()}, {"height", 2}, {"width", 2}});
  } catch (const DataError& e) {
    return e.what();
  }
  return "no DataError";
}

TEST(KaggleCsvDataset, ReadsTrainAndUnlabelledTest) {
  TempDir dir("kaggle_read");
  testing::write_text(dir.file("train.csv"), csv(true, {"3,0,1,2,255", "7,10,20,30,40"}));
  testing::write_text(dir.file("test.csv"), "pixel0,pixel1,pixel2,pixel3\r\n9,8,7,6\r\n");
  const DatasetSplits s =
      testing::make_dataset("kaggle_csv", {{"root", dir.str()}, {"height", 2}, {"width", 2}});
  ASSERT_EQ(s.train->size(), 2u);
  EXPECT_EQ(s.val, nullptr);
  const Sample a = s.train->get(0);
  EXPECT_EQ(a.label, 3);
  ASSERT_EQ(a.image.type(), CV_8UC1);
  EXPECT_EQ(a.image.at<uint8_t>(0, 0), 0);
  EXPECT_EQ(a.image.at<uint8_t>(0, 1), 1);
  EXPECT_EQ(a.image.at<uint8_t>(1, 0), 2);  // row-major: pixel2 is row 1, column 0
  EXPECT_EQ(a.image.at<uint8_t>(1, 1), 255);
  EXPECT_EQ(s.train->get(1).label, 7);
  ASSERT_TRUE(s.test);
  EXPECT_FALSE(s.test->has_labels());
  const Sample t = s.test->get(0);
  EXPECT_EQ(t.label, -1);
  EXPECT_EQ(t.image.at<uint8_t>(1, 1), 6);
}

TEST(KaggleCsvDataset, SplitsLikeTheOriginalOrByFraction) {
  TempDir dir("kaggle_split");
  std::vector<std::string> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(std::to_string(i) + ",1,2,3,4");
  testing::write_text(dir.file("train.csv"), csv(true, rows));
  DatasetSplits s = testing::make_dataset(
      "kaggle_csv", {{"root", dir.str()}, {"height", 2}, {"width", 2}, {"val_split", 8}});
  ASSERT_EQ(s.train->size(), 8u);
  ASSERT_EQ(s.val->size(), 2u);
  EXPECT_EQ(s.val->get(0).label, 8);  // first 8 rows train, the rest validate
  EXPECT_EQ(s.test, nullptr);         // no test.csv
  s = testing::make_dataset("kaggle_csv", {{"root", dir.str()},
                                           {"height", 2},
                                           {"width", 2},
                                           {"val_split", 0.5},
                                           {"split_shuffle", true}});
  EXPECT_EQ(s.train->size(), 5u);
  EXPECT_EQ(s.val->size(), 5u);
}

TEST(KaggleCsvDataset, RowWithTheWrongColumnCountNamesTheLine) {
  TempDir dir("kaggle_cols");
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,0,0", "2,0,0,0"}));
  const std::string msg = error_of(dir);
  EXPECT_NE(msg.find("train.csv:3: 4 columns, the header has 5"), std::string::npos) << msg;
}

TEST(KaggleCsvDataset, NonNumericOrOutOfRangePixelNamesLineAndColumn) {
  TempDir dir("kaggle_pixel");
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,0,0", "1,0,x7,0,0"}));
  std::string msg = error_of(dir);
  EXPECT_NE(msg.find("train.csv:3: column 3 (pixel1): 'x7'"), std::string::npos) << msg;
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,0,256"}));
  msg = error_of(dir);
  EXPECT_NE(msg.find("train.csv:2: column 5 (pixel3): '256'"), std::string::npos) << msg;
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,,0"}));
  EXPECT_NE(error_of(dir).find("train.csv:2"), std::string::npos);
}

TEST(KaggleCsvDataset, LabelOutsideTheClassesNamesTheLine) {
  TempDir dir("kaggle_label");
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,0,0", "", "10,0,0,0,0"}));
  const std::string msg = error_of(dir);
  EXPECT_NE(msg.find("train.csv: line 4: label 10 is outside [0, 10)"), std::string::npos) << msg;
}

TEST(KaggleCsvDataset, ShapeOrHeaderMismatchIsAnError) {
  TempDir dir("kaggle_shape");
  testing::write_text(dir.file("train.csv"), csv(true, {"1,0,0,0,0"}));
  std::string msg;
  try {
    testing::make_dataset("kaggle_csv", {{"root", dir.str()}});  // default 28x28
  } catch (const DataError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("4 pixel columns"), std::string::npos) << msg;
  testing::write_text(dir.file("train.csv"), csv(false, {"0,0,0,0"}));
  EXPECT_NE(error_of(dir).find("'label'"), std::string::npos);
  testing::write_text(dir.file("train.csv"), "");
  EXPECT_NE(error_of(dir).find("empty"), std::string::npos);
}

}  // namespace
}  // namespace runner::data
