// The training loop: what it reports to the run's observer and when (windows, epochs, bests,
// in order), how it ends (early stopping, train.max_steps), that a resumed loop continues as if
// never stopped, and that it reads the device once per metrics record, never per step.

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/world.hpp"
#include "host_read_counter.hpp"
#include "plugin_params.hpp"
#include "run/build_run_parts.hpp"
#include "runner/data/dataset.hpp"
#include "runner/losses/loss.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "small_experiment.hpp"
#include "temp_files.hpp"
#include "train/training_loop.hpp"

namespace runner::train {
namespace {

template <class Entry>
nlohmann::json params(const Entry& entry, nlohmann::json user) {
  return test::with_defaults(entry.schema, std::move(user));
}

// Host reads during fit() of one epoch of `train_size` synthetic images in batches of 8, a log
// window of 2 steps, no validation split (evaluation reads the gathered predictions).
// `recipe`: with train.ema and train.mixup (mixup and cutmix per element) on.
int reads_in_fit(int train_size, bool recipe = false) {
  torch::manual_seed(0);
  const Registries& r = registries();
  RunParts parts;
  parts.model =
      r.models.at("small_cnn")
          .factory(params(r.models.at("small_cnn"), {{"in_chans", 1}, {"num_classes", 4}}));
  parts.optimizer =
      r.optimizers.at("adam").factory(params(r.optimizers.at("adam"), {}), *parts.model);
  parts.make_scheduler = [&r](const optim::ScheduleContext& context) {
    return r.schedulers.at("cosine").factory(
        params(r.schedulers.at("cosine"), {{"warmup_steps", 2}}), context);
  };
  parts.loss = r.losses.at("cross_entropy").factory(params(r.losses.at("cross_entropy"), {}));
  parts.about.model_options = models::ModelOptions{"small_cnn", 1, 4, 0.0};
  parts.splits = r.datasets.at("synthetic")
                     .factory(params(r.datasets.at("synthetic"), {{"train_size", train_size},
                                                                  {"val_size", 0},
                                                                  {"test_size", 0},
                                                                  {"height", 16},
                                                                  {"width", 16},
                                                                  {"num_classes", 4}}),
                              data::DatasetContext{});
  parts.train_pipeline.add(
      r.transforms.at("normalize")
          .factory(params(r.transforms.at("normalize"), {{"mean", 0.5}, {"std", 0.25}})));
  config::ExperimentOptions options;
  options.name = "reads";
  options.data.num_workers = 0;
  options.train.batch_size = 8;
  options.train.log_every_steps = 2;
  options.train.report_points = 2;
  options.train.best.metric = "loss";
  options.output.tensorboard = false;
  if (recipe) {
    options.train.ema.enabled = true;
    options.train.mixup.mixup_alpha = 0.8;
    options.train.mixup.cutmix_alpha = 1.0;
    options.train.mixup.mode = "elem";
  }
  runner::testing::TempDir run_dir;
  const RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  BatchSource batches(rank, parts, options.data, options.seed);
  Evaluator evaluator(rank, parts, batches, 16, options.train.log_every_steps);
  output::RunObserver nothing;
  TrainingLoop loop(rank, parts, options, batches, evaluator, nothing, run_dir.path().string());
  test::HostReadCounter counter;
  loop.fit();
  EXPECT_EQ(loop.position().optimizer_steps, train_size / 8);
  return test::HostReadCounter::reads();
}

// Everything the loop reports, in order.
struct Recording : output::RunObserver {
  std::vector<std::string> events;
  std::vector<output::WindowRecord> windows;
  std::vector<output::EpochRecord> epochs;
  std::vector<output::BestRecord> bests;
  std::optional<int64_t> resumed_at;
  std::vector<output::TrainingReport> reports;
  void on_training(const output::TrainingReport& r) override {
    events.push_back("training");
    reports.push_back(r);
  }
  void on_start(std::optional<int64_t> at) override {
    events.push_back("start");
    resumed_at = at;
  }
  void on_window(const output::WindowRecord& r) override {
    events.push_back("window");
    windows.push_back(r);
  }
  void on_epoch(const output::EpochRecord& r) override {
    events.push_back("epoch");
    epochs.push_back(r);
  }
  void on_best(const output::BestRecord& r) override {
    events.push_back("best");
    bests.push_back(r);
  }
};

// A loop over the small experiment (64 images in batches of 8: 8 steps an epoch).
struct SmallRun {
  runner::testing::TempDir dir;
  config::Experiment experiment;
  RunParts parts;
  RankContext rank{dist::World::single(), torch::kCPU, config::Precision::kFp32};
  std::unique_ptr<BatchSource> batches;
  std::unique_ptr<Evaluator> evaluator;
  Recording recording;
  std::unique_ptr<TrainingLoop> loop;

