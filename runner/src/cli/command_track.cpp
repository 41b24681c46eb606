#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/resume_plan.hpp"
#include "run/run_trackers.hpp"
#include "runner/error.hpp"
#include "runner/trackers/tracker.hpp"

namespace runner::cli {
namespace fs = std::filesystem;

int command_track(const Args& args) {
  CommandLine cl("track", "RUN_DIR...",
                 "Sends to the run's trackers (output.trackers) what they could not send while\n"
                 "it ran: RUN_DIR/trackers/NAME.pending.jsonl, kept when a tracking server was\n"
                 "down. Exit 0 when everything went, 1 when some is still pending.");
  cl.positional("run", -1);
  if (!cl.parse(args)) return 0;
  const auto runs = cl.list("run");
  if (runs.empty()) throw ConfigError("runner track: give one or more run directories");
  int pending = 0;
  for (const auto& run : runs) {
    if (!fs::exists(fs::path(run) / "config.yaml"))
      throw ConfigError("runner track: " + run + " is not a run directory (no config.yaml there)");
    const config::Experiment e = config::load_run_experiment(run);
    for (auto& entry : run::make_trackers(e.doc, fs::absolute(run).lexically_normal().string())) {
      const fs::path file = fs::path(run) / "trackers" / (entry.name + ".pending.jsonl");
      if (!fs::exists(file)) continue;
      const std::string left = entry.tracker->send_pending();
      if (left.empty()) {
        std::cout << run << ": " << entry.name << ": sent\n";
      } else {
        std::cerr << run << ": " << entry.name << ": " << left << "\n";
        ++pending;
      }
    }
  }
  return pending == 0 ? kExitOk : kExitFailure;
}

}  // namespace runner::cli
