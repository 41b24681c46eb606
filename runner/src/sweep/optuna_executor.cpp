#include "sweep/optuna_executor.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/experiment.hpp"
#include "models/timm_import.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"
#include "runner_optuna_bridge.hpp"
#include "sweep/gpu_pool.hpp"
#include "train/trial_reports.hpp"
#include "util/atomic_file.hpp"
#include "util/child_process.hpp"
#include "util/line_process.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The study's direction: train.best.metric's, as the run judges it (runner's metrics: loss is
// lower-better, the others higher-better).
std::string direction_of(const config::Experiment& base) {
  const config::BestOptions& best = base.options.train.best;
  const std::string mode =
      best.mode != "auto" ? best.mode : (best.metric == "loss" ? "min" : "max");
  return mode == "min" ? "minimize" : "maximize";
}

// The study, through the bridge: a request a line, its answer; a refusal is one ConfigError.
class Study {
 public:
  explicit Study(const std::string& sweep_name)
      : name_(sweep_name), bridge_({models::timm_python(), "-c", kOptunaBridge}) {}

  json ask(const json& request) {
    std::string line;
    try {
      line = bridge_.ask(request.dump());
    } catch (const Error& error) {
      throw ConfigError("sweep " + name_ + ": Optuna's bridge: " + error.what() +
                        " (is the project's venv there? run `make deps`, or set RUNNER_PYTHON)");
    }
    const json answer = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!answer.is_object())
      throw ConfigError("sweep " + name_ + ": Optuna's bridge said: " + line);
    if (!answer.value("ok", false))
      throw ConfigError("sweep " + name_ + ": optuna: " + answer.value("error", std::string("?")));
    return answer;
  }

 private:
  std::string name_;
  util::LineProcess bridge_;
};

// A trial as a sweep point: the sweep's set (and --set), then the trial's parameters.
SweepPoint trial_point(const Sweep& sweep, const std::string& id, const json& params) {
  SweepPoint point;
  point.id = id;
  point.overrides = sweep.set_overrides;
  for (const auto& [key, value] : params.items())
    point.overrides.push_back(override_text(key, value));
  point.values = params;
  point.experiment = config::load_experiment(sweep.base_path, point.overrides);
  return point;
}

struct RunningTrial {
  size_t point = 0;
  size_t child = 0;
  int number = 0;
  std::vector<int> gpus;     ///< the GPUs it took from the pool
  std::set<int64_t> judged;  ///< epochs the study has judged
};

// What a listing of the study's trials does to the book: at the sweep's start (results of
// earlier commands said, a trial left running adopted or waited for), while it runs (a trial
// whose command died adopted; other workers' trials as rows), or rows only (--summary).
enum class Listing { kOpen, kAdopt, kRows };

class OptunaSweep {
 public:
  OptunaSweep(SweepBook& book, const OptunaExecutorOptions& options)
      : book_(book),
        sweep_(book.sweep()),
        options_(options),
        study_(sweep_.name),
        base_(config::load_experiment(sweep_.base_path, sweep_.set_overrides)),
        gpus_(options.gpu_count) {}

  int run();
  int summarize();

 private:
  void open();
  /// The study's trials into the book, as `how` says.
  void take_listing(Listing how);
  /// The book's point of a trial, added the first time; nullopt when the base no longer takes
  /// its settings (the study keeps the trial).
  std::optional<size_t> point_of(const std::string& id, const json& params);
  /// The study's state of trial `number` now ("running", "complete", "pruned", "fail").
  std::string state_of(int number);
  bool start_next(util::Supervisor& supervisor);
  /// Starts claimed trial `number` as point i; false (it waits in adopted_) while the GPUs it
  /// needs are taken.
  bool start(util::Supervisor& supervisor, size_t i, int number);
  void judge_epochs(RunningTrial& r);
  void finish(const RunningTrial& r, const util::ChildExit& exit);
  /// summary.csv/md with every trial of the study (other workers' too), as it stands.
  void write_summary();
  /// The best trial's settings and the epochs the search spent, against every trial trained to
  /// its end.
  void say_outcome() const;
  std::string reports_of(size_t i) const { return (book_.run_dir(i) / "trial").string(); }

  SweepBook& book_;
  const Sweep& sweep_;
  OptunaExecutorOptions options_;
  Study study_;
  const config::Experiment base_;  ///< the base with the sweep's set: the trials' direction, shape
  std::map<std::string, size_t> points_;         ///< point id -> the book's index
  std::set<int> mine_;                           ///< trials this command runs or ran
  std::vector<std::pair<size_t, int>> adopted_;  ///< trials left running by a command that died
  bool exhausted_ = false;
  std::chrono::steady_clock::time_point last_listing_{};
  std::vector<RunningTrial> running_;
  GpuPool gpus_;
  int base_gpus_ = 0;  ///< the GPUs a trial of the base's shape takes
};