  explicit SmallRun(const std::vector<std::string>& overrides,
                    const std::string& checkpoints = "") {
    experiment = runner::testing::load_small_experiment(dir, overrides);
    parts = run::build_run_parts(experiment, run::PartsRequest{});
    const config::ExperimentOptions& o = experiment.options;
    batches = std::make_unique<BatchSource>(rank, parts, o.data, o.seed);
    evaluator = std::make_unique<Evaluator>(rank, parts, *batches, 16, 50);
    loop = std::make_unique<TrainingLoop>(
        rank, parts, o, *batches, *evaluator, recording,
        checkpoints.empty() ? (dir.path() / "checkpoints").string() : checkpoints);
  }
};

TEST(TrainingLoop, TheObserverHearsWindowsEpochsAndBestsInOrder) {
  SmallRun run({});
  const FitResult result = run.loop->fit();
  EXPECT_EQ(result.stopped_by, 0);
  EXPECT_EQ(run.recording.events.front(), "start");
  EXPECT_FALSE(run.recording.resumed_at.has_value());
  // A 16-step run records every step (report_points); epochs end at steps 8 and 16.
  ASSERT_EQ(run.recording.windows.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(run.recording.windows[i].step, int64_t(i) + 1);
  ASSERT_EQ(run.recording.epochs.size(), 2u);
  EXPECT_EQ(run.recording.epochs[0].step, 8);
  EXPECT_EQ(run.recording.epochs[1].epoch, 2);
  EXPECT_EQ(run.recording.epochs[1].epochs, 2);
  EXPECT_EQ(run.recording.epochs[0].validation.count("accuracy"), 1u);
  EXPECT_EQ(result.last, run.recording.epochs[1].validation);
  // The first epoch is always the best so far; its record follows its epoch and holds the
  // validation predictions the report shows.
  ASSERT_FALSE(run.recording.bests.empty());
  const auto epoch_at =
      std::find(run.recording.events.begin(), run.recording.events.end(), "epoch");
  EXPECT_EQ(*(epoch_at + 1), "best");
  EXPECT_EQ(run.recording.bests[0].epoch, 1);
  EXPECT_EQ(run.recording.bests[0].logits.size(0), 20);
  EXPECT_EQ(run.recording.bests[0].labels.size(), 20u);
  EXPECT_TRUE(std::filesystem::exists(run.dir.path() / "checkpoints" / "best.pt"));
  EXPECT_TRUE(std::filesystem::exists(run.dir.path() / "checkpoints" / "last.pt"));
  ASSERT_EQ(run.recording.reports.size(), 1u) << "the training's account, once, as fit() ends";
  EXPECT_EQ(run.recording.events.back(), "training");
  EXPECT_EQ(run.recording.reports[0].best_epoch, run.recording.bests.back().epoch);
  EXPECT_EQ(run.recording.reports[0].best_metric, "accuracy");
  EXPECT_EQ(run.recording.reports[0].samples_train, 64);
  EXPECT_GT(run.recording.reports[0].first_step_unix_time, 0);
}

TEST(TrainingLoop, EarlyStoppingEndsTheRunWhenPatienceRunsOut) {
  // No accuracy beats another by 2: the first epoch stays the best, the second has none.
  SmallRun run(
      {"train.epochs=10", "train.early_stopping.patience=1", "train.early_stopping.min_delta=2"});
  run.loop->fit();
  EXPECT_EQ(run.recording.epochs.size(), 2u);
  EXPECT_EQ(run.loop->position().epoch, 2);
  ASSERT_EQ(run.recording.reports.size(), 1u);
  EXPECT_EQ(run.recording.reports[0].best_epoch, 1);
  ASSERT_TRUE(run.recording.reports[0].early_stopped.has_value());
  EXPECT_EQ(run.recording.reports[0].early_stopped->epoch, 2);
}

TEST(TrainingLoop, MaxStepsStopsAtThatStepMidEpoch) {
  SmallRun run({"train.max_steps=5"});
  run.loop->fit();
  EXPECT_EQ(run.loop->position().optimizer_steps, 5);
  ASSERT_EQ(run.recording.epochs.size(), 1u);
  EXPECT_TRUE(run.recording.epochs[0].partial);
  EXPECT_TRUE(run.recording.bests.empty()) << "a partial epoch does not compete for best.pt";
}

TEST(TrainingLoop, AResumedLoopGoesOnAsIfNeverStopped) {
  SmallRun straight({});
  straight.loop->fit();

  runner::testing::TempDir shared;
  const std::string checkpoints = (shared.path() / "checkpoints").string();
  SmallRun first({"train.epochs=1"}, checkpoints);
  first.loop->fit();
  SmallRun second({}, checkpoints);
  second.loop->resume();
  second.loop->fit();
  EXPECT_EQ(second.recording.resumed_at, 8) << "the recorder drops what follows step 8";
  ASSERT_EQ(second.recording.epochs.size(), 1u) << "only the second epoch runs";
  EXPECT_EQ(second.recording.windows.front().step, 9);
  EXPECT_EQ(second.loop->position().optimizer_steps, 16);
  const auto a = straight.parts.model->parameters(), b = second.parts.model->parameters();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-7)) << "parameter " << i;
  EXPECT_DOUBLE_EQ(second.recording.epochs[0].validation.at("loss"),
                   straight.recording.epochs[1].validation.at("loss"));
}

// The loop reads the device once per metrics record: records come every min(log_every_steps,
// run steps / report_points) steps (report_points 200: at most ~200 extra reads, for a short
// run's report), so fit() over 3 times as many steps (same log window; report_points lowered to
// 2 so that both runs count as long) reads the device as often as the shorter run, apart from
// the extra windows. Counted with a RecordFunction observer (Tensor::item and friends), outside
// the fused optimizer kernels (on CPU they read their lr tensor with item(); CUDA reads it on
// the device).
TEST(TrainingLoop, NoReadPerStepOnlyPerLogWindow) {
  const int short_run = reads_in_fit(32);  // 4 steps: 2 windows
  const int long_run = reads_in_fit(96);   // 12 steps: 6 windows
  // Each window may read (on CUDA its one copy to the host; on CPU that copy is no read at
  // all), nothing else may grow with the steps.
  EXPECT_LE(long_run - short_run, 6 - 2)
      << short_run << " reads in 4 steps, " << long_run << " in 12";
}

TEST(TrainingLoop, EmaAndMixupAddNoReadPerStep) {
  // The average's decay is computed on the device and the mix's draws on the host: neither
  // reads a device value per step.
  const int short_run = reads_in_fit(32, true);
  const int long_run = reads_in_fit(96, true);
  EXPECT_LE(long_run - short_run, 6 - 2)
      << short_run << " reads in 4 steps, " << long_run << " in 12, with train.ema and mixup";
  EXPECT_LE(long_run - reads_in_fit(96), 2) << "the recipe reads more than the plain step";
}

}  // namespace
}  // namespace runner::train
