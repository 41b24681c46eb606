#pragma once
// A plain folder of images without labels (`runner predict RUN_DIR --input FOLDER`): each
// image file directly in it, in name order, decoded as the model takes it (1 channel:
// grayscale; 3: RGB, as image_folder's color mode), and what it holds besides.

#include <memory>
#include <string>
#include <vector>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// What a folder holds for prediction: its image files (png, jpg, bmp, tif, webp, pnm, by
/// extension), by name, and what is not read: other files and subfolders (by name).
struct ImageFolderListing {
  std::string folder;
  std::vector<std::string> files;       ///< full paths
  std::vector<std::string> ignored;     ///< names of files that are not images by extension
  std::vector<std::string> subfolders;  ///< names; their images are not read
};

/// Lists `folder` (not recursing). Throws ConfigError when the folder is missing or holds no
/// image file (saying what it does hold).
ImageFolderListing list_image_folder(const std::string& folder);

/// The listing's files, decoded to `channels` (1 or 3): ConfigError for another count.
std::shared_ptr<Dataset> folder_dataset(const ImageFolderListing& listing, int64_t channels);

/// "a.txt, b.csv, c and 4 more": at most `shown` names.
std::string listing_names(const std::vector<std::string>& names, size_t shown);

}  // namespace runner::data
