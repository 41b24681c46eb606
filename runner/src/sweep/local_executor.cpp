#include "sweep/local_executor.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/experiment_options.hpp"
#include "launch/world_env.hpp"
#include "runner/error.hpp"
#include "sweep/gpu_pool.hpp"
#include "util/child_process.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Claims point i for this command; else says who runs it and leaves it to them (`elsewhere`).
bool claim_or_leave(SweepBook& book, size_t i, std::vector<size_t>& elsewhere) {
  if (book.claim_point(i)) return true;
  const auto& sweep = book.sweep();
  book.rows()[i].status = "running elsewhere";
  std::cout << fmt::format("sweep {}: point {}/{} {} is running in {}: left to it\n", sweep.name,
                           i + 1, book.rows().size(), sweep.points[i].id, book.point_holder(i))
            << std::flush;
  elsewhere.push_back(i);
  return false;
}

// What point i's `runner run` needs: its arguments (a fresh start or a resume, said), its
// environment and the folder lock it inherits.
util::ChildSpec point_spec(SweepBook& book, size_t i, const std::vector<std::string>& extra,
                           const LocalExecutorOptions& options) {
  const PointStart start = book.prepare_point(i);
  if (!start.note.empty()) std::cout << start.note << "\n" << std::flush;
  util::ChildSpec spec;
  spec.argv = {options.executable};
  const auto args = book.run_args(i, extra, start.resume);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.environment = util::environment_with(book.point_variables(i));
  spec.inherited_fd = book.point_lock_fd(i);
  // A sweep killed outright (SIGKILL, a lost session) stops its point as a stop signal would:
  // the run saves its last.pt, and the sweep started again continues it.
  spec.die_with_us = true;
  return spec;
}

int run_one_by_one(SweepBook& book, const std::vector<size_t>& todo,
                   const LocalExecutorOptions& options, std::vector<size_t>& elsewhere) {
  const auto& sweep = book.sweep();
  for (size_t i : todo) {
    const auto& point = sweep.points[i];
    if (!claim_or_leave(book, i, elsewhere)) continue;
    std::cout << fmt::format("\nsweep {}: point {}/{} {}\n", sweep.name, i + 1, book.rows().size(),
                             point.id)
              << std::flush;
    book.rows()[i].status = "running";
    util::ChildSpec spec = point_spec(book, i, {}, options);
    spec.output = util::ChildSpec::Output::kMerged;
    bool interrupted = false;
    const util::ChildExit exit = util::run_passing_on_signals(spec, interrupted);
    book.release_point(i);
    if (interrupted) {
      book.rows()[i].status = "pending";
      book.write_summary();
      std::cout << fmt::format(
          "sweep {}: interrupted during point {}; run the same command again to resume\n",
          sweep.name, point.id);
      return 130;
    }
    book.record_exit(i, exit);
    book.write_summary();
    std::cout << fmt::format("sweep {}: point {}/{} {} {}\n", sweep.name, i + 1, book.rows().size(),
                             point.id, book.point_result(i))
              << std::flush;
  }
  return 0;
}

