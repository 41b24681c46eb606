#include "sweep/slurm_executor.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/experiment_keys.hpp"
#include "config/experiment_options.hpp"
#include "config/yaml_emit.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"
#include "sweep/slurm_words.hpp"
#include "util/atomic_file.hpp"
#include "util/child_process.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// SLURM job states after which a task does nothing more; any other state (PENDING, RUNNING,
// SUSPENDED, STOPPED, REQUEUED, SPECIAL_EXIT, ...) may still run and write its folder.
const std::set<std::string> kEndedStates = {"COMPLETED",     "FAILED",    "CANCELLED", "TIMEOUT",
                                            "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
                                            "PREEMPTED",     "REVOKED"};
bool is_active(const std::string& state) { return !kEndedStates.count(state); }

fs::path slurm_dir(const SweepBook& book) { return book.dir() / "slurm"; }
fs::path point_file(const SweepBook& book, size_t i) {
  return slurm_dir(book) / "points" / (book.sweep().points[i].id + ".yaml");
}
fs::path exit_file(const SweepBook& book, size_t i) {
  return slurm_dir(book) / "exit" / book.sweep().points[i].id;
}

struct PointShape {
  int nodes = 1, ranks_per_node = 1;
  std::string device = "auto";
};

PointShape shape_of(const SweepBook& book, size_t i) {
  const config::LaunchOptions& launch = book.sweep().points[i].experiment.options.launch;
  return {launch.nnodes, launch.num_processes, launch.device};
}

// Submissions so far: [{"job": "123", "points": [ids...], "submitted": unix}].
json read_jobs(const SweepBook& book) {
  std::ifstream in(slurm_dir(book) / "jobs.json");
  if (!in) return json::array();
  const json jobs = json::parse(in, nullptr, false);
  return jobs.is_array() ? jobs : json::array();
}

// State of every array task of the recorded jobs SLURM still knows: point id -> state.
// squeue forgets finished jobs after MinJobAge; those points then read as ended. nullopt (and
// squeue's words in `problem`) when squeue could not answer (a busy or restarting slurmctld).
std::optional<std::map<std::string, std::string>> task_states(const SweepBook& book,
                                                              const json& jobs,
                                                              std::string& problem) {
  std::map<std::string, std::string> states;
  if (jobs.empty()) return states;
  std::string ids;
  for (const auto& j : jobs) ids += (ids.empty() ? "" : ",") + j.at("job").get<std::string>();
  const util::CommandResult r = util::run_command(
      {"squeue", "--noheader", "--array", "--states=all", "--jobs=" + ids, "--format=%F %K %T"});
  if (r.exit_code == 127)
    throw Error(
        "runner sweep: squeue is not installed here: run the sweep where SLURM's "
        "commands are (a login node)");
  if (r.exit_code != 0) {
    // A single forgotten job id is an error to squeue; it only means that job is long over.
    if (r.output.find("Invalid job id") != std::string::npos) return states;
    problem = one_line(r.output);
    return std::nullopt;
  }
  // Later submissions of the same point come later in jobs: they win.
  std::map<std::string, size_t> job_order;
  for (size_t k = 0; k < jobs.size(); ++k) job_order[jobs[k].at("job").get<std::string>()] = k;
  // Which point each task of a job ran, as recorded when it was submitted: a sweep file edited
  // since (points added, reordered) cannot relabel them. Jobs of an older runner lack the map:
  // their task i is the file's point i.
  auto point_of = [&](const std::string& job, long index) -> std::optional<std::string> {
    const json& entry = jobs[job_order.at(job)];
    if (entry.contains("tasks") && entry.at("tasks").is_object()) {
      const std::string key = std::to_string(index);
      if (!entry.at("tasks").contains(key)) return std::nullopt;
      return entry.at("tasks").at(key).get<std::string>();
    }
    if (index < 0 || static_cast<size_t>(index) >= book.rows().size()) return std::nullopt;
    return book.sweep().points[static_cast<size_t>(index)].id;
  };
  std::map<std::string, size_t> state_job;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    // "<array job> <task index> <state>"; a state may carry words ("CANCELLED by 0").
    std::istringstream fields(line);
    std::string job, task, state;
    if (!(fields >> job >> task >> state) || !job_order.count(job)) continue;
    char* end = nullptr;
    const long index = std::strtol(task.c_str(), &end, 10);
    if (*end != '\0') continue;
    const auto point = point_of(job, index);
    if (!point) continue;
    const std::string& id = *point;
    if (state_job.count(id) && state_job[id] > job_order[job]) continue;
    states[id] = state;
    state_job[id] = job_order[job];
  }
  return states;
}

