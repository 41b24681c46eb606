// summary.json says how the run ended: its base fields always, the status and what the end
// adds, written whole each time (a reader never sees half a file).

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/run_summary.hpp"
#include "output/summary_writer.hpp"
#include "temp_files.hpp"

namespace runner::output {
namespace {

using nlohmann::json;

TEST(SummaryWriter, AnInterruptSaysWhereAndHowToGoOn) {
  runner::testing::TempDir dir;
  SummaryWriter writer(dir.path(), {{"run_dir", "R"}, {"world_size", 2}});
  StopRecord stop;
  stop.signal = "SIGINT";
  stop.stopped_at = "epoch 2, batch 5, optimizer step 13";
  stop.resume_command = "runner run --resume R";
  stop.optimizer_steps = 13;
  stop.seconds = 4.5;
  writer.on_stop(stop);
  const json s = read_summary(dir.path());
  EXPECT_EQ(s["status"], "interrupted");
  EXPECT_EQ(s["world_size"], 2) << "the base fields stay";
  EXPECT_EQ(s["signal"], "SIGINT");
  EXPECT_EQ(s["optimizer_steps"], 13);
  EXPECT_EQ(s["resume_command"], "runner run --resume R");
  EXPECT_FALSE(summary_says_finished(s));
  EXPECT_EQ(run_status_text(s),
            "interrupted by SIGINT at epoch 2, batch 5, optimizer step 13: continue with runner "
            "run --resume R");
}

TEST(SummaryWriter, TheEndsFieldsJoinTheBase) {
  runner::testing::TempDir dir;
  SummaryWriter writer(dir.path(), {{"batch_size", 8}});
  writer.on_end({"finished", {{"best_metrics", {{"accuracy", 0.9}}}}, 20, 3.0});
  json s = read_summary(dir.path());
  EXPECT_TRUE(summary_says_finished(s));
  EXPECT_EQ(s["batch_size"], 8);
  EXPECT_EQ(s["best_metrics"]["accuracy"], 0.9);
  EXPECT_EQ(s["seconds"], 3.0);
  writer.on_end({"failed", {{"error", "disk full"}}, 20, 3.5});
  s = read_summary(dir.path());
  EXPECT_EQ(run_status_text(s), "failed: disk full");
}

// What runner's launcher saw end a rank other than 0 becomes the run's account; a finished
// run's stays.
TEST(RunSummary, ARankFailureIsRecordedUnlessTheRunFinished) {
  runner::testing::TempDir dir;
  SummaryWriter(dir.path(), json::object()).on_end({"failed", {{"error", "broken pipe"}}, 3, 1});
  record_rank_failure(dir.path(), "rank 1 exited with code 1: out of memory");
  json s = read_summary(dir.path());
  EXPECT_EQ(s["error"], "rank 1 exited with code 1: out of memory");
  EXPECT_EQ(s["error_on_rank0"], "broken pipe");
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "report.html"));

  runner::testing::TempDir finished;
  SummaryWriter(finished.path(), json::object()).on_end({"finished", json::object(), 3, 1});
  record_rank_failure(finished.path(), "rank 1 was killed by signal SIGKILL (9)");
  EXPECT_TRUE(summary_says_finished(read_summary(finished.path())));
}

}  // namespace
}  // namespace runner::output
