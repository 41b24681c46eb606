#include "cli/relaunch.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "launch/world_env.hpp"
#include "runner/error.hpp"
#include "util/child_process.hpp"

namespace runner::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Why the attempt ended, in one line: "rank 1 was killed by signal SIGKILL (9)", or "rank 0
// exited with code 1: the training loss was NaN ...".
std::string cause_of(const launch::LaunchResult& launched) {
  const util::ChildExit& failure = launched.failure;
  std::string cause =
      "rank " + std::to_string(launched.failed_rank) + " " + util::describe_exit(failure);
  const std::string line = util::last_error_line(failure.last_lines);
  if (failure.signal == 0 && !line.empty()) cause += ": " + line;
  return cause;
}

// A failure another attempt may get past: a rank that died or failed while running. Not an
// interrupt, not a configuration error (exit 2: it fails again the same way), not a run that
// never made its folder.
bool restartable(const launch::LaunchResult& launched) {
  return launched.exit_code != 0 && launched.interrupted_by == 0 && launched.failed_rank >= 0 &&
         launched.failure.exit_code != kExitUsage && !launched.run_dir.empty();
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return text;
}

// The command that continues the run: --resume RUN_DIR from its last.pt, or, without one, the
// same command again in the same folder (which --overwrite gives back to it).
std::vector<std::string> next_attempt(std::vector<std::string> args, const std::string& run_dir) {
  bool resumes = false;
  std::vector<std::string> kept;
  for (const auto& a : args) {
    if (a == "--overwrite") continue;
    resumes = resumes || a == "--resume" || a.rfind("--resume=", 0) == 0;
    kept.push_back(a);
  }
  if (resumes) return kept;
  if (fs::exists(fs::path(run_dir) / "checkpoints" / "last.pt")) {
    kept.insert(kept.end(), {"--resume", run_dir});
  } else {
    kept.insert(kept.end(), {"--set", "output.run_dir=" + run_dir, "--overwrite"});
  }
  return kept;
}

}  // namespace

launch::LaunchResult launch_with_restarts(launch::SpawnOptions so,
                                          const config::LaunchOptions& launch) {
  json restarts = json::array();
  for (;;) {
    if (!restarts.empty()) so.environment[launch::kRestartsVar] = restarts.dump();
    so.environment[launch::kAttemptVar] = std::to_string(restarts.size());
    launch::LaunchResult launched = launch::spawn_ranks(so);
    if (!restartable(launched) || static_cast<int>(restarts.size()) >= launch.max_restarts)
      return launched;
    const std::string cause = cause_of(launched);
    restarts.push_back({{"time", now_text()}, {"cause", cause}, {"rank", launched.failed_rank}});
    so.args = next_attempt(so.args, launched.run_dir);
    const bool resumes = std::find(so.args.begin(), so.args.end(), "--resume") != so.args.end();
    std::cerr << "runner launcher: restart " << restarts.size() << " of " << launch.max_restarts
              << " in " << launch.restart_backoff_s << " s after " << cause << "; "
              << (resumes ? "the run continues from " + launched.run_dir + "/checkpoints/last.pt"
                          : "no checkpoint was saved: the run starts again in " + launched.run_dir)
              << std::endl;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<int64_t>(launch.restart_backoff_s * 1000)));
  }
}

}  // namespace runner::cli
