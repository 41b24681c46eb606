// The `mnist` dataset: IDX files of every element type, gz and raw, bad files, Fashion-MNIST.

#include <cstring>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "data/data_test_util.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

using testing::TempDir;

/// Big-endian bytes of `values` as IDX type `type`.
std::vector<uint8_t> encode(uint8_t type, const std::vector<double>& values) {
  std::vector<uint8_t> out;
  auto push = [&out](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    for (size_t i = n; i-- > 0;) out.push_back(b[i]);  // host is little-endian
  };
  for (double v : values) {
    if (type == 0x08) out.push_back(static_cast<uint8_t>(v));
    if (type == 0x09) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
    if (type == 0x0B) {
      int16_t x = static_cast<int16_t>(v);
      push(&x, 2);
    }
    if (type == 0x0C) {
      int32_t x = static_cast<int32_t>(v);
      push(&x, 4);
    }
    if (type == 0x0D) {
      float x = static_cast<float>(v);
      push(&x, 4);
    }
    if (type == 0x0E) {
      push(&v, 8);
    }
  }
  return out;
}

void write_split(const TempDir& dir, const std::string& prefix, uint8_t type,
                 const std::vector<double>& pixels, uint32_t count, uint32_t h, uint32_t w,
                 const std::vector<uint8_t>& labels, bool gz) {
  auto images = testing::idx_bytes(type, {count, h, w}, encode(type, pixels));
  auto label_bytes = testing::idx_bytes(0x08, {static_cast<uint32_t>(labels.size())}, labels);
  const std::string ext = gz ? ".gz" : "";
  testing::write_bytes(dir.file(prefix + "-images-idx3-ubyte" + ext),
                       gz ? testing::gzip_stored(images) : images);
  testing::write_bytes(dir.file(prefix + "-labels-idx1-ubyte" + ext),
                       gz ? testing::gzip_stored(label_bytes) : label_bytes);
}

