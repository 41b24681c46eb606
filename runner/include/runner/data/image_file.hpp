#pragma once
// Reading one image file as the datasets of files do (image_folder, image_csv, `runner predict
// --input`): grayscale or RGB, one error text for a file that cannot be read.

#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "runner/error.hpp"

namespace runner::data {

/// The image at `path`: HxW u8 (color false) or HxWx3 RGB. Throws DataError naming the file
/// when OpenCV cannot read it.
inline cv::Mat read_image_file(const std::string& path, bool color) {
  cv::Mat image = cv::imread(path, color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
  if (image.empty())
    throw DataError(path +
                    ": cannot read the image (missing, corrupt or not an image format OpenCV "
                    "reads); remove or replace it");
  if (color) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

}  // namespace runner::data