int run_side_by_side(SweepBook& book, const std::vector<size_t>& todo,
                     const LocalExecutorOptions& options, std::vector<size_t>& elsewhere) {
  const auto& sweep = book.sweep();
  // Cores are shared by the points that really run at once (fewer than N near the end).
  const int at_once = std::min(options.parallel, static_cast<int>(todo.size()));
  std::vector<PointNeeds> needs(book.rows().size());
  for (size_t i : todo)
    needs[i] = needs_beside_others(book.sweep().points[i], options.gpu_count, options.cpu_cores,
                                   at_once);  // may refuse first

  struct Running {
    size_t point;
    size_t child;  ///< its index in the supervisor
    std::vector<int> gpus;
    Clock::time_point started;
  };
  GpuPool pool(options.gpu_count);
  std::deque<size_t> waiting(todo.begin(), todo.end());
  std::vector<Running> running;
  util::Supervisor supervisor;
  // Every SIGINT/SIGTERM is passed on to the running points (a second Ctrl-C reaches them as a
  // second one), and no point starts after it.
  util::SignalCatcher signals;
  bool interrupted = false;
  for (;;) {
    // Start points in order while a slot (and their GPUs) are free.
    while (!interrupted && !waiting.empty() &&
           static_cast<int>(running.size()) < options.parallel) {
      const size_t i = waiting.front();
      if (!claim_or_leave(book, i, elsewhere)) {
        waiting.pop_front();
        continue;
      }
      std::vector<int> gpus;
      if (needs[i].gpus > 0) {
        auto taken = pool.take(needs[i].gpus);
        if (!taken) break;  // wait for a point to give its GPUs back
        gpus = *taken;
      }
      waiting.pop_front();
      std::vector<std::string> extra = needs[i].overrides;
      if (!gpus.empty()) extra.push_back("launch.gpu_ids=" + gpu_list(gpus));
      util::ChildSpec spec = point_spec(book, i, extra, options);
      const std::string log = (book.run_dir(i) / "output.log").string();
      spec.output = util::ChildSpec::Output::kLogFile;
      spec.log_path = log;
      const size_t child = supervisor.start(spec);
      book.rows()[i].status = "running";
      book.rows()[i].log_path = log;
      running.push_back({i, child, gpus, Clock::now()});
      std::cout << fmt::format("sweep {}: point {}/{} {} started{} (output: {})\n", sweep.name,
                               i + 1, book.rows().size(), sweep.points[i].id,
                               gpus.empty() ? "" : " on GPUs " + gpu_list(gpus), log)
                << std::flush;
    }
    if (running.empty()) break;

    const std::vector<size_t> ended_children = supervisor.wait(100, &signals);
    for (const int signo : signals.take()) {
      interrupted = true;
      supervisor.signal_all(signo);
    }
    for (const size_t child : ended_children) {
      const auto it = std::find_if(running.begin(), running.end(),
                                   [&](const Running& r) { return r.child == child; });
      const Running ended = *it;
      running.erase(it);
      pool.give_back(ended.gpus);
      book.release_point(ended.point);
      PointRow& row = book.rows()[ended.point];
      if (interrupted) {
        row.status = "pending";
        continue;
      }
      book.record_exit(ended.point, supervisor.exit(child));
      const double seconds = std::chrono::duration<double>(Clock::now() - ended.started).count();
      std::cout << fmt::format("sweep {}: point {}/{} {} {} ({:.1f} s)\n", sweep.name,
                               ended.point + 1, book.rows().size(), row.id,
                               book.point_result(ended.point), seconds);
      book.write_summary();
    }
  }
  if (interrupted) {
    book.write_summary();
    std::cout << fmt::format(
        "sweep {}: interrupted; points that were running are stopped; run the same command "
        "again to resume\n",
        sweep.name);
    return 130;
  }
  return 0;
}

}  // namespace

int run_local(SweepBook& book, const LocalExecutorOptions& options) {
  const auto& sweep = book.sweep();
  // Points are this machine's own runs: never ranks of a world we were started in (a sweep
  // inside a SLURM allocation or under torchrun), and we wait for them ourselves.
  for (const char* name : {"RANK",
                           "WORLD_SIZE",
                           "LOCAL_RANK",
                           "LOCAL_WORLD_SIZE",
                           "GROUP_RANK",
                           "MASTER_ADDR",
                           "MASTER_PORT",
                           "TORCHELASTIC_USE_AGENT_STORE",
                           "TORCHELASTIC_RESTART_COUNT",
                           "SLURM_PROCID",
                           "SLURM_NTASKS",
                           "SLURM_LOCALID",
                           "SLURM_NODEID",
                           "SLURM_NTASKS_PER_NODE",
                           "SLURM_STEP_NODELIST",
                           "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK",
                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "OMPI_COMM_WORLD_NODE_RANK",
                           launch::kLaunchedByRunnerVar,
                           launch::kLauncherStoreVar,
                           launch::kRestartsVar,
                           launch::kAttemptVar})
    ::unsetenv(name);
  ::signal(SIGCHLD, SIG_DFL);
  std::vector<size_t> todo;
  for (size_t i = 0; i < book.rows().size(); ++i) {
    if (book.rows()[i].status == "done (earlier run)")
      std::cout << fmt::format("sweep {}: point {}/{} {} finished earlier: skipped\n", sweep.name,
                               i + 1, book.rows().size(), sweep.points[i].id);
    else
      todo.push_back(i);
  }
  // Points another live command runs (a second sweep on this folder) are left to it, then
  // waited for: each ends done by it, or, when it stopped before finishing them, runs here.
  const bool nothing_to_run = todo.empty();
  while (!todo.empty()) {
    std::vector<size_t> elsewhere, ours;
    const int code = options.parallel > 1 ? run_side_by_side(book, todo, options, elsewhere)
                                          : run_one_by_one(book, todo, options, elsewhere);
    if (code != 0) return code;
    for (size_t i : elsewhere) {
      std::cout << fmt::format("sweep {}: waiting for point {}, which {} runs\n", sweep.name,
                               sweep.points[i].id, book.point_holder(i))
                << std::flush;
      book.wait_for_point(i);
      if (!book.take_result(i, "done (by another command)")) {
        ours.push_back(i);  // it stopped unfinished: claimed now, ours to finish
        continue;
      }
      book.release_point(i);
      std::cout << fmt::format("sweep {}: point {}/{} {} {}\n", sweep.name, i + 1,
                               book.rows().size(), sweep.points[i].id, book.point_result(i))
                << std::flush;
    }
    if (!elsewhere.empty()) book.write_summary();
    todo = ours;
  }
  if (nothing_to_run) book.write_summary();
  return book.finish();
}

}  // namespace runner::sweep
