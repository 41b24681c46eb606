// Dataset `mnist`: MNIST-style IDX files (MNIST, Fashion-MNIST, KMNIST...), gz or raw.

#include <cmath>
#include <filesystem>
#include <tuple>

#include <spdlog/spdlog.h>

#include "array_dataset.hpp"
#include "datasets.hpp"
#include "idx_reader.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";

/// The first existing file among `<root>/<prefix>-<kind>-idxN-ubyte[.gz]` and its
/// `<prefix>-<kind>.idxN-ubyte` spelling; empty when none exists.
std::string find_idx_file(const std::string& root, const std::string& prefix,
                          const std::string& kind, int ndims) {
  const std::string idx = "idx" + std::to_string(ndims) + "-ubyte";
  for (const std::string& stem : {prefix + "-" + kind + "-" + idx, prefix + "-" + kind + "." + idx})
    for (const char* ext : {".gz", ""}) {
      const std::string path = root + "/" + stem + ext;
      if (std::filesystem::is_regular_file(path)) return path;
    }
  return "";
}

std::shared_ptr<Dataset> load_split(const std::string& root, const std::string& prefix,
                                    int64_t num_classes) {
  const std::string images_path = find_idx_file(root, prefix, "images", 3);
  const std::string labels_path = find_idx_file(root, prefix, "labels", 1);
  if (images_path.empty() || labels_path.empty()) return nullptr;
  IdxArray images = read_idx_file(images_path);
  const IdxArray labels = read_idx_file(labels_path);
  if (images.dims.size() != 3 && images.dims.size() != 4)
    throw DataError(images_path + ": " + std::to_string(images.dims.size()) +
                    " dimensions, expected 3 (count, height, width) or 4 (..., channels)");
  if (labels.dims.size() != 1)
    throw DataError(labels_path + ": " + std::to_string(labels.dims.size()) +
                    " dimensions, expected 1 (one label per image)");
  const size_t count = images.dims[0];
  if (labels.dims[0] != count)
    throw DataError(labels_path + ": " + std::to_string(labels.dims[0]) + " labels for " +
                    std::to_string(count) + " images in " + images_path +
                    "; the two files must come from the same split");
  const size_t channels = images.dims.size() == 4 ? images.dims[3] : 1;
  if (images.dims[1] > (1u << 20) || images.dims[2] > (1u << 20) || channels < 1 ||
      channels > CV_CN_MAX)
    throw DataError(images_path + ": unsupported image shape (height " +
                    std::to_string(images.dims[1]) + ", width " + std::to_string(images.dims[2]) +
                    ", channels " + std::to_string(channels) + ")");
  std::vector<int64_t> label_values(count);
  for (size_t i = 0; i < count; ++i) {
    const double v = labels.value(i);
    if (v != std::floor(v) || !std::isfinite(v))
      throw DataError(labels_path + ": record " + std::to_string(i) + ": label " +
                      std::to_string(v) + " is not a whole number");
    label_values[i] = static_cast<int64_t>(v);
  }
  check_labels(label_values, num_classes, labels_path, "record");
  auto buffer = std::make_shared<const std::vector<uint8_t>>(std::move(images.data));
  return std::make_shared<ArrayDataset>(
      buffer, count, static_cast<int>(images.dims[1]), static_cast<int>(images.dims[2]),
      static_cast<int>(channels), images.cv_depth(), std::move(label_values), images_path);
}

DatasetSplits make_mnist(const nlohmann::json& params, const DatasetContext& context) {
  std::string root;
  DatasetSplits splits;
  if (params.at("root").is_null()) {
    root = kDefaultRoot;
    spdlog::info("dataset mnist: no root given, using Fashion-MNIST at {}", root);
    splits.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  } else {
    root = resolve_path(params.at("root").get<std::string>(), context.config_dir);
  }
  const int64_t num_classes = params.at("num_classes").get<int64_t>();
  std::shared_ptr<Dataset> train = load_split(root, "train", num_classes);
  if (!train)
    throw DataError(
        "dataset mnist: no train-images-idx3-ubyte[.gz] and train-labels-idx1-ubyte[.gz] "
        "in '" +
        root + "'; set data.dataset.root to an MNIST-style folder");
  std::tie(splits.train, splits.val) = split_train_val(train, params, context.seed);
  if (params.at("test").get<bool>()) splits.test = load_split(root, "t10k", num_classes);
  splits.num_classes = num_classes;
  return splits;
}

}  // namespace

void register_mnist(Registry<DatasetFactory>& registry) {
  nlohmann::json properties = {
      {"root",
       {{"type", {"string", "null"}},
        {"default", nullptr},
        {"x-runner-path", "folder"},
        {"description",
         "Folder with train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz] and optionally "
         "t10k-*. Relative to the file that sets it. null: Fashion-MNIST from Debian's "
         "dataset-fashion-mnist at /usr/share/datasets/fashion-mnist (logged)."}}},
      {"num_classes",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 10},
        {"description", "Labels must lie in [0, num_classes)."}}},
      {"test",
       {{"type", "boolean"},
        {"default", true},
        {"description", "Load the t10k-* files (when present) as the test split."}}},
  };
  properties.update(split_schema_properties(0));
  registry.add("mnist", make_mnist,
               {{"type", "object"},
                {"additionalProperties", false},
                {"description",
                 "IDX files of MNIST or Fashion-MNIST, gzip or raw, any IDX element type "
                 "(u8, i8, i16, i32, f32, f64); images keep their element type."},
                {"properties", properties}},
               "MNIST-style IDX files (default: Fashion-MNIST from /usr/share/datasets)");
}

}  // namespace runner::data
