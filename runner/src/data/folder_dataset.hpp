#pragma once
// A plain folder of images without labels (`runner predict RUN_DIR --input FOLDER`): each
// image file in it, in name order, decoded as the model takes it (1 channel: grayscale;
// 3: RGB, as image_folder's color mode).

#include <memory>
#include <string>
#include <vector>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// The image files directly in `folder` (png, jpg, bmp, tif, webp, pnm), by name, decoded to
/// `channels` (1 or 3). Throws ConfigError when the folder is missing or holds no image, or
/// `channels` is neither.
std::shared_ptr<Dataset> folder_dataset(const std::string& folder, int64_t channels);

}  // namespace runner::data