// The job of the latest submission of each point.
std::map<std::string, std::string> latest_job(const json& jobs) {
  std::map<std::string, std::string> out;
  for (const auto& j : jobs)
    for (const auto& id : j.at("points"))
      out[id.get<std::string>()] = j.at("job").get<std::string>();
  return out;
}

// The log of point i's task in `job`: the task index the submission recorded for the point
// (jobs.json's tasks), else i.
std::string log_of(const SweepBook& book, const json& jobs, const std::string& job, size_t i) {
  std::string task = std::to_string(i);
  for (const auto& j : jobs)
    if (j.at("job") == job && j.contains("tasks") && j.at("tasks").is_object())
      for (const auto& [index, id] : j.at("tasks").items())
        if (id == book.sweep().points[i].id) task = index;
  return (slurm_dir(book) / "logs" / fmt::format("{}_{}.out", job, task)).string();
}

// How long a task that ended well may take to show its summary.json here: a shared
// filesystem (NFS) may cache a folder's listing for tens of seconds.
constexpr auto kResultGrace = std::chrono::seconds(60);
using GraceClock = std::chrono::steady_clock;

// Rows from the folders and SLURM's states: done, queued/running, failed (ended without a
// result) or pending (never submitted). Returns how many are still queued or running, or
// nullopt when squeue could not answer (rows unchanged). A task that ended without a failure
// but whose summary.json is not visible here yet counts as running for kResultGrace from the
// first time `grace` saw it; one squeue no longer lists (`waiting` only) likewise, since a
// plain rerun must not resubmit, and so delete, a point that finished a moment ago.
std::optional<size_t> refresh_rows(SweepBook& book, const json& jobs,
                                   std::map<std::string, GraceClock::time_point>& grace,
                                   bool waiting, std::string& problem) {
  const auto known = task_states(book, jobs, problem);
  if (!known) return std::nullopt;
  const auto& states = *known;
  const auto submitted = latest_job(jobs);
  size_t active = 0;
  for (size_t i = 0; i < book.rows().size(); ++i) {
    PointRow& row = book.rows()[i];
    if (row.finished() || row.status == "failed") continue;
    const auto state = states.find(row.id);
    if (state != states.end() && is_active(state->second)) {
      row.status = state->second == "PENDING" ? "queued" : "running";
      ++active;
      continue;
    }
    const auto job = submitted.find(row.id);
    if (job == submitted.end()) continue;  // never submitted: stays pending
    row.log_path = log_of(book, jobs, job->second, i);
    const nlohmann::json said = output::read_summary(book.run_dir(i));
    if (output::summary_says_finished(said)) {
      util::ChildExit ok;
      book.record_exit(i, ok);
      continue;
    }
    std::string reason;
    const std::string how = state == states.end() ? "" : state->second;
    if (how == "CANCELLED")
      reason = "cancelled (scancel)";
    else if (how == "TIMEOUT")
      reason = "hit the time limit (slurm.time)";
    else if (how == "OUT_OF_MEMORY")
      reason = "out of memory (SLURM killed it)";
    else if (!how.empty() && how != "COMPLETED" && how != "FAILED")
      reason = "ended as " + how;
    std::ifstream code_in(exit_file(book, i));
    int code = 0;
    const bool has_code = static_cast<bool>(code_in >> code);
    if ((how == "COMPLETED" || (how.empty() && waiting)) && (!has_code || code == 0)) {
      const auto first = grace.emplace(row.id, GraceClock::now()).first->second;
      if (GraceClock::now() - first < kResultGrace) {
        row.status = "running";
        ++active;
        continue;
      }
    }
    if (has_code) reason += (reason.empty() ? "" : ", ") + fmt::format("exit code {}", code);
    if (reason.empty()) reason = "ended without a result (cancelled or killed)";
    // The run's own account (an interrupted or failed run's summary.json), else its log's.
    const std::string line = !said.empty() ? output::run_status_text(said)
                             : how != "CANCELLED"
                                 ? util::last_error_line(util::tail_of_file(row.log_path))
                                 : "";
    if (!line.empty()) reason += ": " + line;
    book.record_failure(i, reason);
  }
  return active;
}

