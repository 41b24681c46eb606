// Dataset `image_folder`: root/<class>/<image>, read with OpenCV on demand.

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "array_dataset.hpp"
#include "datasets.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;

class ImageFolderDataset : public Dataset, public FileBackedDataset {
 public:
  ImageFolderDataset(std::vector<std::string> files, std::vector<int64_t> labels, bool color,
                     std::string description)
      : files_(std::move(files)),
        labels_(std::move(labels)),
        color_(color),
        description_(std::move(description)) {}
  size_t size() const override { return files_.size(); }
  Sample get(size_t index) const override {
    const std::string& path = files_.at(index);
    Sample s;
    s.image = cv::imread(path, color_ ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
    if (s.image.empty())
      throw DataError(path +
                      ": cannot read the image (missing, corrupt or not an image format "
                      "OpenCV reads); remove or replace it");
    if (color_) cv::cvtColor(s.image, s.image, cv::COLOR_BGR2RGB);
    s.label = labels_[index];
    return s;
  }
  int64_t label(size_t index) const override { return labels_.at(index); }
  std::string describe() const override { return description_; }
  std::string file(size_t index) const override { return files_.at(index); }

 private:
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  bool color_;
  std::string description_;
};

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::string> known = {".png",  ".jpg", ".jpeg", ".bmp", ".tif", ".tiff",
                                                 ".webp", ".pgm", ".ppm",  ".pbm", ".pnm"};
  return std::find(known.begin(), known.end(), ext) != known.end();
}

std::vector<std::string> sorted_class_dirs(const std::string& root) {
  if (!fs::is_directory(root))
    throw DataError("dataset image_folder: '" + root +
                    "' is not a folder; set data.dataset.root to root/<class>/<image>");
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw DataError("dataset image_folder: '" + root +
                    "' has no class folders (root/<class>/<image>)");
  return classes;
}

std::shared_ptr<Dataset> scan(const std::string& root, const std::vector<std::string>& classes,
                              bool color, bool must_have_every_class) {
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  std::map<std::string, int64_t> index;
  for (size_t c = 0; c < classes.size(); ++c) index[classes[c]] = static_cast<int64_t>(c);
  for (const std::string& dir : sorted_class_dirs(root)) {
    auto it = index.find(dir);
    if (it == index.end())
      throw DataError("dataset image_folder: class folder '" + root + "/" + dir +
                      "' is not among the training classes");
    std::vector<std::string> images;
    for (const auto& entry : fs::directory_iterator(root + "/" + dir))
      if (entry.is_regular_file() && is_image_file(entry.path()))
        images.push_back(entry.path().string());
    std::sort(images.begin(), images.end());
    for (auto& f : images) {
      files.push_back(std::move(f));
      labels.push_back(it->second);
    }
  }
  if (files.empty() && must_have_every_class)
    throw DataError("dataset image_folder: no images under '" + root + "'");
  return std::make_shared<ImageFolderDataset>(std::move(files), std::move(labels), color, root);
}

DatasetSplits make_image_folder(const nlohmann::json& params, const DatasetContext& context) {
  const std::string root = resolve_path(params.at("root").get<std::string>(), context.config_dir);
  const bool color = params.at("mode").get<std::string>() == "color";
  DatasetSplits splits;
  splits.class_names = sorted_class_dirs(root);
  splits.num_classes = static_cast<int64_t>(splits.class_names.size());
  std::tie(splits.train, splits.val) =
      split_train_val(scan(root, splits.class_names, color, true), params, context.seed);
  if (!params.at("test_root").is_null()) {
    const std::string test_root =
        resolve_path(params.at("test_root").get<std::string>(), context.config_dir);
    splits.test = scan(test_root, splits.class_names, color, true);
  }
  return splits;
}

}  // namespace

void register_image_folder(Registry<DatasetFactory>& registry) {
  nlohmann::json properties = {
      {"root",
       {{"type", "string"},
        {"x-runner-path", "folder"},
        {"description",
         "Folder of class folders: root/<class>/<image>. Classes are sorted by "
         "name; label = position in that order. Relative to the file that sets it."}}},
      {"test_root",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"x-runner-path", "folder"},
        {"description", "Optional test folder laid out like root, using root's classes."}}},
      {"mode",
       {{"type", "string"},
        {"enum", {"grayscale", "color"}},
        {"default", "color"},
        {"description", "grayscale: 1-channel u8; color: 3-channel u8 in RGB order."}}},
  };
  properties.update(split_schema_properties(0));
  registry.add(
      "image_folder", make_image_folder,
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"root"}},
       {"description", "Images read with OpenCV (png, jpg, bmp, tif, webp, pnm) on demand."},
       {"properties", properties}},
      "Folder of class folders of images (root/<class>/<image>)");
}

}  // namespace runner::data