std::string OptunaSweep::state_of(int number) {
  const json listing = study_.ask({{"op", "trials"}});  // kept: the loop reads into it
  for (const json& trial : listing.at("trials"))
    if (trial.at("number") == number) return trial.at("state").get<std::string>();
  return "fail";
}

void OptunaSweep::open() {
  const json& doc = sweep_.doc;
  study_.ask({{"op", "open"},
              {"study", sweep_.name},
              {"journal", (book_.dir() / "study.journal").string()},
              {"storage", doc.at("storage")},
              {"direction", direction_of(base_)},
              {"sampler", doc.at("sampler")},
              {"pruner", doc.at("pruner")},
              {"space", doc.at("distributions")}});
}

std::optional<size_t> OptunaSweep::point_of(const std::string& id, const json& params) {
  if (const auto found = points_.find(id); found != points_.end()) return found->second;
  SweepPoint p;
  try {
    p = trial_point(sweep_, id, params);
  } catch (const ConfigError&) {
    return std::nullopt;  // an earlier trial's settings the base no longer takes
  }
  const size_t i = book_.add_point(std::move(p));
  points_[id] = i;
  return i;
}

void OptunaSweep::take_listing(Listing how) {
  last_listing_ = std::chrono::steady_clock::now();
  const json listing = study_.ask({{"op", "trials"}});  // kept: the loop reads into it
  for (const json& trial : listing.at("trials")) {
    const int number = trial.at("number").get<int>();
    const std::string id = trial.value("point", json()).is_string()
                               ? trial.at("point").get<std::string>()
                               : fmt::format("trial-{:04d}", number);
    const std::optional<size_t> found = point_of(id, trial.at("params"));
    if (!found) continue;
    const size_t i = *found;
    PointRow& row = book_.rows()[i];
    row.epochs_run = trial.value("epochs", int64_t{0});
    row.epochs_planned = sweep_.points[i].experiment.options.train.epochs;
    if (mine_.count(number)) continue;  // this command says how it went
    std::string state = trial.at("state").get<std::string>();
    if (state == "running") {
      if (how == Listing::kRows) {
        row.status = "running";
        continue;
      }
      if (!book_.claim_point(i)) {
        if (how == Listing::kAdopt || options_.worker) {
          row.status = "running";  // another worker's (or another sweep's on the study)
          continue;
        }
        // Its run is a stopped command's, still saving: wait for it, then adopt it where it
        // stopped unfinished.
        std::cout << fmt::format("sweep {}: trial {} is running in {}: waiting for it\n",
                                 sweep_.name, id, book_.point_holder(i))
                  << std::flush;
        book_.wait_for_point(i);
      }
      // Held now; whoever ran it last tells the study before letting go: ask again.
      state = state_of(number);
      if (state == "running") {
        adopted_.emplace_back(i, number);
        mine_.insert(number);
        study_.ask({{"op", "adopt"}, {"number", number}});
        row.status = "pending";
        continue;
      }
      book_.release_point(i);
    }
    const json summary = output::read_summary(book_.run_dir(i));
    if (!summary.empty()) fill_from_summary(row, summary);
    const std::string before = row.status;
    row.status = state == "complete" ? (how == Listing::kRows ? "done" : "done (earlier run)")
                 : state == "pruned" ? output::run_status_text(summary)
                                     : "failed";
    if (state == "fail") row.reason = output::run_status_text(summary);
    if (how == Listing::kOpen && before != row.status)
      std::cout << fmt::format("sweep {}: trial {} {} earlier: {}\n", sweep_.name, id, state,
                               book_.point_result(i));
  }
}

bool OptunaSweep::start_next(util::Supervisor& supervisor) {
  // A trial whose command died (a worker's node lost) is taken up before a new one is asked;
  // once the study has no trial left to ask, the study is looked at every few seconds.
  if (adopted_.empty() &&
      (!exhausted_ || std::chrono::steady_clock::now() - last_listing_ > std::chrono::seconds(5)))
    take_listing(Listing::kAdopt);
  if (!adopted_.empty()) {
    const auto [i, number] = adopted_.back();
    adopted_.pop_back();
    return start(supervisor, i, number);
  }
  if (exhausted_) return false;
  if (gpus_.free_count() < base_gpus_) return false;  // asked now, it would wait for GPUs
  const json asked = study_.ask(
      {{"op", "ask"}, {"trials", sweep_.doc.at("trials")}, {"point", "trial-{number:04d}"}});
  const int number = asked.at("number").get<int>();
  if (number < 0) {
    exhausted_ = true;
    return false;
  }
  const std::string id = asked.at("point").get<std::string>();
  SweepPoint point;
  try {
    point = trial_point(sweep_, id, asked.at("params"));
  } catch (const ConfigError& error) {  // the trial's own config error: its FAIL, not ours
    study_.ask({{"op", "tell"}, {"number", number}, {"state", "fail"}});
    mine_.insert(number);
    SweepPoint failed;
    failed.id = id;
    failed.values = asked.at("params");
    failed.experiment = base_;
    const size_t i = book_.add_point(std::move(failed));
    points_[id] = i;
    book_.record_failure(i, error.what());
    std::cout << fmt::format("sweep {}: trial {} {}\n", sweep_.name, id, book_.point_result(i));
    return true;
  }
  const auto known = points_.find(id);
  const size_t i = known != points_.end() ? known->second : book_.add_point(std::move(point));
  points_[id] = i;
  if (!book_.claim_point(i)) {
    // Another worker listed the study between our ask and this claim and took the trial up
    // (it runs it and tells the study): leave it to them and ask again.
    book_.rows()[i].status = "running";
    return true;
  }
  mine_.insert(number);
  start(supervisor, i, number);  // where its GPUs are taken, it waits in adopted_
  return true;
}

