// The core sections as typed options: the schema's defaults arrive, a user's values and --set
// overrides arrive typed, and a document that skipped validation fails naming the key.

#include <gtest/gtest.h>

#include "config/experiment.hpp"
#include "config/experiment_options.hpp"
#include "temp_files.hpp"
#include "test_plugins.hpp"

namespace runner::config {
namespace {

class ExperimentOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override { runner::testing::register_config_test_plugins(); }
  ExperimentOptions load(const std::vector<std::string>& overrides = {}) {
    const std::string path = dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml());
    return read_experiment_options(load_experiment(path, overrides).doc);
  }
  runner::testing::TempDir dir_;
};

TEST_F(ExperimentOptionsTest, TheSchemasDefaultsArrive) {
  const ExperimentOptions o = load();
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.precision, Precision::kFp32);
  EXPECT_EQ(o.launch.num_processes, 1);
  EXPECT_EQ(o.launch.device, "auto");
  EXPECT_EQ(o.launch.master_port, 0);
  EXPECT_EQ(o.data.num_workers, 2u);
  EXPECT_EQ(o.data.prefetch_batches, 4u);
  EXPECT_FALSE(o.data.limit_train.has_value());
  EXPECT_EQ(o.train.batch_size, 32);
  EXPECT_FALSE(o.train.eval_batch_size.has_value());
  EXPECT_FALSE(o.train.max_steps.has_value());
  EXPECT_EQ(o.train.log_every_steps, 50);
  EXPECT_EQ(o.train.best.mode, "auto");
  EXPECT_TRUE(o.predict.enabled);
  EXPECT_EQ(o.predict.format, "kaggle");
  EXPECT_EQ(o.output.root, "runs");
  EXPECT_FALSE(o.output.run_dir.has_value());
}

TEST_F(ExperimentOptionsTest, ValuesAndOverridesArriveTyped) {
  const ExperimentOptions o =
      load({"precision=bf16", "train.batch_size=auto", "train.max_steps=7", "data.limit.val=20",
            "launch.gpu_ids=[1,0]", "train.clip_grad_norm=0.5", "output.run_dir=here"});
  EXPECT_EQ(o.precision, Precision::kBf16);
  EXPECT_FALSE(o.train.batch_size.has_value()) << "auto: found at start";
  EXPECT_EQ(o.train.max_steps, 7);
  EXPECT_EQ(o.data.limit_val, 20);
  EXPECT_EQ(o.launch.gpu_ids, (std::vector<int>{1, 0}));
  EXPECT_EQ(o.train.clip_grad_norm, 0.5);
  ASSERT_TRUE(o.output.run_dir.has_value());
}

TEST_F(ExperimentOptionsTest, AnUnvalidatedDocumentFailsNamingTheKey) {
  const std::string path = dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml());
  auto doc = load_experiment(path).doc;
  doc["train"]["epochs"] = "many";
  try {
    read_experiment_options(doc);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("train.epochs: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(parse_precision("fp8"), ConfigError);
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
}

}  // namespace
}  // namespace runner::config
