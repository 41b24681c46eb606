#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/sweep.hpp"
#include "launch/spawn.hpp"
#include "runner/error.hpp"
#include "sweep/sweep_runner.hpp"

namespace runner::cli {

int command_sweep(const Args& args) {
  CommandLine cl(
      "sweep", "SWEEP.yaml [--set KEY=VALUE]...",
      "Validates every point of the sweep (a bad point stops it before anything runs), then\n"
      "runs the points one after another, each as 'runner run' in <output>/<name>/<point-id>/.\n"
      "Run it again after a stop: finished points are skipped, an unfinished one is rerun.\n"
      "A failed point is recorded (status column) and the sweep goes on; the exit code is 1\n"
      "when any point failed. Summary: console table, summary.csv, summary.md, summary.png.");
  add_run_flags(cl);
  cl.positional("file", 1);
  if (!cl.parse(args)) return 0;
  const auto files = cl.list("file");
  if (files.size() != 1)
    throw ConfigError("runner sweep: give one sweep file; see 'runner sweep --help'");
  sweep::SweepRunOptions options;
  options.extra_overrides = run_overrides(cl);
  const auto s = config::load_sweep(files[0], options.extra_overrides);
  std::cout << "sweep " << s.name << ": " << s.points.size() << " point(s) valid; results in "
            << sweep::sweep_dir(s) << "\n";
  options.executable = launch::self_executable();
  return sweep::run_sweep(s, options);
}

}  // namespace runner::cli
