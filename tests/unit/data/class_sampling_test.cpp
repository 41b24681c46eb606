// data.sampler balanced / weighted: the per-sample weights that give each class its share.

#include <gtest/gtest.h>

#include "data/class_sampling.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

// Labels only: the weights never decode an image.
class LabelsOnly : public Dataset {
 public:
  explicit LabelsOnly(std::vector<int64_t> labels) : labels_(std::move(labels)) {}
  size_t size() const override { return labels_.size(); }
  Sample get(size_t) const override { throw Error("the sampler decoded an image"); }
  int64_t label(size_t i) const override { return labels_[i]; }

 private:
  std::vector<int64_t> labels_;
};

// 300 / 60 / 20 samples of classes 0 / 1 / 2.
LabelsOnly imbalanced() {
  std::vector<int64_t> labels;
  for (auto [c, n] : {std::pair{0, 300}, {1, 60}, {2, 20}}) labels.insert(labels.end(), n, c);
  return LabelsOnly(labels);
}

std::vector<double> class_totals(const Dataset& d, const std::vector<double>& w, size_t classes) {
  std::vector<double> total(classes, 0.0);
  for (size_t i = 0; i < w.size(); ++i) total[static_cast<size_t>(d.label(i))] += w[i];
  return total;
}

TEST(ClassSampling, BalancedGivesEveryClassTheSameShare) {
  const LabelsOnly d = imbalanced();
  const auto w = class_sampling_weights(d, 3, {}, {});
  const auto total = class_totals(d, w, 3);
  EXPECT_NEAR(total[0], total[1], 1e-12);
  EXPECT_NEAR(total[1], total[2], 1e-12);
  EXPECT_NEAR(w[0] * 15, w[379], 1e-12);  // a sample of class 2 is 15 times as likely as class 0's
}

TEST(ClassSampling, WeightedSharesFollowTheClassWeights) {
  const LabelsOnly d = imbalanced();
  const auto total = class_totals(d, class_sampling_weights(d, 3, {1, 1, 2}, {}), 3);
  EXPECT_NEAR(total[2], 2 * total[0], 1e-12);
  EXPECT_NEAR(total[1], total[0], 1e-12);
}

TEST(ClassSampling, RefusesWeightsThatCannotBeDrawn) {
  const LabelsOnly d = imbalanced();
  EXPECT_THROW(class_sampling_weights(d, 3, {1, 1}, {}), ConfigError);  // one per class
  EXPECT_THROW(class_sampling_weights(d, 3, {0, 0, 0}, {}), ConfigError);
  // A class with a share but no sample, named.
  try {
    class_sampling_weights(d, 4, {1, 1, 1, 1}, {"cat", "dog", "fox", "owl"});
    FAIL() << "a class without samples was given a share";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'owl' (3)"), std::string::npos) << e.what();
  }
  // Balanced leaves a class without samples out instead.
  const auto total = class_totals(d, class_sampling_weights(d, 4, {}, {}), 4);
  EXPECT_EQ(total[3], 0.0);
  EXPECT_NEAR(total[0], total[2], 1e-12);
}

}  // namespace
}  // namespace runner::data
