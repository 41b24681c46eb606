#include <stdexcept>

#include "runner/data/dataset.hpp"

namespace runner::data {
namespace {

class SubsetDataset : public Dataset, public FileBackedDataset, public MultiLabelDataset {
 public:
  SubsetDataset(std::shared_ptr<Dataset> base, std::vector<size_t> indices, std::string description)
      : base_(std::move(base)), indices_(std::move(indices)), description_(std::move(description)) {
    for (size_t i : indices_)
      if (i >= base_->size()) throw std::out_of_range("subset index beyond the dataset");
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

 private:
  std::shared_ptr<Dataset> base_;
  std::vector<size_t> indices_;
  std::string description_;
};

}  // namespace

std::string sample_file(const Dataset& dataset, size_t index) {
  const auto* files = dynamic_cast<const FileBackedDataset*>(&dataset);
  return files ? files->file(index) : std::string();
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