void write_point_files(const SweepBook& book, const std::vector<size_t>& todo) {
  fs::create_directories(slurm_dir(book) / "points");
  for (size_t i : todo) {
    const auto& point = book.sweep().points[i];
    json doc = point.experiment.doc;
    doc["output"]["run_dir"] = book.run_dir(i).string();  // what --set output.run_dir= does
    util::write_file_atomically(
        point_file(book, i).string(),
        "# runner sweep " + book.sweep().name + ", point " + point.id +
            ": the resolved experiment its SLURM task runs, with\n# runner run --config-dir " +
            fs::absolute(book.sweep().base_path).parent_path().string() + " " +
            point_file(book, i).string() + "\n" +
            config::to_yaml(doc, config::experiment_key_order()));
  }
}

}  // namespace

bool submitted_to_slurm(const SweepBook& book) { return fs::exists(slurm_dir(book) / "jobs.json"); }

std::vector<std::string> points_active_in_slurm(const SweepBook& book) {
  const json jobs = read_jobs(book);
  std::string problem;
  std::optional<std::map<std::string, std::string>> states;
  try {
    states = task_states(book, jobs, problem);
  } catch (const Error&) {
    return {};  // no squeue here: nothing we can see runs
  }
  if (!states)
    throw Error(
        "runner sweep: squeue could not say whether SLURM still runs points of this "
        "sweep (" +
        problem + "); try again in a moment");
  std::vector<std::string> active;
  const auto submitted = latest_job(jobs);
  for (const auto& [id, state] : *states)
    if (is_active(state))
      active.push_back(id + " (job " + (submitted.count(id) ? submitted.at(id) : "?") + ")");
  return active;
}

std::vector<std::string> sbatch_options(const SweepBook& book) {
  const SlurmOptions& slurm = book.sweep().slurm;
  PointShape largest;
  bool any_cuda = false;
  bool any_requeue = false;
  for (size_t i = 0; i < book.rows().size(); ++i) {
    const PointShape s = shape_of(book, i);
    largest.nodes = std::max(largest.nodes, s.nodes);
    largest.ranks_per_node = std::max(largest.ranks_per_node, s.ranks_per_node);
    any_cuda = any_cuda || s.device == "cuda";
    any_requeue = any_requeue || book.sweep().points[i].experiment.options.launch.slurm_requeue;
  }
  std::vector<std::string> options = {
      "--job-name=runner-sweep-" + book.sweep().name,
      "--output=" + sbatch_escaped((slurm_dir(book) / "logs").string()) + "/%A_%a.out",
      fmt::format("--nodes={}", largest.nodes),
      fmt::format("--ntasks-per-node={}", largest.ranks_per_node)};
  if (slurm.partition) options.push_back("--partition=" + *slurm.partition);
  if (slurm.time) options.push_back("--time=" + *slurm.time);
  if (slurm.account) options.push_back("--account=" + *slurm.account);
  // launch.slurm_requeue: SLURM warns the ranks before the time limit; they save and requeue
  // their task, which continues its point (the array script keeps a requeued point's folder).
  if (any_requeue) {
    options.push_back("--requeue");
    options.push_back(fmt::format("--signal=USR1@{}", slurm.requeue_signal_s));
  }
  if (slurm.cpus_per_task)
    options.push_back(fmt::format("--cpus-per-task={}", *slurm.cpus_per_task));
  const int gpus = slurm.gpus_per_task.value_or(any_cuda ? 1 : 0);
  if (gpus > 0) options.push_back(fmt::format("--gpus-per-task={}", gpus));
  return options;
}

