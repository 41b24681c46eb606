#include "sweep/sweep_runner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "runner/error.hpp"
#include "sweep/local_executor.hpp"
#include "sweep/optuna_executor.hpp"
#include "sweep/optuna_workers.hpp"
#include "sweep/slurm_executor.hpp"
#include "sweep/sweep_book.hpp"
#include "util/cpu_cores.hpp"

namespace runner::sweep {

std::string sweep_dir(const sweep::Sweep& sweep) {
  return (std::filesystem::path(sweep.output) / sweep.name).string();
}

int run_sweep(const sweep::Sweep& sweep, const SweepRunOptions& options) {
  SweepBook book(sweep);
  std::filesystem::create_directories(book.dir());
  std::string executor = options.executor.empty() ? sweep.executor : options.executor;
  // --summary of a sweep submitted with --executor slurm reads SLURM's states too.
  if (options.summary_only && options.executor.empty() && submitted_to_slurm(book))
    executor = "slurm";
  if (executor == "local" && !options.summary_only && submitted_to_slurm(book)) {
    // Running points here that SLURM still runs would write into the same folders.
    const auto active = points_active_in_slurm(book);
    if (!active.empty())
      throw ConfigError(fmt::format(
          "runner sweep: {} point(s) of sweep {} are still queued or running in SLURM ({}{}): "
          "follow them with 'runner sweep {} --executor slurm --summary --wait', or scancel "
          "the job first",
          active.size(), sweep.name, active.front(), active.size() > 1 ? ", ..." : "",
          options.sweep_file));
  }
  const int parallel = options.parallel > 0 ? options.parallel : sweep.parallel;
  if (sweep.search == "optuna") {
    if (options.rerun)
      throw ConfigError(
          "runner sweep --rerun: a search continues its study; to search again from scratch, "
          "remove " +
          book.dir().string() + " (and the study in `storage`) or give the sweep another name");
    if (executor == "slurm" && !options.summary_only && !options.worker) {
      OptunaWorkersOptions workers;
      workers.executable = options.executable;
      workers.sweep_file = options.sweep_file;
      workers.overrides = options.overrides;
      workers.workers = std::max(1, parallel);
      workers.wait = options.wait;
      const int code = submit_optuna_workers(book, workers);
      if (code != 0 || !options.wait) return code;
    }
    OptunaExecutorOptions optuna;
    optuna.executable = options.executable;
    optuna.parallel = options.worker ? 1 : std::max(1, parallel);
    optuna.cpu_cores = util::usable_cpu_cores();
    optuna.gpu_count = options.gpu_count;
    optuna.worker = options.worker;
    // After the workers ended (--wait), what they found is the summary.
    optuna.summary_only = options.summary_only || executor == "slurm";
    return run_optuna(book, optuna);
  }
  if (options.rerun && !options.summary_only) {
    if (executor == "slurm")
      throw ConfigError(
          "runner sweep --rerun: works with the local executor; to run a SLURM "
          "sweep again from scratch, remove " +
          book.dir().string());
    book.forget_earlier_results();
  }
  if (executor == "slurm") {
    SlurmExecutorOptions slurm;
    slurm.executable = options.executable;
    slurm.sweep_file = options.sweep_file;
    slurm.parallel = parallel;
    slurm.wait = options.wait;
    slurm.summary_only = options.summary_only;
    return run_slurm(book, slurm);
  }
  book.take_earlier_results(options.summary_only ? "done" : "done (earlier run)");
  if (options.summary_only) {
    // Points that ran before and left failure.txt stay failed; the rest are pending.
    for (size_t i = 0; i < book.rows().size(); ++i) {
      std::ifstream failure(book.run_dir(i) / "failure.txt");
      std::string reason;
      if (!book.rows()[i].finished() && std::getline(failure, reason)) {
        book.rows()[i].status = "failed";
        book.rows()[i].reason = reason;
      }
    }
    book.write_summary();
    return book.finish();
  }
  LocalExecutorOptions local;
  local.executable = options.executable;
  local.parallel = std::max(1, parallel);
  local.gpu_count = options.gpu_count;
  local.cpu_cores = util::usable_cpu_cores();
  return run_local(book, local);
}

}  // namespace runner::sweep
