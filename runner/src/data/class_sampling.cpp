#include "data/class_sampling.hpp"

#include <fmt/format.h>

#include "runner/error.hpp"

namespace runner::data {

std::vector<double> class_sampling_weights(const Dataset& train, int64_t num_classes,
                                           const std::vector<double>& class_shares,
                                           const std::vector<std::string>& class_names) {
  const auto classes = static_cast<size_t>(num_classes);
  if (!class_shares.empty() && class_shares.size() != classes)
    throw ConfigError(
        fmt::format("{} weights for {} classes: give one per class, in the order "
                    "of the class indices",
                    class_shares.size(), classes));
  std::vector<size_t> count(classes, 0);
  std::vector<int64_t> labels(train.size());
  for (size_t i = 0; i < train.size(); ++i) {
    labels[i] = train.label(i);
    if (labels[i] < 0 || labels[i] >= num_classes)
      throw ConfigError(fmt::format("training sample {} has label {}, outside the {} classes", i,
                                    labels[i], classes));
    ++count[static_cast<size_t>(labels[i])];
  }
  std::vector<double> share(classes, 1.0);
  double total = 0;
  for (size_t c = 0; c < classes; ++c) {
    if (!class_shares.empty()) share[c] = class_shares[c];
    if (count[c] == 0) {
      if (!class_shares.empty() && share[c] > 0)
        throw ConfigError(fmt::format(
            "class {} has weight {} but no training sample: set its weight to 0",
            c < class_names.size() ? "'" + class_names[c] + "' (" + std::to_string(c) + ")"
                                   : std::to_string(c),
            share[c]));
      share[c] = 0;  // balanced: a class without samples takes no share
    }
    total += share[c];
  }
  if (!(total > 0))
    throw ConfigError("every class has weight 0: nothing could be drawn; give a class a weight");
  std::vector<double> weights(train.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    const auto c = static_cast<size_t>(labels[i]);
    weights[i] = share[c] / static_cast<double>(count[c]);
  }
  return weights;
}

std::shared_ptr<const std::vector<double>> training_sampling_weights(
    const std::string& sampler, const std::vector<double>& class_shares,
    const DatasetSplits& splits) {
  if (sampler == "shuffle" || !splits.train) return nullptr;
  return std::make_shared<const std::vector<double>>(class_sampling_weights(
      *splits.train, splits.num_classes,
      sampler == "weighted" ? class_shares : std::vector<double>{}, splits.class_names));
}

}  // namespace runner::data