std::string array_script(const SweepBook& book, const std::vector<std::string>& options,
                         const std::string& program) {
  const auto& sweep = book.sweep();
  std::string step_options;  // srun takes the per-task resources again (sbatch's do not pass)
  for (const auto& o : options)
    if (o.rfind("--cpus-per-task=", 0) == 0 || o.rfind("--gpus-per-task=", 0) == 0)
      step_options += " " + o;
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# runner sweep " << sweep.name << " (" << sweep.path
    << "): one array task per point, task i = point i.\n"
    << "# Written by `runner sweep --executor slurm`; it is rewritten on every submission.\n";
  // The options go on sbatch's command line (a #SBATCH line would split a path with spaces);
  // here they are for reading, and for `sbatch --array=... <these> array.sbatch` by hand.
  s << "# submitted with: sbatch --array=<points>";
  for (const auto& o : options) s << " " << shell_quoted(o);
  s << "\n";
  s << "set -u\n"
    << "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (size_t i = 0; i < book.rows().size(); ++i) {
    const PointShape shape = shape_of(book, i);
    s << "  " << i << ") point=" << shell_quoted(sweep.points[i].id)
      << " run_dir=" << shell_quoted(book.run_dir(i).string()) << " nodes=" << shape.nodes
      << " ranks_per_node=" << shape.ranks_per_node;
    for (const auto& [name, value] : book.point_variables(i))  // the trackers' sweep tags
      s << " " << name << "=" << shell_quoted(value);
    s << " ;;\n";
  }
  s << "  *) echo \"runner sweep: no point for array task $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\n"
    << "esac\n"
    << "export RUNNER_SWEEP RUNNER_SWEEP_POINT RUNNER_SWEEP_SETTINGS\n"
    << "exit_file=" << shell_quoted((slurm_dir(book) / "exit").string()) << "/\"$point\"\n"
    << "point_file=" << shell_quoted((slurm_dir(book) / "points").string()) << "/\"$point.yaml\"\n"
    << "config_dir=" << shell_quoted(fs::absolute(sweep.base_path).parent_path().string()) << "\n"
    << "# What an earlier attempt left: an unfinished run of this config with a last.pt\n"
    << "# continues, anything else is moved aside (kept), a point another command finished is\n"
    << "# done (runner sweep-point). A task SLURM requeued (launch.slurm_requeue) keeps its\n"
    << "# folder: runner run continues it.\n"
    << "how=start\n"
    << "if [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ]; then\n"
    << "  rm -f -- \"$exit_file\"\n"
    << "  how=$(" << shell_quoted(program)
    << " sweep-point --config-dir \"$config_dir\" \"$point_file\") || { code=$?; echo $code > "
       "\"$exit_file\"; exit $code; }\n"
    << "fi\n"
    << "if [ \"$how\" = done ]; then echo 0 > \"$exit_file\"; exit 0; fi\n"
    << "if [ \"$how\" = resume ]; then run_args=(--resume \"$run_dir\"); else "
       "run_args=(--config-dir "
       "\"$config_dir\" \"$point_file\"); fi\n"
    << "srun --nodes=$nodes --ntasks=$((nodes * ranks_per_node)) "
       "--ntasks-per-node=$ranks_per_node --kill-on-bad-exit=1"
    << step_options << " \\\n  " << shell_quoted(program) << " run \"${run_args[@]}\"\n"
    << "code=$?\n"
    << "echo $code > \"$exit_file\"\n"
    << "exit $code\n";
  return s.str();
}

