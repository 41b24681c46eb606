// `runner sweep-point`: what a sweep's SLURM array task runs before its point's `srun runner
// run`: it readies the point's folder as the local executor does (sweep/point_start) and says
// on stdout how the run starts: `resume`, `start`, or `done` when another command finished it.

#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"
#include "sweep/point_start.hpp"
#include "util/folder_lock.hpp"

namespace runner::cli {

int command_sweep_point(const Args& args) {
  CommandLine cl("sweep-point", "POINT.yaml --config-dir DIR",
                 "Readies a sweep point's run folder (output.run_dir of its resolved experiment,\n"
                 "written by `runner sweep --executor slurm`): an unfinished run of the same\n"
                 "config with checkpoints/last.pt is continued, anything else an earlier attempt\n"
                 "left is moved aside to <folder>.old-<time>/. Prints resume, start or done\n"
                 "(another command finished it). Refused (exit 2) while another command holds\n"
                 "the folder. The sweep's array script runs it; users need not.");
  add_config_dir_flag(cl);
  cl.positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string file = cl.only("file", "point file");
  const config::Experiment e = config::load_experiment(file, {}, config_dir(cl));
  if (!e.options.output.run_dir)
    throw ConfigError(file +
                      ": output.run_dir: a sweep point names its run folder; this file "
                      "names none (write it with runner sweep --executor slurm)");
  const std::string run_dir = *e.options.output.run_dir;
  util::LockAttempt claim = util::try_lock_folder(run_dir, "runner sweep-point " + file);
  if (!claim.lock)
    throw ConfigError(run_dir + " is in use by " + claim.holder +
                      ": another command runs this point; it is left to it");
  if (output::summary_says_finished(output::read_summary(run_dir))) {
    std::cout << "done\n";
    return 0;
  }
  const sweep::PointStart start = sweep::start_point(
      run_dir, e.doc, "sweep point " + std::filesystem::path(file).stem().string());
  if (!start.note.empty()) std::cerr << start.note << std::endl;
  std::cout << (start.resume ? "resume" : "start") << "\n";
  return 0;
}

}  // namespace runner::cli
