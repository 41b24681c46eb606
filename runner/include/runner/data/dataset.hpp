#pragma once
// What a dataset plugin provides: indexed samples (an OpenCV image in its natural type, u8
// for digits, and an integer label) for the train, validation and test splits.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace runner::data {

/// One sample. `image` is HxW (1 channel) or HxWxC, any OpenCV depth; `label` is -1 when the
/// split has no labels (a Kaggle test set).
struct Sample {
  cv::Mat image;
  int64_t label = -1;
};

/// A read-only, thread-safe, indexed collection of samples.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of samples.
  virtual size_t size() const = 0;
  /// Sample `index` (requires index < size()). Must be safe to call from many threads at once.
  virtual Sample get(size_t index) const = 0;
  /// Whether samples carry labels.
  virtual bool has_labels() const { return true; }
  /// Label of sample `index` without decoding its image (for metrics and stratification).
  virtual int64_t label(size_t index) const { return get(index).label; }
  /// Human-readable origin, e.g. "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz".
  virtual std::string describe() const { return ""; }
};

/// Implemented beside Dataset by a dataset whose samples are files (image_folder): the checks
/// before training read their headers (data.check: header) and name the file of a sample that
/// cannot be used. A dataset that is not one is checked by decoding its samples. (A second base
/// class, not a virtual of Dataset: plugins built for ABI 2 keep working.)
class FileBackedDataset {
 public:
  virtual ~FileBackedDataset() = default;
  /// The file sample `index` is read from.
  virtual std::string file(size_t index) const = 0;
};

/// Implemented beside Dataset by a dataset whose samples may have several labels each
/// (image_csv's "cat dog" labels, for task: multilabel); label(index) is the first of them.
class MultiLabelDataset {
 public:
  virtual ~MultiLabelDataset() = default;
  /// Every label of sample `index`, ascending, without repeats.
  virtual std::vector<int64_t> labels_of(size_t index) const = 0;
};

/// Implemented beside Dataset by a dataset that stores its images encoded (files, shard
/// members): reading and decoding apart, for `runner bench-data`'s account of where the time
/// goes. decode(index, encoded(index)) is get(index)'s work.
class EncodedDataset {
 public:
  virtual ~EncodedDataset() = default;
  /// The stored bytes of sample `index`, as read from the storage.
  virtual std::string encoded(size_t index) const = 0;
  /// Sample `index` from those bytes: the image decoded, the label. `reduction` 2, 4 or 8: a
  /// JPEG decoded at that fraction of its size (libjpeg's scaled DCT, ceil(size / reduction);
  /// see scaled_source.hpp); other formats ignore it.
  virtual Sample decode(size_t index, const std::string& bytes, int reduction = 1) const = 0;
  /// Whether it really stores encoded images (a view asks its base).
  virtual bool stores_encoded() const { return true; }
};

/// `dataset`'s encoded form; null when its samples are not stored encoded (arrays in memory).
const EncodedDataset* encoded_form(const Dataset& dataset);

/// How a sharded dataset's indices lie in its shards, and the training stream's shuffle buffer.
struct ShardLayout {
  std::vector<size_t> sizes;  ///< samples of each shard: shard k holds the next sizes[k] indices
  size_t shuffle_buffer = 0;  ///< samples the training stream's buffer mixes; 0 or 1: none
};

/// Implemented beside Dataset by a dataset read from shards (webdataset's tar files): a training
/// epoch then reads shard by shard (data/shard_order.hpp) rather than in a global permutation.
class ShardedDataset {
 public:
  virtual ~ShardedDataset() = default;
  virtual ShardLayout shard_layout() const = 0;
};

/// Implemented beside Dataset by a dataset some of whose samples are only read as the run goes
/// (webdataset's remote shards counted by a shard index, fetched when first read): the checks
/// before training leave their labels and images alone, the dataset checks them as it reads.
class StreamedDataset {
 public:
  virtual ~StreamedDataset() = default;
  virtual bool streamed() const = 0;
};

/// Whether some of `dataset`'s samples are only read as the run goes. Views pass it on.
bool is_streamed(const Dataset& dataset);

/// `dataset`'s shards (no sizes when it is not sharded). Views pass the question on: the first
/// samples of data.limit keep the shards they cover, another subset has none.
ShardLayout shard_layout(const Dataset& dataset);

/// Every label of sample `index` of `dataset`: a MultiLabelDataset's, else {label(index)} ({}
/// for an unlabelled sample). Views pass the question on.
std::vector<int64_t> sample_labels(const Dataset& dataset, size_t index);

/// The file sample `index` of `dataset` comes from, when the dataset reads files and says so;
/// "" otherwise. Views (data.limit, validation subsets) pass the question on.
std::string sample_file(const Dataset& dataset, size_t index);

/// The three splits an experiment uses; `val` and `test` may be null when the data has none.
struct DatasetSplits {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> val;
  std::shared_ptr<Dataset> test;
  int64_t num_classes = 0;               ///< 0 when unknown (test-only data)
  std::vector<std::string> class_names;  ///< optional, index = label
};

/// What a dataset factory may need besides its own parameters.
struct DatasetContext {
  uint64_t seed = 0;  ///< the experiment's seed (for seeded splits)
  /// Relative paths in the config resolve against this; parameters marked "x-runner-path" in
  /// the plugin's schema arrive absolute (relative to the file that set them).
  std::string config_dir;
  std::optional<size_t> limit_train, limit_val, limit_test;  ///< applied by the core
};

/// A dataset restricted to its first `limit` samples (for `data.limit`).
std::shared_ptr<Dataset> limit_dataset(std::shared_ptr<Dataset> base, size_t limit);

/// A view of `indices` of `base`, in that order (for validation splits).
std::shared_ptr<Dataset> subset_dataset(std::shared_ptr<Dataset> base, std::vector<size_t> indices,
                                        std::string description);

}  // namespace runner::data
