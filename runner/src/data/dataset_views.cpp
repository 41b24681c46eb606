#include <algorithm>
#include <stdexcept>

#include "runner/data/dataset.hpp"

namespace runner::data {
namespace {

class SubsetDataset : public Dataset,
                      public FileBackedDataset,
                      public MultiLabelDataset,
                      public ShardedDataset,
                      public EncodedDataset,
                      public StreamedDataset {
 public:
  SubsetDataset(std::shared_ptr<Dataset> base, std::vector<size_t> indices, std::string description)
      : base_(std::move(base)), indices_(std::move(indices)), description_(std::move(description)) {
    for (size_t i = 0; i < indices_.size(); ++i) {
      if (indices_[i] >= base_->size()) throw std::out_of_range("subset index beyond the dataset");
      prefix_ = prefix_ && indices_[i] == i;
    }
  }
  size_t size() const override { return indices_.size(); }
  Sample get(size_t index) const override { return base_->get(indices_.at(index)); }
  bool has_labels() const override { return base_->has_labels(); }
  int64_t label(size_t index) const override { return base_->label(indices_.at(index)); }
  std::string describe() const override { return description_; }
  std::string file(size_t index) const override { return sample_file(*base_, indices_.at(index)); }
  std::vector<int64_t> labels_of(size_t index) const override {
    return sample_labels(*base_, indices_.at(index));
  }
  std::string encoded(size_t index) const override {
    return encoded_form(*base_)->encoded(indices_.at(index));
  }
  Sample decode(size_t index, const std::string& bytes, int reduction) const override {
    return encoded_form(*base_)->decode(indices_.at(index), bytes, reduction);
  }
  bool stores_encoded() const override { return encoded_form(*base_) != nullptr; }
  bool streamed() const override { return is_streamed(*base_); }
  // The first samples (data.limit) cover the base's first shards, the last one cut.
  ShardLayout shard_layout() const override {
    if (!prefix_) return {};
    ShardLayout base = runner::data::shard_layout(*base_), cut;
    cut.shuffle_buffer = base.shuffle_buffer;
    size_t left = indices_.size();
    for (size_t k = 0; k < base.sizes.size() && left > 0; ++k) {
      cut.sizes.push_back(std::min(left, base.sizes[k]));
      left -= cut.sizes.back();
    }
    return cut;
  }

 private:
  std::shared_ptr<Dataset> base_;
  std::vector<size_t> indices_;
  std::string description_;
  bool prefix_ = true;  ///< indices 0, 1, 2, ...: the base's first samples
};

}  // namespace

std::string sample_file(const Dataset& dataset, size_t index) {
  const auto* files = dynamic_cast<const FileBackedDataset*>(&dataset);
  return files ? files->file(index) : std::string();
}

const EncodedDataset* encoded_form(const Dataset& dataset) {
  const auto* encoded = dynamic_cast<const EncodedDataset*>(&dataset);
  return encoded && encoded->stores_encoded() ? encoded : nullptr;
}

ShardLayout shard_layout(const Dataset& dataset) {
  const auto* sharded = dynamic_cast<const ShardedDataset*>(&dataset);
  return sharded ? sharded->shard_layout() : ShardLayout{};
}

bool is_streamed(const Dataset& dataset) {
  const auto* streamed = dynamic_cast<const StreamedDataset*>(&dataset);
  return streamed && streamed->streamed();
}

std::vector<int64_t> sample_labels(const Dataset& dataset, size_t index) {
  if (const auto* several = dynamic_cast<const MultiLabelDataset*>(&dataset))
    return several->labels_of(index);
  const int64_t label = dataset.label(index);
  return label < 0 ? std::vector<int64_t>{} : std::vector<int64_t>{label};
}

std::shared_ptr<Dataset> subset_dataset(std::shared_ptr<Dataset> base, std::vector<size_t> indices,
                                        std::string description) {
  return std::make_shared<SubsetDataset>(std::move(base), std::move(indices),
                                         std::move(description));
}

std::shared_ptr<Dataset> limit_dataset(std::shared_ptr<Dataset> base, size_t limit) {
  if (!base || limit >= base->size()) return base;
  std::vector<size_t> indices(limit);
  for (size_t i = 0; i < limit; ++i) indices[i] = i;
  const std::string description =
      base->describe() + " (first " + std::to_string(limit) + " samples)";
  return subset_dataset(std::move(base), std::move(indices), description);
}

}  // namespace runner::data
