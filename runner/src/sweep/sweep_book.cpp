#include "sweep/sweep_book.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/experiment_options.hpp"
#include "config/resume_plan.hpp"
#include "config/yaml_json.hpp"
#include "output/compare_report.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What the point asks for, before it runs (the summary.json of a finished run replaces it).
PointRow planned_row(const sweep::Sweep& sweep, const sweep::SweepPoint& point) {
  const config::ExperimentOptions& experiment = point.experiment.options;
  PointRow row;
  row.id = point.id;
  row.processes = config::world_processes(experiment.launch);
  const auto& batch = experiment.train.batch_size;
  row.batch_size = batch ? std::to_string(*batch) : "auto";
  if (batch)
    row.global_batch =
        config::global_batch(*batch, row.processes, experiment.train.grad_accum_steps);
  row.precision = config::precision_name(experiment.precision);
  return row;
}

}  // namespace

SweepBook::SweepBook(const sweep::Sweep& sweep)
    : sweep_(sweep), dir_(fs::absolute(fs::path(sweep.output) / sweep.name)) {
  for (const auto& p : sweep.points) rows_.push_back(planned_row(sweep, p));
}

size_t SweepBook::add_point(sweep::SweepPoint point) {
  sweep_.points.push_back(std::move(point));
  rows_.push_back(planned_row(sweep_, sweep_.points.back()));
  return rows_.size() - 1;
}

fs::path SweepBook::run_dir(size_t i) const { return dir_ / sweep_.points.at(i).id; }

size_t SweepBook::take_earlier_results(const std::string& status) {
  size_t found = 0;
  for (size_t i = 0; i < rows_.size(); ++i)
    if (take_result(i, status)) ++found;
  return found;
}

bool SweepBook::take_result(size_t i, const std::string& status) {
  // An interrupted or failed point runs again.
  const json s = output::read_summary(run_dir(i));
  if (!output::summary_says_finished(s)) return false;
  check_same_config(i);
  fill_from_summary(rows_[i], s);
  rows_[i].status = status;
  return true;
}

void SweepBook::check_same_config(size_t i) const {
  const auto change = changed_config(run_dir(i), sweep_.points.at(i).experiment.doc);
  if (!change) return;
  throw ConfigError("sweep " + sweep_.name + ": point " + sweep_.points.at(i).id +
                    " finished earlier with another config: " + change->key + " was " +
                    change->from.dump() + ", now " + change->to.dump() + " (" +
                    (run_dir(i) / "config.yaml").string() +
                    "); give the sweep another name or output folder, "
                    "or run it again with --rerun to replace its results");
}

bool SweepBook::claim_point(size_t i) {
  if (locks_.count(i)) return true;
  util::LockAttempt attempt =
      util::try_lock_folder(run_dir(i).string(), "runner sweep " + sweep_.path + " (point " +
                                                     sweep_.points.at(i).id + ")");
  if (!attempt.lock) return false;
  locks_.emplace(i, std::move(*attempt.lock));
  return true;
}

std::string SweepBook::point_holder(size_t i) const {
  const std::string holder = util::folder_lock_holder(run_dir(i).string());
  return holder.empty() ? "another command" : holder;
}

void SweepBook::wait_for_point(size_t i) {
  if (locks_.count(i)) return;
  locks_.emplace(i, util::wait_for_folder_lock(
                        run_dir(i).string(),
                        "runner sweep " + sweep_.path + " (point " + sweep_.points.at(i).id + ")"));
}

void SweepBook::release_point(size_t i) { locks_.erase(i); }

int SweepBook::point_lock_fd(size_t i) const {
  const auto it = locks_.find(i);
  return it == locks_.end() ? -1 : it->second.fd();
}

PointStart SweepBook::prepare_point(size_t i) {
  return start_point(run_dir(i), sweep_.points.at(i).experiment.doc,
                     "sweep " + sweep_.name + ": point " + sweep_.points.at(i).id);
}

void SweepBook::forget_earlier_results() {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (!fs::exists(run_dir(i))) continue;
    if (!claim_point(i))
      throw ConfigError("runner sweep --rerun: point " + sweep_.points.at(i).id + " (" +
                        run_dir(i).string() + ") is in use by " + point_holder(i) +
                        ": wait for that command to end (or stop it), then run this again");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(run_dir(i), ec))
      if (entry.path().filename() != util::kRunLockFile) fs::remove_all(entry.path());
  }
}

