#include "sweep/optuna_workers.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "config/experiment.hpp"
#include "runner/error.hpp"
#include "sweep/slurm_words.hpp"
#include "util/atomic_file.hpp"
#include "util/child_process.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Whether any task of array job `job` may still run; nullopt when squeue could not answer.
std::optional<bool> workers_active(const std::string& job) {
  const util::CommandResult r = util::run_command(
      {"squeue", "--noheader", "--array", "--states=all", "--jobs=" + job, "--format=%T"});
  if (r.exit_code != 0)
    return r.output.find("Invalid job id") != std::string::npos ? std::optional<bool>(false)
                                                                : std::nullopt;
  std::istringstream lines(r.output);
  for (std::string state; lines >> state;)
    if (state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" ||
        state == "COMPLETING" || state == "SUSPENDED" || state == "REQUEUED" ||
        state == "RESIZING" || state == "STOPPED")
      return true;
  return false;
}

}  // namespace

std::string workers_script(const SweepBook& book, const OptunaWorkersOptions& options,
                           const std::string& program) {
  const Sweep& sweep = book.sweep();
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# runner sweep " << sweep.name << " (" << sweep.path
    << "): search: optuna, one worker per array task; each takes trials from the study until "
    << sweep.doc.at("trials") << " have run.\n"
    << "# Written by `runner sweep --executor slurm`; it is rewritten on every submission.\n"
    << "set -u\n"
    << "exec " << shell_quoted(program) << " sweep --worker --executor local";
  for (const std::string& o : options.overrides) s << " --set " << shell_quoted(o);
  s << " " << shell_quoted(fs::absolute(options.sweep_file).string()) << "\n";
  return s.str();
}

int submit_optuna_workers(SweepBook& book, const OptunaWorkersOptions& options) {
  const Sweep& sweep = book.sweep();
  const config::Experiment base = config::load_experiment(sweep.base_path, sweep.set_overrides);
  const config::LaunchOptions& launch = base.options.launch;
  if (launch.nnodes > 1)
    throw ConfigError(fmt::format(
        "sweep {}: search: optuna's SLURM workers run each trial on their own node, but the "
        "base sets launch.nnodes {}: set launch.nnodes: 1 (launch.num_processes ranks on the "
        "node) or use points on SLURM (search: grid or random)",
        sweep.name, launch.nnodes));
  const fs::path dir = book.dir() / "slurm";
  fs::create_directories(dir / "logs");
  const SlurmOptions& slurm = sweep.slurm;
  std::vector<std::string> argv = {
      "sbatch",
      "--parsable",
      fmt::format("--array=0-{}", options.workers - 1),
      "--job-name=runner-sweep-" + sweep.name,
      "--output=" + sbatch_escaped((dir / "logs").string()) + "/%A_%a.out",
      "--nodes=1",
      "--ntasks=1"};
  if (slurm.partition) argv.push_back("--partition=" + *slurm.partition);
  if (slurm.time) argv.push_back("--time=" + *slurm.time);
  if (slurm.account) argv.push_back("--account=" + *slurm.account);
  if (slurm.cpus_per_task) argv.push_back(fmt::format("--cpus-per-task={}", *slurm.cpus_per_task));
  // A trial's ranks run on the worker's node, a GPU each where they run on CUDA.
  const int gpus = slurm.gpus_per_task.value_or(launch.device == "cuda" ? launch.num_processes : 0);
  if (gpus > 0) argv.push_back(fmt::format("--gpus-per-task={}", gpus));
  argv.insert(argv.end(), slurm.extra_args.begin(), slurm.extra_args.end());
  const fs::path script = dir / "workers.sbatch";
  util::write_file_atomically(script.string(),
                              workers_script(book, options, runner_program(options.executable)));
  argv.push_back(script.string());
  const std::string job = submit_to_sbatch(argv, "the workers", script.string());
  json jobs = json::array();
  if (std::ifstream in(dir / "workers.json"); in) {
    jobs = json::parse(in, nullptr, false);
    if (!jobs.is_array()) jobs = json::array();
  }
  jobs.push_back({{"job", job}, {"workers", options.workers}, {"submitted", std::time(nullptr)}});
  util::write_file_atomically((dir / "workers.json").string(), jobs.dump(2) + "\n");
  std::cout << fmt::format(
                   "sweep {}: submitted {} worker(s) as SLURM job {}; each takes trials from the "
                   "study until {} have run; logs in {}\n",
                   sweep.name, options.workers, job, sweep.doc.at("trials").dump(),
                   (dir / "logs").string())
            << std::flush;
  if (!options.wait) {
    std::cout << fmt::format("sweep {}: follow it with: runner sweep {} --summary\n", sweep.name,
                             options.sweep_file);
    return 0;
  }
  // Ctrl-C stops the waiting, not the workers: SLURM keeps running them.
  const util::SignalCatcher stop_waiting;
  for (;;) {
    for (int k = 0; k < static_cast<int>(options.poll_seconds * 10) && !stop_waiting.caught(); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stop_waiting.caught()) {
      std::cout << fmt::format(
          "sweep {}: stopped waiting; SLURM job {} keeps running. Later: runner sweep {} "
          "--summary (or scancel {})\n",
          sweep.name, job, options.sweep_file, job);
      return 130;
    }
    const std::optional<bool> active = workers_active(job);
    if (active && !*active) return 0;
  }
}

}  // namespace runner::sweep