bool OptunaSweep::start(util::Supervisor& supervisor, size_t i, int number) {
  // Its own GPUs (a slice of the machine's, as points side by side get) or its share of cores.
  const PointNeeds needs = needs_beside_others(sweep_.points[i], options_.gpu_count,
                                               options_.cpu_cores, options_.parallel);
  std::vector<std::string> extra = needs.overrides;
  std::vector<int> gpus;
  if (needs.gpus > 0) {
    const auto taken = gpus_.take(needs.gpus);
    if (!taken) {  // wait for a running trial to give its GPUs back
      adopted_.emplace_back(i, number);
      return false;
    }
    gpus = *taken;
    extra.push_back("launch.gpu_ids=" + gpu_list(gpus));
  }
  const PointStart begin = book_.prepare_point(i);
  if (!begin.note.empty()) std::cout << begin.note << "\n";
  std::error_code ec;
  fs::remove_all(reports_of(i), ec);  // an earlier attempt's epochs are judged again as it runs
  const std::string log = (book_.run_dir(i) / "output.log").string();
  util::ChildSpec spec;
  spec.argv = {options_.executable};
  const auto args = book_.run_args(i, extra, begin.resume);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  auto variables = book_.point_variables(i);
  variables[train::kTrialReportsVar] = reports_of(i);
  spec.environment = util::environment_with(variables);
  spec.inherited_fd = book_.point_lock_fd(i);
  spec.die_with_us = true;
  spec.output = util::ChildSpec::Output::kLogFile;
  spec.log_path = log;
  const size_t child = supervisor.start(spec);
  book_.rows()[i].status = "running";
  book_.rows()[i].log_path = log;
  running_.push_back({i, child, number, gpus, {}});
  std::cout << fmt::format("sweep {}: trial {} started: {} (output: {})\n", sweep_.name,
                           book_.sweep().points[i].id, book_.sweep().points[i].values.dump(), log)
            << std::flush;
  return true;
}

// The epochs the trial's run has reported since: each to the study's pruner, its decision
// written back for the waiting run.
void OptunaSweep::judge_epochs(RunningTrial& r) {
  const fs::path dir = reports_of(r.point);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("epoch-", 0) != 0 || entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json report = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!report.is_object() || !report.contains("epoch")) continue;
    const int64_t epoch = report.at("epoch").get<int64_t>();
    if (r.judged.count(epoch)) continue;
    const json answer = study_.ask({{"op", "report"},
                                    {"number", r.number},
                                    {"step", epoch},
                                    {"value", report.value("value", json())}});
    const bool prune = answer.value("prune", false);
    const std::string why = fmt::format("Optuna's {} pruner after epoch {}",
                                        sweep_.doc.at("pruner").value("name", "?"), epoch);
    util::write_file_atomically((dir / ("epoch-" + std::to_string(epoch) + ".decision")).string(),
                                prune ? "prune\n" + why + "\n" : "continue\n");
    r.judged.insert(epoch);
  }
}

void OptunaSweep::finish(const RunningTrial& r, const util::ChildExit& exit) {
  const json summary = output::read_summary(book_.run_dir(r.point));
  const std::string status = summary.value("status", "");
  PointRow& row = book_.rows()[r.point];
  if (exit.exit_code == 0 && status == "pruned") {
    study_.ask({{"op", "tell"}, {"number", r.number}, {"state", "pruned"}});
    fill_from_summary(row, summary);
    row.status = output::run_status_text(summary);
    return;
  }
  book_.record_exit(r.point, exit);
  const bool complete = row.status == "done" && row.best_value.has_value();
  study_.ask({{"op", "tell"},
              {"number", r.number},
              {"state", complete ? "complete" : "fail"},
              {"value", complete ? json(*row.best_value) : json()}});
}

