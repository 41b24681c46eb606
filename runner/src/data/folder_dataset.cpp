#include "data/folder_dataset.hpp"

#include <algorithm>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "runner/error.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;

class FolderDataset : public Dataset, public FileBackedDataset {
 public:
  FolderDataset(std::vector<std::string> files, bool color, std::string folder)
      : files_(std::move(files)), color_(color), folder_(std::move(folder)) {}
  size_t size() const override { return files_.size(); }
  Sample get(size_t index) const override {
    const std::string& path = files_.at(index);
    Sample s;
    s.image = cv::imread(path, color_ ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
    if (s.image.empty())
      throw DataError(path +
                      ": cannot read the image (corrupt, or not a format OpenCV reads); "
                      "remove or replace it");
    if (color_) cv::cvtColor(s.image, s.image, cv::COLOR_BGR2RGB);
    return s;
  }
  bool has_labels() const override { return false; }
  int64_t label(size_t) const override { return -1; }
  std::string describe() const override { return folder_; }
  std::string file(size_t index) const override { return files_.at(index); }

 private:
  std::vector<std::string> files_;
  bool color_;
  std::string folder_;
};

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::string> known = {".png",  ".jpg", ".jpeg", ".bmp", ".tif", ".tiff",
                                                 ".webp", ".pgm", ".ppm",  ".pbm", ".pnm"};
  return std::find(known.begin(), known.end(), ext) != known.end();
}

}  // namespace

std::shared_ptr<Dataset> folder_dataset(const std::string& folder, int64_t channels) {
  if (!fs::is_directory(folder))
    throw ConfigError("--input " + folder + ": no such folder (give a folder of images)");
  if (channels != 1 && channels != 3)
    throw ConfigError("--input " + folder + ": the model takes " + std::to_string(channels) +
                      "-channel images; a folder of image files gives 1 (grayscale) or 3 (RGB)");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && is_image_file(entry.path()))
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw ConfigError("--input " + folder +
                      ": no image files in it (png, jpg, bmp, tif, webp, pnm; subfolders are "
                      "not read)");
  return std::make_shared<FolderDataset>(std::move(files), channels == 3, folder);
}

}  // namespace runner::data
