// data.reduced_decode: a JPEG decoded at 1/2, 1/4 or 1/8 where the first transform (resize,
// random_resized_crop) shrinks it enough gives the pixels of a whole decode followed by the
// same transform, within the tolerance docs/data.md states, with the same random draws.

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/data_test_util.hpp"
#include "data/pipeline.hpp"
#include "data/sample_reader.hpp"

namespace runner::data {
namespace {

using testing::TempDir;

// A photo-like 1200 x 900 JPEG: smooth colour fields, edges of shapes, some noise.
void write_photo_jpeg(const std::string& path, int seed) {
  cv::Mat image(900, 1200, CV_8UC3);
  cv::RNG rng(seed);
  for (int y = 0; y < image.rows; ++y)
    for (int x = 0; x < image.cols; ++x)
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(
          cv::saturate_cast<uchar>(128 + 100 * std::sin(x * 0.01 + seed) + rng.gaussian(6)),
          cv::saturate_cast<uchar>(128 + 100 * std::cos(y * 0.013) + rng.gaussian(6)),
          cv::saturate_cast<uchar>(128 + 80 * std::sin((x + y) * 0.007)));
  for (int k = 0; k < 12; ++k)
    cv::circle(image, {rng.uniform(0, 1200), rng.uniform(0, 900)}, rng.uniform(30, 200),
               cv::Scalar(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255)), -1);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_TRUE(cv::imwrite(path, image, {cv::IMWRITE_JPEG_QUALITY, 90}));
}

struct DecodeDifference {
  double mean = 0;  ///< mean absolute difference, levels of 255
  int reduced = 0;  ///< samples decoded smaller
};

// The pipeline's samples read whole and reduced, compared.
DecodeDifference compare_decodes(const DatasetSplits& splits, const Pipeline& pipeline,
                                 int epochs) {
  const SampleReader whole(*splits.train, pipeline, false), reduced(*splits.train, pipeline, true);
  EXPECT_TRUE(reduced.reduces());
  DecodeDifference d;
  double total = 0;
  int count = 0;
  for (int epoch = 0; epoch < epochs; ++epoch)
    for (size_t i = 0; i < splits.train->size(); ++i) {
      const SampledIndex item{i, false, i};
      const Sample a = whole.read(item, 3, epoch), b = reduced.read(item, 3, epoch);
      EXPECT_EQ(a.image.size(), b.image.size());
      cv::Mat diff;
      cv::absdiff(a.image, b.image, diff);
      total += cv::mean(diff.reshape(1))[0];
      ++count;
      int rows = 0, cols = 0;
      const std::string bytes = encoded_form(*splits.train)->encoded(i);
      d.reduced += reduced.reduction(bytes, 3, epoch, i, rows, cols) > 1;
    }
  d.mean = total / count;
  return d;
}

TEST(ReducedDecode, RandomResizedCropGivesTheWholeDecodesPixelsWithinTolerance) {
  TempDir dir("reduced_rrc");
  for (int i = 0; i < 6; ++i) write_photo_jpeg(dir.file("c/" + std::to_string(i) + ".jpg"), i);
  const DatasetSplits splits = testing::make_dataset("image_folder", {{"root", dir.str()}});
  Pipeline pipeline;
  pipeline.add(testing::make_transform("random_resized_crop", {{"height", 160}, {"width", 160}}));
  pipeline.add(testing::make_transform("horizontal_flip", {{"p", 0.5}}));
  const DecodeDifference d = compare_decodes(splits, pipeline, 8);
  EXPECT_GT(d.reduced, 10) << "large crops of 1200 x 900 decode at 1/2 or 1/4";
  EXPECT_LT(d.mean, 4.0) << "mean absolute difference, levels of 255";
  std::printf("random_resized_crop 160: %d of 48 reduced, mean |difference| %.2f levels\n",
              d.reduced, d.mean);
}

TEST(ReducedDecode, ResizeGivesTheWholeDecodesPixelsWithinTolerance) {
  TempDir dir("reduced_resize");
  for (int i = 0; i < 4; ++i) write_photo_jpeg(dir.file("c/" + std::to_string(i) + ".jpg"), i + 10);
  const DatasetSplits splits = testing::make_dataset("image_folder", {{"root", dir.str()}});
  Pipeline pipeline;
  pipeline.add(testing::make_transform("resize", {{"height", 224}, {"width", 224}}));
  const DecodeDifference d = compare_decodes(splits, pipeline, 1);
  EXPECT_EQ(d.reduced, 4) << "1200 x 900 to 224: decoded at 1/4";
  EXPECT_LT(d.mean, 4.0);
  std::printf("resize 224: %d of 4 reduced, mean |difference| %.2f levels\n", d.reduced, d.mean);
}

TEST(ReducedDecode, NothingChangesWhereTheFirstTransformDoesNotShrink) {
  TempDir dir("reduced_none");
  write_photo_jpeg(dir.file("c/0.jpg"), 1);
  const DatasetSplits splits = testing::make_dataset("image_folder", {{"root", dir.str()}});
  Pipeline flip_first;
  flip_first.add(testing::make_transform("horizontal_flip", {{"p", 0.5}}));
  EXPECT_FALSE(SampleReader(*splits.train, flip_first, true).reduces());
  Pipeline resize_first;
  resize_first.add(testing::make_transform("resize", {{"height", 900}, {"width", 1200}}));
  const SampleReader reader(*splits.train, resize_first, true);
  int rows = 0, cols = 0;
  EXPECT_EQ(reader.reduction(encoded_form(*splits.train)->encoded(0), 1, 0, 0, rows, cols), 1)
      << "no smaller decode covers a same-size output";
  EXPECT_EQ(rows, 900);
  EXPECT_EQ(cols, 1200);
}

}  // namespace
}  // namespace runner::data