std::string error_of(const nlohmann::json& params) {
  try {
    testing::make_dataset("mnist", params);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no DataError";
}

struct TypeCase {
  uint8_t type;
  int cv_depth;
  std::vector<double> pixels;  // 2 images of 2x3
};

class MnistElementTypes : public ::testing::TestWithParam<std::tuple<TypeCase, bool>> {};

TEST_P(MnistElementTypes, ReadsEveryValueInItsOwnType) {
  const auto& [tc, gz] = GetParam();
  TempDir dir("mnist_types");
  write_split(dir, "train", tc.type, tc.pixels, 2, 2, 3, {3, 7}, gz);
  const DatasetSplits splits = testing::make_dataset("mnist", {{"root", dir.str()}});
  ASSERT_EQ(splits.train->size(), 2u);
  EXPECT_EQ(splits.val, nullptr);
  EXPECT_EQ(splits.test, nullptr);  // no t10k files
  EXPECT_EQ(splits.num_classes, 10);
  for (size_t i = 0; i < 2; ++i) {
    const Sample s = splits.train->get(i);
    EXPECT_EQ(s.label, i == 0 ? 3 : 7);
    ASSERT_EQ(s.image.rows, 2);
    ASSERT_EQ(s.image.cols, 3);
    ASSERT_EQ(s.image.depth(), tc.cv_depth);
    cv::Mat as_double;
    s.image.convertTo(as_double, CV_64F);
    for (int k = 0; k < 6; ++k)
      EXPECT_DOUBLE_EQ(as_double.at<double>(k / 3, k % 3), tc.pixels[i * 6 + k]) << "pixel " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, MnistElementTypes,
    ::testing::Combine(
        ::testing::Values(
            TypeCase{0x08, CV_8U, {0, 1, 2, 127, 128, 255, 9, 8, 7, 6, 5, 4}},
            TypeCase{0x09, CV_8S, {-128, -1, 0, 1, 64, 127, 5, -5, 6, -6, 7, -7}},
            TypeCase{0x0B, CV_16S, {-32768, -300, 0, 300, 1234, 32767, 1, 2, 3, 4, 5, 6}},
            TypeCase{
                0x0C, CV_32S, {-2000000000, -70000, 0, 70000, 2000000000, 1, 2, 3, 4, 5, 6, 7}},
            TypeCase{0x0D, CV_32F, {-1.5, 0.25, 0, 1e-3f, 3.75, 1e6, 1, 2, 3, 4, 5, 6}},
            TypeCase{0x0E, CV_64F, {-1e300, 0.1, 0, 2.5, 1e-300, 7, 1, 2, 3, 4, 5, 6}}),
        ::testing::Bool()));

TEST(MnistDataset, LoadsT10kAsTheTestSplitAndResolvesRelativeRoots) {
  TempDir dir("mnist_test_split");
  std::filesystem::create_directories(dir.file("data"));
  const std::string data = dir.file("data");
  // Files under <config_dir>/data, named relative to the experiment.
  auto images = testing::idx_bytes(0x08, {1, 4, 4}, std::vector<uint8_t>(16, 5));
  testing::write_bytes(data + "/train-images-idx3-ubyte", images);
  testing::write_bytes(data + "/train-labels-idx1-ubyte", testing::idx_bytes(0x08, {1}, {2}));
  testing::write_bytes(data + "/t10k-images-idx3-ubyte.gz", testing::gzip_stored(images));
  testing::write_bytes(data + "/t10k-labels-idx1-ubyte.gz",
                       testing::gzip_stored(testing::idx_bytes(0x08, {1}, {4})));
  DatasetContext context;
  context.config_dir = dir.str();
  const DatasetSplits s = testing::make_dataset("mnist", {{"root", "data"}}, context);
  ASSERT_TRUE(s.test);
  EXPECT_EQ(s.test->get(0).label, 4);
  EXPECT_EQ(s.train->get(0).label, 2);
  const DatasetSplits no_test =
      testing::make_dataset("mnist", {{"root", "data"}, {"test", false}}, context);
  EXPECT_EQ(no_test.test, nullptr);
}

TEST(MnistDataset, RejectsAWrongMagicNamingTheFile) {
  TempDir dir("mnist_magic");
  write_split(dir, "train", 0x08, std::vector<double>(4, 0), 1, 2, 2, {0}, false);
  auto bytes = testing::idx_bytes(0x08, {1, 2, 2}, {0, 0, 0, 0});
  bytes[0] = 0x50;  // e.g. a PNG or text file by mistake
  testing::write_bytes(dir.file("train-images-idx3-ubyte"), bytes);
  const std::string msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("train-images-idx3-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  // An unknown element type is a wrong magic too.
  bytes = testing::idx_bytes(0x0A, {1, 2, 2}, {0, 0, 0, 0});
  testing::write_bytes(dir.file("train-images-idx3-ubyte"), bytes);
  EXPECT_NE(error_of({{"root", dir.str()}}).find("magic"), std::string::npos);
}

TEST(MnistDataset, RejectsTruncatedFilesRawAndGzip) {
  TempDir dir("mnist_trunc");
  write_split(dir, "train", 0x0B, std::vector<double>(2 * 2 * 2, 1), 2, 2, 2, {0, 1}, false);
  auto bytes = testing::idx_bytes(0x0B, {2, 2, 2}, encode(0x0B, std::vector<double>(8, 1)));
  bytes.resize(bytes.size() - 3);
  testing::write_bytes(dir.file("train-images-idx3-ubyte"), bytes);
  std::string msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("train-images-idx3-ubyte: truncated"), std::string::npos) << msg;
  // Truncated header.
  testing::write_bytes(dir.file("train-images-idx3-ubyte"), {0, 0, 8, 3, 0, 0});
  msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // A gzip stream cut short.
  std::filesystem::remove(dir.file("train-images-idx3-ubyte"));
  auto gz = testing::gzip_stored(
      testing::idx_bytes(0x0B, {2, 2, 2}, encode(0x0B, std::vector<double>(8, 1))));
  gz.resize(gz.size() - 10);
  testing::write_bytes(dir.file("train-images-idx3-ubyte.gz"), gz);
  msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(MnistDataset, RejectsImageLabelCountMismatch) {
  TempDir dir("mnist_count");
  write_split(dir, "train", 0x08, std::vector<double>(3 * 4, 0), 3, 2, 2, {0, 1}, false);
  const std::string msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("2 labels for 3 images"), std::string::npos) << msg;
}

TEST(MnistDataset, RejectsALabelOutsideTheClassesNamingTheRecord) {
  TempDir dir("mnist_label");
  write_split(dir, "train", 0x08, std::vector<double>(3 * 4, 0), 3, 2, 2, {0, 12, 1}, true);
  const std::string msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find("train-labels-idx1-ubyte.gz: record 1: label 12"), std::string::npos) << msg;
  // Fine once num_classes covers it.
  EXPECT_NO_THROW(testing::make_dataset("mnist", {{"root", dir.str()}, {"num_classes", 13}}));
}

TEST(MnistDataset, MissingFilesSayWhereTheyWereLookedFor) {
  TempDir dir("mnist_missing");
  const std::string msg = error_of({{"root", dir.str()}});
  EXPECT_NE(msg.find(dir.str()), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-images-idx3-ubyte"), std::string::npos) << msg;
}

TEST(MnistDataset, SplitsValidationByCountOrSeededFraction) {
  TempDir dir("mnist_split");
  std::vector<double> px;
  std::vector<uint8_t> labels;
  for (int i = 0; i < 10; ++i) {
    px.push_back(i);  // 1x1 images whose pixel is the row number
    labels.push_back(static_cast<uint8_t>(i));
  }
  write_split(dir, "train", 0x08, px, 10, 1, 1, labels, false);
  // The original's "first N rows train, the rest validate".
  DatasetSplits s = testing::make_dataset("mnist", {{"root", dir.str()}, {"val_split", 7}});
  ASSERT_EQ(s.train->size(), 7u);
  ASSERT_EQ(s.val->size(), 3u);
  EXPECT_EQ(s.train->get(6).label, 6);
  EXPECT_EQ(s.val->get(0).label, 7);
  // A fraction, shuffled with a seed: disjoint, complete, reproducible, seed-dependent.
  const nlohmann::json p = {
      {"root", dir.str()}, {"val_split", 0.3}, {"split_shuffle", true}, {"split_seed", 5}};
  s = testing::make_dataset("mnist", p);
  ASSERT_EQ(s.val->size(), 3u);
  std::set<int64_t> seen;
  std::vector<int64_t> val_labels;
  for (size_t i = 0; i < 7; ++i) seen.insert(s.train->label(i));
  for (size_t i = 0; i < 3; ++i) {
    seen.insert(s.val->label(i));
    val_labels.push_back(s.val->label(i));
  }
  EXPECT_EQ(seen.size(), 10u);
  const DatasetSplits again = testing::make_dataset("mnist", p);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(again.val->label(i), val_labels[i]);
  bool differs = false;
  for (int seed = 6; seed < 12 && !differs; ++seed) {
    nlohmann::json q = p;
    q["split_seed"] = seed;
    const DatasetSplits other = testing::make_dataset("mnist", q);
    for (size_t i = 0; i < 3; ++i) differs = differs || other.val->label(i) != val_labels[i];
  }
  EXPECT_TRUE(differs);
  EXPECT_THROW(testing::make_dataset("mnist", {{"root", dir.str()}, {"val_split", 11}}),
               ConfigError);
}

TEST(MnistDataset, DefaultsToFashionMnist) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const DatasetSplits s = testing::make_dataset("mnist", {{"val_split", 50000}});
  ASSERT_TRUE(s.train && s.val && s.test);
  EXPECT_EQ(s.train->size() + s.val->size(), 60000u);
  EXPECT_EQ(s.val->size(), 10000u);
  EXPECT_EQ(s.test->size(), 10000u);
  std::vector<size_t> counts(10, 0);
  for (size_t i = 0; i < s.test->size(); ++i) {
    const int64_t label = s.test->label(i);
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[label];
  }
  for (size_t c : counts) EXPECT_EQ(c, 1000u);  // Fashion-MNIST's test set is balanced
  const Sample first = s.train->get(0);
  EXPECT_EQ(first.image.rows, 28);
  EXPECT_EQ(first.image.cols, 28);
  EXPECT_EQ(first.image.type(), CV_8UC1);
  EXPECT_EQ(first.label, 9);  // the first training image of Fashion-MNIST is an ankle boot
  ASSERT_EQ(s.class_names.size(), 10u);
  EXPECT_EQ(s.class_names[9], "Ankle boot");
  double lo, hi;
  cv::minMaxLoc(first.image, &lo, &hi);
  EXPECT_EQ(lo, 0);
  EXPECT_GT(hi, 200);
}

}  // namespace
}  // namespace runner::data
