// A shared-library plugin as its author writes it (plugins/examples): loaded by path, its entry
// registered with the schema the public helpers make, its parameter acting, its coin drawn for
// every sample whatever p.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "registry/plugin_loader.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "runner/trackers/tracker.hpp"
#include "temp_files.hpp"

#include <fstream>

namespace runner {
namespace {

const Registry<TransformFactory>::Entry& invert() {
  load_plugin(RUNNER_EXAMPLE_PLUGIN);
  load_plugin(RUNNER_EXAMPLE_PLUGIN);  // a second load of the same file does nothing
  return registries().transforms.at("invert");
}

TEST(PluginLoader, TheExamplePluginRegistersWithThePublicSchemaHelpers) {
  const auto& entry = invert();
  EXPECT_EQ(entry.schema.at("additionalProperties"), false) << "a misspelled key is an error";
  EXPECT_EQ(entry.schema.at("properties").at("p").at("default"), 1.0);
  EXPECT_EQ(entry.schema.at("properties").at("p").at("maximum"), 1);
}

TEST(PluginLoader, ItsParameterActsAndItsCoinIsAlwaysDrawn) {
  const auto& entry = invert();
  const auto always = entry.factory({{"p", 1.0}});
  const auto never = entry.factory({{"p", 0.0}});
  cv::Mat a(2, 2, CV_8UC1, cv::Scalar(10)), b = a.clone();
  data::Rng ra(1, 0, 0), rb(1, 0, 0);
  always->apply(a, ra);
  never->apply(b, rb);
  EXPECT_EQ(a.at<uint8_t>(0, 0), 245);
  EXPECT_EQ(b.at<uint8_t>(0, 0), 10);
  EXPECT_EQ(ra.next_u64(), rb.next_u64()) << "the same draws whatever p";
}

// The example tracker (plugins/examples/event_log_tracker.cpp): registered into the trackers
// kind of an ABI 3 runner, it gets the run's events in order and writes them where it is told.
TEST(PluginLoader, TheExampleTrackerWritesEveryEventOfTheRun) {
  load_plugin(RUNNER_EXAMPLE_TRACKER);
  const auto& entry = registries().trackers.at("event_log");
  EXPECT_EQ(entry.schema.at("properties").at("file").at("default"), "events.jsonl");
  testing::TempDir dir;
  trackers::TrackerContext context;
  context.run_dir = dir.path().string();
  context.name = "event_log";
  auto tracker = entry.factory({{"file", "ev.jsonl"}}, context);
  trackers::RunStart start;
  start.experiment = "x";
  start.params = {{"train.epochs", "2"}};
  tracker->start(start);
  tracker->log({"step", 4, 1, 0, {{"loss", 0.5}}});
  tracker->artifact("summary.json");
  tracker->finish({"interrupted", "SIGTERM"});
  std::ifstream in(dir.path() / "ev.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].at("event"), "start");
  EXPECT_EQ(lines[0].at("params"), 1);
  EXPECT_EQ(lines[1].at("values").at("loss"), 0.5);
  EXPECT_EQ(lines[1].at("step"), 4);
  EXPECT_EQ(lines[2].at("path"), "summary.json");
  EXPECT_EQ(lines[3].at("status"), "interrupted");
  EXPECT_EQ(lines[3].at("reason"), "SIGTERM");
}

TEST(PluginLoader, AMissingLibraryNamesTheFile) {
  try {
    load_plugin("/nonexistent/libnothing.so");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace runner
