// The run folder a new run may write: new, empty, or only a sweep point's log; another run's
// only with --overwrite, which empties it; never a folder holding something else.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "run/preflight.hpp"
#include "runner/error.hpp"
#include "small_experiment.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

std::string refusal(const runner::testing::TempDir& dir, const fs::path& run_dir,
                    bool overwrite = false) {
  const auto e =
      runner::testing::load_small_experiment(dir, {"output.run_dir=" + run_dir.string()});
  RunOptions options;
  options.overwrite = overwrite;
  try {
    check_output_folder(e, options);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(Preflight, ANewOrEmptyFolderIsFree) {
  runner::testing::TempDir dir;
  EXPECT_EQ(refusal(dir, dir.path() / "new" / "run"), "");
  fs::create_directories(dir.path() / "empty");
  EXPECT_EQ(refusal(dir, dir.path() / "empty"), "");
  dir.write("point/output.log", "a sweep point's output so far\n");
  EXPECT_EQ(refusal(dir, dir.path() / "point"), "") << "the sweep writes it before the run";
}

TEST(Preflight, AnotherRunsFolderIsRefusedUnlessOverwritten) {
  runner::testing::TempDir dir;
  dir.write("done/config.yaml", "name: small\n");
  dir.write("done/summary.json", "{\"status\": \"finished\"}\n");
  const std::string why = refusal(dir, dir.path() / "done");
  EXPECT_NE(why.find("holds another run (finished)"), std::string::npos) << why;
  EXPECT_NE(why.find("runner run --resume " + (dir.path() / "done").string()), std::string::npos);
  EXPECT_EQ(refusal(dir, dir.path() / "done", /*overwrite=*/true), "");

  const auto e = runner::testing::load_small_experiment(dir);
  RunOptions overwrite;
  overwrite.overwrite = true;
  dir.write("done/output.log", "kept\n");
  claim_run_folder(e, overwrite, (dir.path() / "done").string());
  EXPECT_FALSE(fs::exists(dir.path() / "done" / "config.yaml")) << "replaced whole";
  EXPECT_TRUE(fs::exists(dir.path() / "done" / "output.log"));
}

TEST(Preflight, AFolderHoldingSomethingElseIsNeverARunsFolder) {
  runner::testing::TempDir dir;
  dir.write("mine/notes.txt", "mine\n");
  for (const bool overwrite : {false, true}) {
    const std::string why = refusal(dir, dir.path() / "mine", overwrite);
    EXPECT_NE(why.find("is not empty (1 entry: notes.txt) and holds no run"), std::string::npos)
        << why;
  }
  dir.write("file", "x");
  EXPECT_NE(refusal(dir, dir.path() / "file").find("is a file, not a folder"), std::string::npos);
}

TEST(Preflight, AResumeNeedsOnlyAWritableFolder) {
  runner::testing::TempDir dir;
  dir.write("done/config.yaml", "name: small\n");
  const auto e = runner::testing::load_small_experiment(dir);
  RunOptions resume;
  resume.resume = true;
  resume.resume_dir = (dir.path() / "done").string();
  EXPECT_NO_THROW(check_output_folder(e, resume)) << "a resume writes into its own run";
}

}  // namespace
}  // namespace runner::run
