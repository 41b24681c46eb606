// The recorder: each report of the loop becomes its record in metrics.jsonl/csv, curves.png
// is drawn from metrics.jsonl alone, a resume drops the records it will write again, and the
// report and best_examples.json follow the run.

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "output/run_recorder.hpp"
#include "output/summary_writer.hpp"
#include "runner/trackers/metric_tags.hpp"
#include "temp_files.hpp"

namespace runner::output {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<json> records(const fs::path& run_dir) {
  std::vector<json> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

RecorderOptions options() { return {{"accuracy"}, {}}; }

WindowRecord window(int64_t step, double loss) {
  WindowRecord r;
  r.epoch = 1;
  r.step = step;
  r.loss = loss;
  r.lr = 0.1;
  return r;
}

EpochRecord epoch(int64_t number, int64_t step, std::map<std::string, double> validation) {
  EpochRecord r;
  r.epoch = number;
  r.epochs = 3;
  r.step = step;
  r.loss = 1.0;
  r.validation = std::move(validation);
  return r;
}

TEST(RunRecorder, EveryReportIsARecord) {
  runner::testing::TempDir dir;
  RunRecorder recorder(dir.path(), options());
  recorder.on_start(std::nullopt);
  recorder.on_window(window(1, 2.0));
  recorder.on_window(window(2, 1.5));
  recorder.on_epoch(epoch(1, 2, {{"loss", 1.2}, {"accuracy", 0.6}}));
  const auto r = records(dir.path());
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0]["kind"], "step");
  EXPECT_EQ(r[1]["loss"], 1.5);
  EXPECT_EQ(r[2]["kind"], "epoch");
  EXPECT_EQ(r[2]["val_accuracy"], 0.6);
  EXPECT_EQ(r[2]["val_loss"], 1.2);
  EXPECT_TRUE(r[2]["images_per_s"].is_null()) << "too short a pass to measure";
  EXPECT_TRUE(fs::exists(dir.path() / "metrics.csv"));
  std::ifstream report(dir.path() / "report.html");
  const std::string page((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(page.find("running: epoch 1 of 3 done"), std::string::npos);
}

TEST(RunRecorder, AResumeDropsWhatItWillWriteAgain) {
  runner::testing::TempDir dir;
  {
    RunRecorder recorder(dir.path(), options());
    for (int64_t step = 1; step <= 6; ++step) recorder.on_window(window(step, 1.0));
  }
  RunRecorder resumed(dir.path(), options());
  resumed.on_start(4);
  resumed.on_window(window(5, 0.5));
  const auto r = records(dir.path());
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[3]["step"], 4);
  EXPECT_EQ(r[4]["step"], 5);
  EXPECT_EQ(r[4]["loss"], 0.5) << "step 5 once, as the resumed run took it";
}

TEST(RunRecorder, ABestEpochGivesItsConfusionAndMistakes) {
  runner::testing::TempDir dir;
  RunRecorder recorder(dir.path(), options());
  BestRecord best;
  best.epoch = 1;
  best.step = 2;
  best.metric = "accuracy";
  best.value = 0.5;
  best.logits = torch::tensor({{2.0f, 0.0f}, {2.0f, 0.0f}});
  best.labels = {0, 1};
  best.class_names = {"a", "b"};
  recorder.on_best(best);  // no dataset given: the record only
  const auto r = records(dir.path());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["kind"], "best");
  EXPECT_EQ(r[0]["confusion_matrix"], json({{1, 0}, {1, 0}}));
  EXPECT_FALSE(fs::exists(dir.path() / "best_examples.json"));
}

TEST(RunRecorder, TheEndsReportSaysWhatTheSummarySays) {
  runner::testing::TempDir dir;
  ObserverChain chain;
  chain.add(std::make_unique<SummaryWriter>(dir.path(), json{{"world_size", 1}}));
  chain.add(std::make_unique<RunRecorder>(dir.path(), options()));
  StopRecord stop;
  stop.signal = "SIGTERM";
  stop.stopped_at = "epoch 1, batch 3, optimizer step 3";
  stop.resume_command = "runner run --resume X";
  chain.on_stop(stop);
  std::ifstream report(dir.path() / "report.html");
  const std::string page((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(page.find("interrupted by SIGTERM at epoch 1, batch 3"), std::string::npos);
}

// Trackers' tags say what a value is: an epoch's loss is its training loss, not val/loss.
TEST(MetricTag, NamesWhatAValueIs) {
  using trackers::metric_tag;
  EXPECT_EQ(metric_tag("step", "loss"), "train/loss");
  EXPECT_EQ(metric_tag("step", "peak_rss_mib"), "system/peak_rss_mib");
  EXPECT_EQ(metric_tag("epoch", "val_loss"), "val/loss");
  EXPECT_EQ(metric_tag("epoch", "val_accuracy"), "val/accuracy");
  EXPECT_EQ(metric_tag("epoch", "loss"), "train/epoch_loss");
  EXPECT_EQ(metric_tag("epoch", "images_per_s"), "train/epoch_images_per_s");
  EXPECT_EQ(metric_tag("epoch", "epoch"), "") << "the epoch number is the x";
}

}  // namespace
}  // namespace runner::output
