// Dataset `kaggle_csv`: the Kaggle digit-recognizer layout (train.csv with label,pixel0..,
// test.csv with pixels only).

#include <filesystem>
#include <tuple>

#include "array_dataset.hpp"
#include "csv_reader.hpp"
#include "datasets.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

std::shared_ptr<Dataset> load_csv(const std::string& path, const nlohmann::json& params,
                                  bool labels_required) {
  const int height = params.at("height").get<int>();
  const int width = params.at("width").get<int>();
  const int channels = params.at("channels").get<int>();
  PixelTable table = read_pixel_csv(path);
  const size_t expected = static_cast<size_t>(height) * width * channels;
  if (table.pixels_per_row != expected)
    throw DataError(path + ":1: the header has " + std::to_string(table.pixels_per_row) +
                    " pixel columns, but height x width x channels = " + std::to_string(expected) +
                    "; set height/width/channels to match the file");
  if (labels_required && !table.has_labels)
    throw DataError(path + ":1: the first column must be 'label' in a training file");
  if (table.has_labels)
    check_labels(table.labels, params.at("num_classes").get<int64_t>(), path, "line",
                 table.line_numbers);
  auto buffer = std::make_shared<const std::vector<uint8_t>>(std::move(table.pixels));
  return std::make_shared<ArrayDataset>(buffer, table.rows, height, width, channels, CV_8U,
                                        std::move(table.labels), path);
}

DatasetSplits make_kaggle_csv(const nlohmann::json& params, const DatasetContext& context) {
  const std::string root = resolve_path(params.at("root").get<std::string>(), context.config_dir);
  DatasetSplits splits;
  const std::string train_path = root + "/" + params.at("train_file").get<std::string>();
  if (!std::filesystem::is_regular_file(train_path))
    throw DataError("dataset kaggle_csv: '" + train_path +
                    "' does not exist; set data.dataset.root to the folder holding train.csv");
  std::tie(splits.train, splits.val) =
      split_train_val(load_csv(train_path, params, true), params, context.seed);
  if (!params.at("test_file").is_null()) {
    const std::string test_path = root + "/" + params.at("test_file").get<std::string>();
    if (std::filesystem::is_regular_file(test_path))
      splits.test = load_csv(test_path, params, false);
  }
  splits.num_classes = params.at("num_classes").get<int64_t>();
  return splits;
}

}  // namespace

void register_kaggle_csv(Registry<DatasetFactory>& registry) {
  nlohmann::json properties = {
      {"root",
       {{"type", "string"},
        {"x-runner-path", "folder"},
        {"description",
         "Folder with the CSV files; a relative path is relative to the file that sets it."}}},
      {"train_file",
       {{"type", "string"},
        {"default", "train.csv"},
        {"description",
         "Header 'label,pixel0,...', then one image per line: the label, then "
         "height*width*channels integer pixels 0..255 (row-major, channels last)."}}},
      {"test_file",
       {{"type", {"string", "null"}},
        {"default", "test.csv"},
        {"description",
         "Pixels only (unlabelled, label -1) or with a leading label column; "
         "skipped when absent or null. Predictions follow its row order "
         "(sample_submission.csv: ImageId = row + 1, Label)."}}},
      {"height",
       {{"type", "integer"}, {"minimum", 1}, {"default", 28}, {"description", "Image height."}}},
      {"width",
       {{"type", "integer"}, {"minimum", 1}, {"default", 28}, {"description", "Image width."}}},
      {"channels",
       {{"type", "integer"},
        {"minimum", 1},
        {"maximum", 4},
        {"default", 1},
        {"description", "Channels per pixel (interleaved in the row)."}}},
      {"num_classes",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 10},
        {"description", "Labels must lie in [0, num_classes)."}}},
  };
  properties.update(split_schema_properties(0));
  registry.add("kaggle_csv", make_kaggle_csv,
               {{"type", "object"},
                {"additionalProperties", false},
                {"required", {"root"}},
                {"description",
                 "Kaggle digit-recognizer CSVs; the original script's split is "
                 "val_split: 40000 (first 40000 rows train, the rest validate)."},
                {"properties", properties}},
               "Kaggle digit-recognizer CSV files (train.csv, test.csv)");
}

}  // namespace runner::data
