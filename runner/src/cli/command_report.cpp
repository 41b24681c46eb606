#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "output/compare_report.hpp"
#include "output/run_report.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"

namespace runner::cli {
namespace fs = std::filesystem;

int command_report(const Args& args) {
  CommandLine cl(
      "report", "RUN_DIR... [-o FILE.html]",
      "Builds a run's report.html again from its directory (metrics.jsonl, summary.json,\n"
      "config.yaml, ...); with several runs, one page comparing them side by side\n"
      "(default compare.html in the working folder).");
  cl.flag("output,o", po::value<std::string>(), "Output file").positional("run", -1);
  if (!cl.parse(args)) return 0;
  const auto runs = cl.list("run");
  if (runs.empty()) throw ConfigError("runner report: give one or more run directories");
  std::vector<fs::path> dirs;
  for (const auto& run : runs) {
    if (!fs::exists(fs::path(run) / "metrics.jsonl") && !fs::exists(fs::path(run) / "config.yaml"))
      throw ConfigError("runner report: " + run +
                        " is not a run directory (no config.yaml or metrics.jsonl there)");
    dirs.emplace_back(run);
  }
  if (dirs.size() == 1 && !cl.has("output")) {
    output::write_run_report(dirs[0], output::run_status_text(output::read_summary(dirs[0])));
    std::cout << (dirs[0] / "report.html").string() << "\n";
    return 0;
  }
  const fs::path out =
      cl.has("output") ? fs::path(cl.get<std::string>("output")) : fs::path("compare.html");
  output::write_comparison_report(dirs, out);
  std::cout << out.string() << "\n";
  return 0;
}

}  // namespace runner::cli
