#pragma once
// A dataset of image files with a label each, read with OpenCV on demand: what image_folder
// and image_csv find becomes one of these.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// Whether `path` has the extension of an image format OpenCV reads (png, jpg, bmp, tif, webp,
/// pnm), in any case.
bool is_image_file(const std::string& path);

/// cv::imdecode's flags for a grayscale or colour decode at 1/`reduction` (2, 4, 8: libjpeg's
/// scaled decode of a JPEG; 1: the whole image).
int imdecode_flags(bool color, int reduction);

/// The schema properties every dataset of image files takes: mode (grayscale or color) and the
/// validation split's (split_schema_properties).
nlohmann::json image_files_properties();

/// `files` with `labels` (-1 each where the data has none: `has_labels` false); `color`: 3
/// channels in RGB order, else grayscale. `description` names where they came from.
std::shared_ptr<Dataset> image_files_dataset(std::vector<std::string> files,
                                             std::vector<int64_t> labels, bool color,
                                             std::string description, bool has_labels = true);

/// The same with every label of each file (several for multi-label data, ascending); a file's
/// label() is its first.
std::shared_ptr<Dataset> image_files_dataset(std::vector<std::string> files,
                                             std::vector<std::vector<int64_t>> label_sets,
                                             bool color, std::string description,
                                             bool has_labels = true);

}  // namespace runner::data
