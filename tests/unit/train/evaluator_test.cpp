// Evaluation: one row of logits per sample in dataset order whatever the batch size, the
// metrics computed from them, and the model back in training mode.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/world.hpp"
#include "run/build_run_parts.hpp"
#include "runner/error.hpp"
#include "small_experiment.hpp"
#include "train/evaluator.hpp"

namespace runner::train {
namespace {

TEST(Evaluator, LogitsComeInDatasetOrderWhateverTheBatch) {
  runner::testing::TempDir dir;
  RunParts parts =
      run::build_run_parts(runner::testing::load_small_experiment(dir), run::PartsRequest{});
  const RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  config::DataOptions data;
  data.num_workers = 0;
  BatchSource batches(rank, parts, data, 7);
  Evaluator in_threes(rank, parts, batches, 3, 50);  // 20 samples: the last batch is short
  Evaluator at_once(rank, parts, batches, 32, 50);
  const torch::Tensor a = in_threes.predict(parts.splits.val).logits;
  const torch::Tensor b = at_once.predict(parts.splits.val).logits;
  ASSERT_EQ(a.sizes(), (std::vector<int64_t>{20, 4}));
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-6));
  EXPECT_TRUE(parts.model->is_training()) << "back to training mode";
}

// A split whose sample `bad` cannot be read (a file damaged past its header).
class UnreadableAt : public runner::data::Dataset {
 public:
  UnreadableAt(std::shared_ptr<runner::data::Dataset> base, size_t bad) : base_(base), bad_(bad) {}
  size_t size() const override { return base_->size(); }
  runner::data::Sample get(size_t i) const override {
    if (i == bad_) throw runner::DataError("sample " + std::to_string(i) + " is damaged");
    return base_->get(i);
  }
  std::string describe() const override { return "unreadable-at"; }

 private:
  std::shared_ptr<runner::data::Dataset> base_;
  size_t bad_;
};

TEST(Evaluator, ASkippedSampleLeavesOnlyItsRowOutAndTheOthersKeepTheirIndex) {
  runner::testing::TempDir dir;
  RunParts parts =
      run::build_run_parts(runner::testing::load_small_experiment(dir), run::PartsRequest{});
  const RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  config::DataOptions data;
  data.num_workers = 0;
  BatchSource batches(rank, parts, data, 7);
  Evaluator evaluator(rank, parts, batches, 3, 50);
  const auto damaged = std::make_shared<UnreadableAt>(parts.splits.val, 5);
  const Predictions all = evaluator.predict(parts.splits.val);
  const Predictions skipped = evaluator.predict(damaged, /*skip_bad_images=*/true);
  ASSERT_EQ(skipped.indices.size(), 19u);
  for (size_t row = 0; row < skipped.indices.size(); ++row) {
    const int64_t index = skipped.indices[row];
    EXPECT_NE(index, 5);
    EXPECT_TRUE(
        torch::allclose(skipped.logits[static_cast<int64_t>(row)], all.logits[index], 1e-5, 1e-6))
        << "row " << row << " is sample " << index << "'s";
  }
  try {
    evaluator.predict(damaged, /*skip_bad_images=*/false);
    ADD_FAILURE() << "an unreadable sample without skip fails the pass";
  } catch (const runner::DataError& error) {
    EXPECT_NE(std::string(error.what()).find("sample 5 is damaged"), std::string::npos)
        << error.what();
  }
}

TEST(Evaluator, TheMetricsAreThoseOfTheLogits) {
  runner::testing::TempDir dir;
  RunParts parts =
      run::build_run_parts(runner::testing::load_small_experiment(dir), run::PartsRequest{});
  const RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  BatchSource batches(rank, parts, config::DataOptions{}, 7);
  Evaluator evaluator(rank, parts, batches, 8, 50);
  const Evaluation e = evaluator.evaluate();
  ASSERT_EQ(e.labels.size(), 20u);
  const torch::Tensor labels = torch::tensor(e.labels, torch::kInt64);
  const double accuracy = e.logits.argmax(1).eq(labels).to(torch::kDouble).mean().item<double>();
  EXPECT_DOUBLE_EQ(e.metrics.at("accuracy"), accuracy);
  EXPECT_NEAR(e.metrics.at("loss"),
              torch::nn::functional::cross_entropy(e.logits, labels).item<double>(), 1e-6);
  parts.splits.val = nullptr;
  EXPECT_TRUE(evaluator.evaluate().metrics.empty()) << "no validation split, no metrics";
}

}  // namespace
}  // namespace runner::train
