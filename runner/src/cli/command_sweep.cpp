#include <iostream>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "cli/sweep_checks.hpp"
#include "launch/spawn.hpp"
#include "run/build_run_parts.hpp"
#include "run/preflight.hpp"
#include "run/shape_checks.hpp"
#include "runner/error.hpp"
#include "sweep/sweep_file.hpp"
#include "sweep/sweep_runner.hpp"

namespace runner::cli {
namespace {

// --dry-run: each point's id and overrides, one per line.
void print_points(const sweep::Sweep& s) {
  for (const auto& point : s.points) {
    std::cout << point.id << ":";
    for (const auto& o : point.overrides) std::cout << " " << o;
    std::cout << "\n";
  }
}

}  // namespace

int command_sweep(const Args& args) {
  CommandLine cl(
      "sweep",
      "SWEEP.yaml [--executor local|slurm] [--parallel N] [--wait] [--summary] [--dry-run] "
      "[--set KEY=VALUE]...",
      "Validates every point of the sweep (a bad point stops it before anything runs), then\n"
      "runs each as 'runner run' in <output>/<name>/<point-id>/: on this machine, one after\n"
      "another or --parallel N at once, or as one SLURM job array (--executor slurm).\n"
      "Run it again after a stop: finished points are skipped, unfinished ones rerun (on\n"
      "SLURM: resubmitted unless still queued). A failed point is recorded (status column)\n"
      "and the sweep goes on; the exit code is 1 when any point failed. Summary: console\n"
      "table, summary.csv, summary.md, report.html.");
  add_run_flags(cl);
  cl.flag("executor", po::value<std::string>(),
          "local: points run on this machine; slurm: one sbatch --array job (default: the "
          "sweep file's executor)")
      .flag("parallel", po::value<int>(),
            "Points at once: local processes (threads split, GPUs sliced) or the array's %N "
            "throttle (default: the sweep file's parallel)")
      .flag("wait", nullptr, "slurm: follow the array until it ends, then write the summary")
      .flag("summary", nullptr,
            "Run nothing: write the summary of what has finished (with --wait: after the "
            "queued points end)")
      .flag("dry-run", nullptr,
            "Check every point as a run would before it starts (as 'runner validate "
            "SWEEP.yaml'), list the points (id and overrides), run nothing")
      .flag("worker", nullptr,
            "search: optuna: take trials from the study as one of several commands (what each "
            "SLURM task of --executor slurm runs; another machine on the same storage may too): "
            "a trial another live command runs is left to it")
      .flag("rerun", nullptr,
            "Replace earlier results: every point runs again (a finished point whose config "
            "differs from what it would run now is refused without it)")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string file = cl.only("file", "sweep file");
  sweep::SweepRunOptions options;
  if (cl.has("executor")) {
    options.executor = cl.get<std::string>("executor");
    if (options.executor != "local" && options.executor != "slurm")
      throw ConfigError("runner sweep: --executor " + options.executor +
                        ": expected local or slurm");
  }
  if (cl.has("parallel")) {
    options.parallel = cl.get<int>("parallel");
    if (options.parallel < 1 || options.parallel > 256)
      throw ConfigError("runner sweep: --parallel " + std::to_string(options.parallel) +
                        ": expected 1 to 256 points at once");
  }
  options.wait = cl.has("wait");
  options.summary_only = cl.has("summary");
  options.rerun = cl.has("rerun");
  options.worker = cl.has("worker");
  options.overrides = run_overrides(cl);
  const auto s = sweep::load_sweep(file, run_overrides(cl));
  if (s.search == "optuna")
    std::cout << "sweep " << s.name << ": search: optuna, " << s.doc.at("trials")
              << " trials (the distributions' ends valid); results in " << sweep::sweep_dir(s)
              << "\n";
  else
    std::cout << "sweep " << s.name << ": " << s.points.size() << " point(s) valid; results in "
              << sweep::sweep_dir(s) << "\n";
  // What `runner run` checks before it starts, for every point before the first runs: a
  // point that cannot run fails the sweep now, not after the points before it.
  const std::string executor = options.executor.empty() ? s.executor : options.executor;
  check_sweep_starts(s, !options.summary_only && executor == "local");
  if (cl.has("dry-run")) {
    if (s.search == "optuna")
      std::cout << "trials ask their settings from the study as it goes (sampler "
                << s.doc.at("sampler").value("name", "?") << ", pruner "
                << s.doc.at("pruner").value("name", "?") << ")\n";
    print_points(s);
    return 0;
  }
  options.executable = launch::self_executable();
  options.sweep_file = file;
  // Only a local run hands out GPUs (a login node running sbatch need not touch CUDA).
  if (executor == "local" && !options.summary_only)
    options.gpu_count = static_cast<int>(torch::cuda::device_count());
  return sweep::run_sweep(s, options);
}

}  // namespace runner::cli
