#include "data/folder_dataset.hpp"

#include <algorithm>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "runner/data/image_file.hpp"
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
    s.image = read_image_file(path, color_);
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

ImageFolderListing list_image_folder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw ConfigError("--input " + folder + ": no such folder (give a folder of images)");
  ImageFolderListing listing;
  listing.folder = folder;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec))
      listing.subfolders.push_back(name);
    else if (is_image_file(entry.path()))
      listing.files.push_back(entry.path().string());
    else
      listing.ignored.push_back(name);
  }
  std::sort(listing.files.begin(), listing.files.end());
  std::sort(listing.ignored.begin(), listing.ignored.end());
  std::sort(listing.subfolders.begin(), listing.subfolders.end());
  if (listing.files.empty())
    throw ConfigError("--input " + folder +
                      ": no image files in it (png, jpg, bmp, tif, webp, pnm" +
                      (listing.subfolders.empty()
                           ? std::string(")")
                           : "; subfolders are not read, and it has " +
                                 listing_names(listing.subfolders, 3) + ": give one of them)"));
  return listing;
}

std::shared_ptr<Dataset> folder_dataset(const ImageFolderListing& listing, int64_t channels) {
  if (channels != 1 && channels != 3)
    throw ConfigError("--input " + listing.folder + ": the model takes " +
                      std::to_string(channels) +
                      "-channel images; a folder of image files gives 1 (grayscale) or 3 (RGB)");
  return std::make_shared<FolderDataset>(listing.files, channels == 3, listing.folder);
}

std::string listing_names(const std::vector<std::string>& names, size_t shown) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < shown; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

}  // namespace runner::data
