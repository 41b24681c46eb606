#pragma once
// An ordered list of transforms applied to one sample with that sample's own Rng, so a sample's
// augmentation depends only on (seed, epoch, sample index).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/data/dataset.hpp"
#include "runner/data/transform.hpp"
#include "runner/registries.hpp"

namespace runner::data {

class Pipeline {
 public:
  Pipeline() = default;
  explicit Pipeline(std::vector<std::shared_ptr<const Transform>> transforms)
      : transforms_(std::move(transforms)), names_(transforms_.size()) {}

  /// Appends `transform` (applied after those already there); `name` is its registry name, for
  /// messages.
  void add(std::shared_ptr<const Transform> transform, std::string name = "") {
    transforms_.push_back(std::move(transform));
    names_.push_back(std::move(name));
  }

  /// Applies every transform in order to `sample.image`, drawing from Rng(seed, epoch, index).
  void apply(Sample& sample, uint64_t seed, uint64_t epoch, uint64_t index) const {
    Rng rng(seed, epoch, index);
    for (const auto& t : transforms_) t->apply(sample.image, rng);
  }

  size_t size() const { return transforms_.size(); }
  bool empty() const { return transforms_.empty(); }
  const std::vector<std::shared_ptr<const Transform>>& transforms() const { return transforms_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::shared_ptr<const Transform>> transforms_;
  std::vector<std::string> names_;
};

/// Builds a pipeline from entries `[{name: ..., <params>}, ...]` (params validated against
/// each transform's schema by the caller): looks `name` up in `registry`, fills in missing
/// schema defaults and passes the entry without `name` to its factory. Unknown names throw
/// ConfigError with close matches; null or [] gives an empty pipeline.
Pipeline build_pipeline(const nlohmann::json& entries, const Registry<TransformFactory>& registry);

}  // namespace runner::data
