#include "array_dataset.hpp"

#include <cmath>
#include <cstring>
#include <numeric>

#include "runner/data/rng.hpp"
#include "runner/error.hpp"

namespace runner::data {

ArrayDataset::ArrayDataset(std::shared_ptr<const std::vector<uint8_t>> images, size_t count,
                           int height, int width, int channels, int depth,
                           std::vector<int64_t> labels, std::string description)
    : images_(std::move(images)),
      count_(count),
      type_(CV_MAKETYPE(depth, channels)),
      height_(height),
      width_(width),
      sample_bytes_(static_cast<size_t>(height) * width *
                    CV_ELEM_SIZE(CV_MAKETYPE(depth, channels))),
      labels_(std::move(labels)),
      description_(std::move(description)) {
  if (images_->size() < count_ * sample_bytes_)
    throw DataError(description_ + ": image buffer smaller than its shape (internal error)");
}

Sample ArrayDataset::get(size_t index) const {
  if (index >= count_)
    throw DataError(description_ + ": sample " + std::to_string(index) + " out of range (size " +
                    std::to_string(count_) + ")");
  Sample s;
  // A copy, because transforms may work in place on the sample's pixels.
  s.image.create(height_, width_, type_);
  std::memcpy(s.image.data, images_->data() + index * sample_bytes_, sample_bytes_);
  s.label = labels_.empty() ? -1 : labels_[index];
  return s;
}

std::string resolve_path(const std::string& path, const std::string& config_dir) {
  if (path.empty() || path.front() == '/' || config_dir.empty()) return path;
  return config_dir + (config_dir.back() == '/' ? "" : "/") + path;
}

void check_labels(const std::vector<int64_t>& labels, int64_t num_classes, const std::string& file,
                  const std::string& record_name, const std::vector<size_t>& records) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= 0 && labels[i] < num_classes) continue;
    const size_t where = records.empty() ? i : records[i];
    throw DataError(file + ": " + record_name + " " + std::to_string(where) + ": label " +
                    std::to_string(labels[i]) + " is outside [0, " + std::to_string(num_classes) +
                    "); fix the data or set num_classes");
  }
}

nlohmann::json split_schema_properties(double default_val_split) {
  return {
      {"val_split",
       {{"type", "number"},
        {"minimum", 0},
        {"default", default_val_split},
        {"description",
         "Validation held out of the training file. 0: none. A fraction in (0,1): that share of "
         "the training rows (rounded down) goes to validation. An integer N >= 1: the first N "
         "rows train and the rest validate (the original script's 40000)."}}},
      {"split_shuffle",
       {{"type", "boolean"},
        {"default", false},
        {"description",
         "Permute the training rows with split_seed before splitting (else the split keeps file "
         "order: train first, validation last)."}}},
      {"split_seed",
       {{"type", {"integer", "null"}},
        {"default", nullptr},
        {"description", "Seed of the split permutation; null uses the experiment's seed."}}},
  };
}

std::pair<std::shared_ptr<Dataset>, std::shared_ptr<Dataset>> split_train_val(
    std::shared_ptr<Dataset> full, const nlohmann::json& params, uint64_t experiment_seed) {
  const double split = params.value("val_split", 0.0);
  if (split <= 0) return {full, nullptr};
  const size_t n = full->size();
  size_t train_count = 0;
  if (split < 1) {
    train_count = n - static_cast<size_t>(std::floor(split * static_cast<double>(n)));
  } else {
    if (split != std::floor(split))
      throw ConfigError("val_split " + std::to_string(split) +
                        " must be a fraction below 1 or a whole number of training rows");
    train_count = static_cast<size_t>(split);
    if (train_count > n)
      throw ConfigError("val_split asks for the first " + std::to_string(train_count) +
                        " rows as training, but " + full->describe() + " has only " +
                        std::to_string(n) + "; lower val_split");
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (params.value("split_shuffle", false)) {
    const nlohmann::json& s = params.contains("split_seed") ? params.at("split_seed") : nullptr;
    Rng rng(s.is_null() ? experiment_seed : s.get<uint64_t>(), 0, 0x53504C4954ULL);
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.uniform_int(0, i - 1)]);
  }
  std::vector<size_t> train(order.begin(), order.begin() + train_count);
  std::vector<size_t> val(order.begin() + train_count, order.end());
  const std::string base = full->describe();
  auto train_set = subset_dataset(full, std::move(train),
                                  base + " (train: " + std::to_string(train_count) + " rows)");
  auto val_set = subset_dataset(
      full, std::move(val), base + " (validation: " + std::to_string(n - train_count) + " rows)");
  return {train_set, val_set};
}

}  // namespace runner::data
