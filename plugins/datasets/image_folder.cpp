// Dataset `image_folder`: root/<class>/<image>, read with OpenCV on demand.

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "array_dataset.hpp"
#include "datasets.hpp"
#include "image_files.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

namespace fs = std::filesystem;

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
      if (entry.is_regular_file() && is_image_file(entry.path().string()))
        images.push_back(entry.path().string());
    std::sort(images.begin(), images.end());
    for (auto& f : images) {
      files.push_back(std::move(f));
      labels.push_back(it->second);
    }
  }
  if (files.empty() && must_have_every_class)
    throw DataError("dataset image_folder: no images under '" + root + "'");
  return image_files_dataset(std::move(files), std::move(labels), color, root);
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
  };
  properties.update(image_files_properties());
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