void SweepBook::record_exit(size_t i, const util::ChildExit& exit) {
  const json s = output::read_summary(run_dir(i));
  if (exit.exit_code == 0 && output::summary_says_finished(s)) {
    fill_from_summary(rows_[i], s);
    rows_[i].status = "done";
    return;
  }
  const std::string how = exit.signal ? fmt::format("killed by signal {}", exit.signal)
                                      : fmt::format("exit code {}", exit.exit_code);
  // The run's own account first (summary.json of a failed or interrupted run), then its output.
  std::string line = s.contains("status") ? output::run_status_text(s) : "";
  if (line.empty())
    line = exit.exit_code == 0 ? "no summary.json written" : util::last_error_line(exit.last_lines);
  record_failure(i, line.empty() ? how : how + ": " + line);
}

void SweepBook::record_failure(size_t i, const std::string& reason) {
  PointRow& row = rows_[i];
  row.status = "failed";
  row.reason = row.log_path.empty() ? reason : reason + " (log: " + row.log_path + ")";
  fs::create_directories(run_dir(i));
  std::ofstream(run_dir(i) / "failure.txt") << row.reason << "\n";
}

std::vector<std::string> SweepBook::run_args(size_t i, const std::vector<std::string>& extra,
                                             bool resume) const {
  if (resume) {
    std::vector<std::string> args = {"run", "--resume", run_dir(i).string()};
    for (const auto& o : extra) args.insert(args.end(), {"--set", o});
    return args;
  }
  std::vector<std::string> args = {"run", fs::absolute(sweep_.base_path).string()};
  for (const auto& o : sweep_.points.at(i).overrides) args.insert(args.end(), {"--set", o});
  for (const auto& o : extra) args.insert(args.end(), {"--set", o});
  args.insert(args.end(), {"--set", "output.run_dir=" + run_dir(i).string()});
  return args;
}

std::map<std::string, std::string> SweepBook::point_variables(size_t i) const {
  const SweepPoint& point = sweep_.points.at(i);
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& o : point.overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos) continue;
    // The value, not its JSON text ("adam", not "\"adam\""): a tag reads as the setting.
    const json value = json::parse(o.substr(eq + 1), nullptr, /*allow_exceptions=*/false);
    settings[o.substr(0, eq)] = value.is_discarded() ? json(o.substr(eq + 1)) : value;
  }
  std::map<std::string, std::string> variables = {{"RUNNER_SWEEP", sweep_.name},
                                                  {"RUNNER_SWEEP_POINT", point.id},
                                                  {"RUNNER_SWEEP_SETTINGS", settings.dump()}};
  if (const auto it = locks_.find(i); it != locks_.end())
    variables[util::kHeldLockVar] = util::handed_lock_value(it->second);
  return variables;
}

void SweepBook::write_summary() const {
  const std::vector<PointRow> shown = sweep_.search != "grid" ? ranked(rows_) : rows_;
  sweep::write_summary(dir_, "sweep " + sweep_.name, shown);
}

void SweepBook::print_table() const {
  const std::vector<PointRow> shown = sweep_.search != "grid" ? ranked(rows_) : rows_;
  std::cout << "\n" << console_table(shown) << std::flush;
}

std::string SweepBook::point_result(size_t i) const {
  const PointRow& row = rows_.at(i);
  if (row.status == "failed") return "failed: " + row.reason;
  std::string text = row.status;
  std::vector<std::string> figures;
  if (row.best_value)
    figures.push_back(fmt::format("best {} {:.4f}", row.best_metric, *row.best_value));
  if (row.images_per_s) figures.push_back(fmt::format("{:.0f} img/s", *row.images_per_s));
  if (!figures.empty()) text += ": " + fmt::format("{}", fmt::join(figures, ", "));
  return text;
}

int SweepBook::finish() const {
  // report.html: the points side by side, ranked as the summary table ranks them.
  std::vector<fs::path> point_dirs;
  output::ComparisonOptions page;
  page.title = fmt::format("sweep {}: {} points", sweep_.name, rows_.size());
  for (const PointRow& row : ranked(rows_)) {
    if (fs::exists(dir_ / row.id / "metrics.jsonl")) point_dirs.push_back(dir_ / row.id);
    if (page.ranked_by.empty()) page.ranked_by = row.best_metric;
  }
  if (!point_dirs.empty()) {
    try {
      output::write_comparison_report(point_dirs, dir_ / "report.html", page);
    } catch (const std::exception& e) {
      std::cout << fmt::format("sweep {}: could not write report.html: {}\n", sweep_.name,
                               e.what());
    }
  }
  const auto count = [&](const char* status) {
    return std::count_if(rows_.begin(), rows_.end(),
                         [&](const PointRow& r) { return r.status == status; });
  };
  const auto failed = count("failed");
  print_table();
  std::cout << fmt::format("sweep {}: {} point(s), {} failed; summary in {}\n", sweep_.name,
                           rows_.size(), failed, dir_.string());
  if (failed)
    std::cout << fmt::format(
        "sweep {}: exit code 1 because {} point(s) failed (see the status column)\n", sweep_.name,
        failed);
  return failed ? 1 : 0;
}

}  // namespace runner::sweep