int OptunaSweep::run() {
  SweepPoint base;  // the trials' shape: refused here when it needs more GPUs than there are
  base.id = "base";
  base.experiment = base_;
  base_gpus_ =
      needs_beside_others(base, options_.gpu_count, options_.cpu_cores, options_.parallel).gpus;
  open();
  take_listing(Listing::kOpen);
  util::Supervisor supervisor;
  util::SignalCatcher signals;
  bool interrupted = false;
  for (;;) {
    while (!interrupted && static_cast<int>(running_.size()) < options_.parallel &&
           start_next(supervisor)) {
    }
    if (running_.empty()) break;
    // Every 10 ms: a trial waits for its epoch's decision no longer than that (and the study).
    const std::vector<size_t> ended = supervisor.wait(10, &signals);
    for (const int signo : signals.take()) {
      interrupted = true;
      supervisor.signal_all(signo);
    }
    for (RunningTrial& r : running_) judge_epochs(r);
    for (const size_t child : ended) {
      const auto it = std::find_if(running_.begin(), running_.end(),
                                   [&](const RunningTrial& r) { return r.child == child; });
      const RunningTrial done = *it;
      running_.erase(it);
      gpus_.give_back(done.gpus);
      if (interrupted) {  // the study keeps it running: the next command continues it
        book_.release_point(done.point);
        book_.rows()[done.point].status = "pending";
        continue;
      }
      // The study hears how it ended before its folder is let go: a worker that claims the
      // folder next finds the trial told, not running.
      finish(done, supervisor.exit(child));
      book_.release_point(done.point);
      std::cout << fmt::format("sweep {}: trial {} {}\n", sweep_.name,
                               book_.sweep().points[done.point].id, book_.point_result(done.point))
                << std::flush;
      write_summary();
    }
  }
  write_summary();
  if (interrupted) {
    std::cout << fmt::format(
        "sweep {}: interrupted; the trials that were running are stopped with their last.pt; "
        "run the same command again to continue the study\n",
        sweep_.name);
    return 130;
  }
  say_outcome();
  return book_.finish();
}

int OptunaSweep::summarize() {
  open();
  take_listing(Listing::kRows);
  book_.write_summary();
  say_outcome();
  return book_.finish();
}

void OptunaSweep::write_summary() {
  take_listing(Listing::kRows);
  book_.write_summary();
}

void OptunaSweep::say_outcome() const {
  const std::vector<PointRow>& rows = book_.rows();
  int64_t spent = 0, full = 0;
  for (const PointRow& row : rows)
    if (row.epochs_run) {
      spent += *row.epochs_run;
      full += row.epochs_planned;
    }
  const std::vector<PointRow> order = ranked(rows);
  if (!order.empty() && order.front().best_value) {
    const PointRow& best = order.front();
    const auto it = points_.find(best.id);
    const json settings = it != points_.end() ? sweep_.points[it->second].values : json::object();
    std::vector<std::string> parts;
    for (const auto& [key, value] : settings.items()) parts.push_back(key + "=" + value.dump());
    std::cout << fmt::format("sweep {}: best trial {}: {} {:.4f} with {}\n", sweep_.name, best.id,
                             best.best_metric, *best.best_value, fmt::join(parts, ", "));
  }
  if (full > 0)
    std::cout << fmt::format(
        "sweep {}: {} epoch(s) trained over {} trial(s), {:.0f}% of the {} that training each to "
        "its last epoch takes\n",
        sweep_.name, spent, rows.size(), 100.0 * static_cast<double>(spent) / full, full);
}

}  // namespace

void check_optuna_importable() {
  const std::string python = models::timm_python();
  const util::CommandResult r = util::run_command({python, "-c", "import optuna"});
  if (r.exit_code != 0)
    throw ConfigError("search: optuna: " + python +
                      " cannot import optuna: run `make deps` (it installs the project's venv "
                      "with Optuna) or set RUNNER_PYTHON to a Python that has it");
}

void check_optuna_storage(const Sweep& sweep) {
  const json& storage = sweep.doc.at("storage");
  if (!storage.is_string()) return;  // the sweep folder's journal file
  try {
    Study(sweep.name).ask({{"op", "probe"}, {"storage", storage}});
  } catch (const ConfigError& error) {
    throw ConfigError(sweep.marks.value_mark("/storage").to_string() +
                      ": storage: " + error.what() +
                      " (is the server up and reachable from here? the URL is SQLAlchemy's: "
                      "postgresql://user[:password]@host[:port]/database)");
  }
}

int run_optuna(SweepBook& book, const OptunaExecutorOptions& options) {
  ::signal(SIGCHLD, SIG_DFL);
  OptunaSweep sweep(book, options);
  return options.summary_only ? sweep.summarize() : sweep.run();
}

}  // namespace runner::sweep