int run_slurm(SweepBook& book, const SlurmExecutorOptions& options) {
  const auto& sweep = book.sweep();
  fs::create_directories(slurm_dir(book) / "logs");
  fs::create_directories(slurm_dir(book) / "exit");
  json jobs = read_jobs(book);
  book.take_earlier_results(options.summary_only ? "done" : "done (earlier run)");
  std::string problem;
  std::map<std::string, GraceClock::time_point> grace;
  const auto first_look = refresh_rows(book, jobs, grace, /*waiting=*/false, problem);
  if (!first_look)
    throw Error("runner sweep: squeue could not say which points still run: " + problem +
                "; try again in a moment");
  size_t active = *first_look;

  if (!options.summary_only) {
    // Resubmit what neither finished nor is still queued or running.
    std::vector<size_t> todo;
    for (size_t i = 0; i < book.rows().size(); ++i) {
      PointRow& row = book.rows()[i];
      if (row.finished()) {
        std::cout << fmt::format("sweep {}: point {} finished earlier: skipped\n", sweep.name,
                                 row.id);
      } else if (row.status == "queued" || row.status == "running") {
        std::cout << fmt::format("sweep {}: point {} is still {} in SLURM: not submitted again\n",
                                 sweep.name, row.id, row.status);
      } else {
        todo.push_back(i);
      }
    }
    if (!todo.empty()) {
      for (size_t i : todo) {
        book.rows()[i].status = "queued";
        book.rows()[i].reason.clear();
        book.rows()[i].log_path.clear();
      }
      write_point_files(book, todo);
      if (!sweep.slurm.gpus_per_task)
        for (size_t i : todo)
          if (shape_of(book, i).device == "auto") {
            std::cout << fmt::format(
                "sweep {}: point {} has launch.device: auto and the array asks for no GPUs: it "
                "runs on CPU unless the partition gives GPUs anyway; set slurm.gpus_per_task or "
                "launch.device: cuda for GPUs\n",
                sweep.name, sweep.points[i].id);
            break;
          }
      const auto sbatch = sbatch_options(book);
      const fs::path script = slurm_dir(book) / "array.sbatch";
      util::write_file_atomically(script.string(),
                                  array_script(book, sbatch, runner_program(options.executable)));
      std::vector<std::string> argv = {"sbatch", "--parsable"};
      std::string array = "--array=" + fmt::format("{}", fmt::join(todo, ","));
      if (options.parallel > 0) array += "%" + std::to_string(options.parallel);
      argv.push_back(array);
      argv.insert(argv.end(), sbatch.begin(), sbatch.end());
      argv.insert(argv.end(), sweep.slurm.extra_args.begin(), sweep.slurm.extra_args.end());
      argv.push_back(script.string());
      const std::string job = submit_to_sbatch(argv, "the array (" + array + ")", script.string());
      json ids = json::array(), tasks = json::object();
      for (size_t i : todo) {
        ids.push_back(sweep.points[i].id);
        tasks[std::to_string(i)] = sweep.points[i].id;
      }
      jobs.push_back(
          {{"job", job}, {"points", ids}, {"tasks", tasks}, {"submitted", std::time(nullptr)}});
      util::write_file_atomically((slurm_dir(book) / "jobs.json").string(), jobs.dump(2) + "\n");
      active += todo.size();
      std::cout << fmt::format("sweep {}: submitted {} point(s) as SLURM job {} ({}); logs in {}\n",
                               sweep.name, todo.size(), job, array,
                               (slurm_dir(book) / "logs").string());
    }
  }

  if (options.wait && active > 0) {
    // Ctrl-C stops the waiting, not the jobs: SLURM keeps running them.
    const util::SignalCatcher stop_waiting;
    std::map<std::string, std::string> shown;
    while (active > 0 && !stop_waiting.caught()) {
      for (int k = 0; k < static_cast<int>(options.poll_seconds * 10) && !stop_waiting.caught();
           ++k)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stop_waiting.caught()) break;
      const auto now_active = refresh_rows(book, jobs, grace, /*waiting=*/true, problem);
      if (!now_active) {  // slurmctld busy: ask again at the next poll
        if (!problem.empty())
          std::cout << fmt::format("sweep {}: squeue: {} (asking again)\n", sweep.name, problem);
        problem.clear();
        continue;
      }
      active = *now_active;
      for (size_t i = 0; i < book.rows().size(); ++i) {
        const PointRow& row = book.rows()[i];
        if (shown[row.id] == row.status) continue;
        shown[row.id] = row.status;
        std::cout << fmt::format("sweep {}: point {} {}\n", sweep.name, row.id,
                                 book.point_result(i))
                  << std::flush;
      }
    }
    if (stop_waiting.caught()) {
      book.write_summary();
      std::cout << fmt::format(
          "sweep {}: stopped waiting; SLURM job {} keeps running. Later: runner sweep {} "
          "--summary (or scancel {})\n",
          sweep.name, jobs.back().at("job").get<std::string>(), options.sweep_file,
          jobs.back().at("job").get<std::string>());
      return 130;
    }
  }
  book.write_summary();
  if (active > 0) {
    book.print_table();  // what finished so far; --summary prints it again when all have
    std::cout << fmt::format(
        "sweep {}: {} point(s) still queued or running (squeue --me); when they end: runner "
        "sweep {} --summary\n",
        sweep.name, active, options.sweep_file);
    const bool failed = std::any_of(book.rows().begin(), book.rows().end(),
                                    [](const PointRow& r) { return r.status == "failed"; });
    return failed ? 1 : 0;
  }
  return book.finish();
}

}  // namespace runner::sweep
