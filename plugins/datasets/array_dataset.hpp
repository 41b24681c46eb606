#pragma once
// Shared pieces of the dataset plugins: an in-memory dataset over one decoded array of
// same-shaped images, label checks, path resolution and the train/validation split.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "runner/data/dataset.hpp"

namespace runner::data {

/// Images stored back to back in one buffer (decoded once); get() returns a copy of one.
class ArrayDataset : public Dataset {
 public:
  /// `images` holds count x height x width x channels elements of OpenCV depth `depth`;
  /// `labels` is empty (unlabelled) or has `count` entries.
  ArrayDataset(std::shared_ptr<const std::vector<uint8_t>> images, size_t count, int height,
               int width, int channels, int depth, std::vector<int64_t> labels,
               std::string description);
  size_t size() const override { return count_; }
  Sample get(size_t index) const override;
  bool has_labels() const override { return !labels_.empty(); }
  int64_t label(size_t index) const override { return labels_.empty() ? -1 : labels_.at(index); }
  std::string describe() const override { return description_; }

 private:
  std::shared_ptr<const std::vector<uint8_t>> images_;
  size_t count_;
  int type_;
  int height_, width_;
  size_t sample_bytes_;
  std::vector<int64_t> labels_;
  std::string description_;
};

/// `path` unchanged when absolute, else relative to `config_dir` (when that is not empty).
std::string resolve_path(const std::string& path, const std::string& config_dir);

/// Throws runner::DataError naming `file` and `record_name` + index when a label is outside
/// [0, num_classes). `records` maps an index to what a user sees (a line number), may be empty.
void check_labels(const std::vector<int64_t>& labels, int64_t num_classes, const std::string& file,
                  const std::string& record_name, const std::vector<size_t>& records = {});

/// Splits `full` into (train, val) by the `val_split` / `split_shuffle` / `split_seed` params
/// (see split_schema()); val is null when val_split is 0.
std::pair<std::shared_ptr<Dataset>, std::shared_ptr<Dataset>> split_train_val(
    std::shared_ptr<Dataset> full, const nlohmann::json& params, uint64_t experiment_seed);

/// Schema properties of the split params, to merge into a dataset's schema.
nlohmann::json split_schema_properties(double default_val_split);

}  // namespace runner::data
