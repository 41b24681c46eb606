// The `image_folder` dataset: classes sorted by name, grayscale/colour, unreadable images.

#include <filesystem>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "data/data_test_util.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

using testing::TempDir;

void write_image(const std::string& path, uint8_t b, uint8_t g, uint8_t r) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  cv::Mat m(3, 4, CV_8UC3, cv::Scalar(b, g, r));
  ASSERT_TRUE(cv::imwrite(path, m));
}

TEST(ImageFolderDataset, SortsClassesAndReadsColourAsRgb) {
  TempDir dir("folder_read");
  write_image(dir.file("zebra/a.png"), 10, 20, 30);
  write_image(dir.file("cat/b.png"), 1, 2, 3);
  write_image(dir.file("cat/a.png"), 4, 5, 6);
  testing::write_text(dir.file("cat/notes.txt"), "not an image");  // ignored by extension
  const DatasetSplits s = testing::make_dataset("image_folder", {{"root", dir.str()}});
  ASSERT_EQ(s.class_names, (std::vector<std::string>{"cat", "zebra"}));
  EXPECT_EQ(s.num_classes, 2);
  ASSERT_EQ(s.train->size(), 3u);
  const Sample first = s.train->get(0);  // cat/a.png
  EXPECT_EQ(first.label, 0);
  ASSERT_EQ(first.image.type(), CV_8UC3);
  EXPECT_EQ(first.image.at<cv::Vec3b>(0, 0), cv::Vec3b(6, 5, 4));  // RGB order
  EXPECT_EQ(s.train->get(2).label, 1);
  const DatasetSplits gray =
      testing::make_dataset("image_folder", {{"root", dir.str()}, {"mode", "grayscale"}});
  EXPECT_EQ(gray.train->get(2).image.type(), CV_8UC1);
}

TEST(ImageFolderDataset, UnreadableImageNamesTheFile) {
  TempDir dir("folder_bad");
  write_image(dir.file("a/ok.png"), 1, 1, 1);
  testing::write_text(dir.file("a/broken.png"), "this is not a png");
  const DatasetSplits s = testing::make_dataset("image_folder", {{"root", dir.str()}});
  ASSERT_EQ(s.train->size(), 2u);
  try {
    s.train->get(0);  // broken.png sorts first
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.png: cannot read the image"), std::string::npos)
        << e.what();
  }
}

TEST(ImageFolderDataset, MissingRootOrTestClassOutsideTrainingIsAnError) {
  TempDir dir("folder_missing");
  EXPECT_THROW(testing::make_dataset("image_folder", {{"root", dir.file("nope")}}), DataError);
  write_image(dir.file("train/a/x.png"), 1, 1, 1);
  write_image(dir.file("test/b/x.png"), 1, 1, 1);
  EXPECT_THROW(testing::make_dataset(
                   "image_folder", {{"root", dir.file("train")}, {"test_root", dir.file("test")}}),
               DataError);
}

}  // namespace
}  // namespace runner::data
