// The trackers as the run's observer: each report reaches every tracker in order as a record
// with metrics.jsonl's values, the run folder's files are offered once they are final, a
// tracker that throws is off for the rest of the run while the others go on, and a run ends
// for its trackers once.

#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/tracker_set.hpp"
#include "temp_files.hpp"

namespace runner::output {
namespace {

using nlohmann::json;

// Writes down every call it gets; throws from `fail_on` calls on.
class Recording : public trackers::Tracker {
 public:
  Recording(std::vector<std::string>& calls, std::string fail_on = "")
      : calls_(calls), fail_on_(std::move(fail_on)) {}
  void start(const trackers::RunStart& run) override {
    note("start " + run.experiment +
         (run.resumed_at ? " at " + std::to_string(*run.resumed_at) : ""));
  }
  void log(const trackers::Record& r) override {
    note("log " + r.kind + " " + std::to_string(r.step) + " " + r.values.dump());
  }
  void artifact(const std::string& path) override { note("artifact " + path); }
  void finish(const trackers::RunEnd& end) override {
    note("finish " + end.status + " " + end.reason);
  }

 private:
  void note(const std::string& call) {
    if (!fail_on_.empty() && call.rfind(fail_on_, 0) == 0) throw std::runtime_error("server gone");
    calls_.push_back(call);
  }
  std::vector<std::string>& calls_;
  std::string fail_on_;
};

TrackerSet tracker_set(const testing::TempDir& dir, std::vector<std::string>& a,
                       std::vector<std::string>& b, const std::string& b_fails_on = "") {
  std::vector<TrackerEntry> entries;
  entries.push_back({"a", "output.trackers.0", std::make_unique<Recording>(a)});
  entries.push_back({"b", "output.trackers.1", std::make_unique<Recording>(b, b_fails_on)});
  trackers::RunStart start;
  start.experiment = "exp";
  start.run_dir = dir.path().string();
  return TrackerSet(std::move(entries), start, "predictions.csv");
}

WindowRecord window(int64_t step) {
  WindowRecord r;
  r.epoch = 1;
  r.step = step;
  r.loss = 0.25;
  return r;
}

TEST(TrackerSet, EveryTrackerGetsTheRunInOrderAndTheFinalFilesBeforeItsFinish) {
  testing::TempDir dir;
  dir.write("summary.json", "{}");
  dir.write("predictions.csv", "x");
  dir.write("checkpoints/best.pt", "x");
  std::vector<std::string> a, b;
  TrackerSet set = tracker_set(dir, a, b);
  ObserverChain chain;
  chain.add(std::make_unique<TrackerSet>(std::move(set)));
  chain.on_start(std::nullopt);
  chain.on_window(window(3));
  EpochRecord epoch;
  epoch.epoch = 1;
  epoch.step = 4;
  epoch.validation = {{"accuracy", 0.5}};
  chain.on_epoch(epoch);
  RunEnd end;
  end.status = "finished";
  chain.on_end(end);
  ASSERT_EQ(a.size(), 7u) << json(a).dump(1);
  EXPECT_EQ(a[0], "start exp");
  EXPECT_NE(a[1].find("log step 3"), std::string::npos);
  EXPECT_NE(a[1].find("\"loss\":0.25"), std::string::npos) << "metrics.jsonl's values";
  EXPECT_NE(a[2].find("log epoch 4"), std::string::npos);
  EXPECT_NE(a[2].find("\"val_accuracy\":0.5"), std::string::npos);
  // Only the files that exist, in the offered order, then the end.
  EXPECT_EQ(a[3], "artifact summary.json");
  EXPECT_EQ(a[4], "artifact predictions.csv");
  EXPECT_EQ(a[5], "artifact checkpoints/best.pt");
  EXPECT_EQ(a[6], "finish finished ");
  EXPECT_EQ(a, b);
}

TEST(TrackerSet, ATrackerThatThrowsIsOffAndTheOthersGoOn) {
  testing::TempDir dir;
  std::vector<std::string> a, b;
  TrackerSet set = tracker_set(dir, a, b, "log epoch");
  set.on_start(std::nullopt);
  set.on_window(window(1));
  EpochRecord epoch;
  epoch.step = 2;
  set.on_epoch(epoch);  // b throws here
  set.on_window(window(3));
  StopRecord stop;
  stop.signal = "SIGTERM";
  set.on_stop(stop);
  set.on_files_final();
  EXPECT_EQ(set.active(), 1u);
  EXPECT_EQ(b.size(), 2u) << "nothing after its failure: " << json(b).dump();
  ASSERT_EQ(a.size(), 5u) << json(a).dump(1);
  EXPECT_EQ(a.back(), "finish interrupted SIGTERM");
}

TEST(TrackerSet, ARunEndsOnceForItsTrackers) {
  testing::TempDir dir;
  std::vector<std::string> a, b;
  TrackerSet set = tracker_set(dir, a, b);
  set.on_start(5);
  EXPECT_EQ(a[0], "start exp at 5") << "a resume says where it continues";
  StopRecord requeued;
  requeued.status = "requeued";
  requeued.signal = "SIGUSR1";
  set.on_stop(requeued);
  set.on_files_final();
  StopRecord refused = requeued;  // SLURM refused the requeue: reported again as interrupted
  refused.status = "interrupted";
  set.on_stop(refused);
  set.on_files_final();
  EXPECT_EQ(std::count(a.begin(), a.end(), "finish requeued SIGUSR1"), 1);
  EXPECT_EQ(a.size(), 2u) << json(a).dump(1);
}

}  // namespace
}  // namespace runner::output
