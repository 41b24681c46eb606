// data.check: header: an image's size from its header, and a cut or corrupt file caught
// without decoding it.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "runner/error.hpp"
#include "temp_files.hpp"
#include "util/image_header.hpp"

namespace runner::util {
namespace {

namespace fs = std::filesystem;

std::string write_image(const runner::testing::TempDir& dir, const std::string& name, int width,
                        int height, int type) {
  const std::string path = (dir.path() / name).string();
  cv::imwrite(path, cv::Mat(height, width, type, cv::Scalar::all(90)));
  return path;
}

void cut(const std::string& path, size_t keep) { fs::resize_file(path, keep); }

std::string error_of(const std::string& path) {
  try {
    read_image_header(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageHeader, PngAndJpegSizesFromTheirHeaders) {
  runner::testing::TempDir dir;
  const auto png = read_image_header(write_image(dir, "a.png", 31, 17, CV_8UC1));
  ASSERT_TRUE(png.has_value());
  EXPECT_EQ(png->width, 31);
  EXPECT_EQ(png->height, 17);
  EXPECT_EQ(png->format, "png");
  const auto jpeg = read_image_header(write_image(dir, "b.jpg", 40, 24, CV_8UC3));
  ASSERT_TRUE(jpeg.has_value());
  EXPECT_EQ(jpeg->width, 40);
  EXPECT_EQ(jpeg->height, 24);
  EXPECT_FALSE(read_image_header(write_image(dir, "c.bmp", 8, 8, CV_8UC1)).has_value())
      << "another format: the caller decodes it";
}

TEST(ImageHeader, ACutFileIsNamedWithWhatIsWrong) {
  runner::testing::TempDir dir;
  const std::string png = write_image(dir, "a.png", 64, 64, CV_8UC1);
  cut(png, fs::file_size(png) - 5);
  EXPECT_NE(error_of(png).find(png + ": a PNG cut short"), std::string::npos) << error_of(png);
  const std::string jpeg = write_image(dir, "b.jpg", 64, 64, CV_8UC3);
  cut(jpeg, fs::file_size(jpeg) / 2);
  EXPECT_NE(error_of(jpeg).find("a JPEG cut short"), std::string::npos) << error_of(jpeg);
  const std::string empty = dir.write("c.png", "");
  EXPECT_NE(error_of(empty).find("an empty file"), std::string::npos);
}

}  // namespace
}  // namespace runner::util
