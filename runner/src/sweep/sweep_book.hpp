#pragma once
// A sweep's bookkeeping, the same for every executor: each point's row (what it asks for, then
// what it measured or why it failed), its folder, results of earlier runs (resume), and the
// summary files. Torch-free.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sweep/summary_table.hpp"
#include "sweep/sweep_file.hpp"
#include "util/child_process.hpp"

namespace runner::sweep {

class SweepBook {
 public:
  /// Plans a row per point of `sweep` (validated by sweep::load_sweep).
  explicit SweepBook(const sweep::Sweep& sweep);

  const sweep::Sweep& sweep() const { return sweep_; }
  /// <output>/<name>, absolute.
  const std::filesystem::path& dir() const { return dir_; }
  std::vector<PointRow>& rows() { return rows_; }
  const std::vector<PointRow>& rows() const { return rows_; }
  /// Point i's run folder: <output>/<name>/<point-id>, absolute.
  std::filesystem::path run_dir(size_t i) const;

  /// Marks every point whose folder holds a readable summary.json done with its results:
  /// "done (earlier run)" when this sweep goes on to run others (a resume), else "done";
  /// returns how many. A finished point whose saved config.yaml differs from what the point
  /// would run now (other overrides, an edited base file) is a ConfigError naming the first
  /// differing key: its results answer another question.
  size_t take_earlier_results(const std::string& status = "done (earlier run)");
  /// Removes every point's folder (`runner sweep --rerun`): the sweep runs from scratch.
  void forget_earlier_results();
  /// Records how point i's run ended: done (its summary.json is read) or failed, with the exit
  /// and the error line of its output as the reason (also written to its failure.txt).
  void record_exit(size_t i, const util::ChildExit& exit);
  /// Records point i as failed for `reason` (written to its failure.txt).
  void record_failure(size_t i, const std::string& reason);
  /// Removes point i's folder when a run left one without a result (it reruns from scratch);
  /// returns whether there was one.
  bool clear_unfinished(size_t i);

  /// `runner run` arguments of point i: the base, the point's overrides, then `extra` overrides
  /// (as --set), then its run folder.
  std::vector<std::string> run_args(size_t i, const std::vector<std::string>& extra = {}) const;

  /// What point i's run tells its trackers (tags runner.sweep, runner.sweep_point, sweep.<key>):
  /// RUNNER_SWEEP, RUNNER_SWEEP_POINT and RUNNER_SWEEP_SETTINGS (its overrides as a JSON object).
  std::map<std::string, std::string> point_variables(size_t i) const;

  /// Writes summary.csv/.md/.png (ranked first for random search), after every point.
  void write_summary() const;
  /// Prints the summary table: once, at the end (a point's end prints point_result()).
  void print_table() const;
  /// Point i's outcome in one line: "done: best accuracy 0.8125, 2100 img/s" or "failed: ...".
  std::string point_result(size_t i) const;
  /// Writes report.html (the points side by side), prints the table and the closing lines;
  /// returns 0 when every point finished, else 1.
  int finish() const;

 private:
  /// Throws ConfigError when point i's saved config.yaml differs from what it would run now.
  void check_same_config(size_t i) const;

  const sweep::Sweep& sweep_;
  std::filesystem::path dir_;
  std::vector<PointRow> rows_;
};

}  // namespace runner::sweep
