// The Trainer's loop reads the device once per metrics record, never per step in a long run:
// records come every min(log_every_steps, run steps / report_points) steps (report_points 200:
// at most ~200 extra reads, for a short run's report), so fit() over 3 times as many steps
// (same log window; report_points lowered to 2 so that both runs count as long) reads the device
// as often as the shorter run, apart from the extra windows. Counted with a RecordFunction observer
// (Tensor::item and friends), outside the fused optimizer kernels (on CPU they read their lr tensor
// with item(); CUDA reads it on the device).

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dist/world.hpp"
#include "engine/host_read_counter.hpp"
#include "engine/plugin_params.hpp"
#include "runner/data/dataset.hpp"
#include "runner/losses/loss.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "temp_files.hpp"
#include "train/trainer.hpp"

namespace runner::train {
namespace {

template <class Entry>
nlohmann::json params(const Entry& entry, nlohmann::json user) {
  return test::with_defaults(entry.schema, std::move(user));
}

// Host reads during fit() of one epoch of `train_size` synthetic images in batches of 8, a log
// window of 2 steps, no validation split (evaluation reads the gathered predictions).
int reads_in_fit(int train_size) {
  torch::manual_seed(0);
  const Registries& r = registries();
  TrainerParts parts;
  parts.world = dist::World::single();
  parts.model =
      r.models.at("small_cnn")
          .factory(params(r.models.at("small_cnn"), {{"in_chans", 1}, {"num_classes", 4}}));
  parts.optimizer =
      r.optimizers.at("adam").factory(params(r.optimizers.at("adam"), {}), *parts.model);
  parts.make_scheduler = [&](const optim::ScheduleContext& context) {
    return r.schedulers.at("cosine").factory(
        params(r.schedulers.at("cosine"), {{"warmup_steps", 2}}), context);
  };
  parts.loss = r.losses.at("cross_entropy").factory(params(r.losses.at("cross_entropy"), {}));
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
  options.train.best_metric = "loss";
  options.output.tensorboard = false;
  runner::testing::TempDir run_dir;
  Trainer trainer(std::move(parts), options, run_dir.path().string());
  test::HostReadCounter counter;
  trainer.fit();
  EXPECT_EQ(trainer.optimizer_steps(), train_size / 8);
  return test::HostReadCounter::reads();
}

TEST(TrainerHostReads, NoReadPerStepOnlyPerLogWindow) {
  const int short_run = reads_in_fit(32);  // 4 steps: 2 windows
  const int long_run = reads_in_fit(96);   // 12 steps: 6 windows
  // Each window may read (on CUDA its one copy to the host; on CPU that copy is no read at
  // all), nothing else may grow with the steps.
  EXPECT_LE(long_run - short_run, 6 - 2)
      << short_run << " reads in 4 steps, " << long_run << " in 12";
}

}  // namespace
}  // namespace runner::train
