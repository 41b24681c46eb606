#pragma once
// A sweep's bookkeeping, the same for every executor: each point's row (what it asks for, then
// what it measured or why it failed), its folder, results of earlier runs (resume), and the
// summary files. Torch-free.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sweep/point_start.hpp"
#include "sweep/summary_table.hpp"
#include "sweep/sweep_file.hpp"
#include "util/child_process.hpp"
#include "util/folder_lock.hpp"

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
  /// Adds a point (a trial a search asked for) with its planned row; returns its index.
  size_t add_point(sweep::SweepPoint point);
  /// Removes every point's folder (`runner sweep --rerun`): the sweep runs from scratch.
  void forget_earlier_results();
  /// Records how point i's run ended: done (its summary.json is read) or failed, with the exit
  /// and the error line of its output as the reason (also written to its failure.txt).
  void record_exit(size_t i, const util::ChildExit& exit);
  /// Records point i as failed for `reason` (written to its failure.txt).
  void record_failure(size_t i, const std::string& reason);
  /// Marks point i done with its results when its folder holds a finished run (`status`:
  /// "done (earlier run)", "done (by another command)"); returns whether it did.
  bool take_result(size_t i, const std::string& status);

  /// Claims point i for this command: holds its folder's lock (util/folder_lock) until
  /// release_point, and hands it to the point's run; false when another live command (a second
  /// sweep on this folder, a `runner run --resume` of the point) holds it.
  bool claim_point(size_t i);
  /// Who holds point i's folder, for the line that leaves the point to them.
  std::string point_holder(size_t i) const;
  /// Waits until no other command holds point i, then claims it.
  void wait_for_point(size_t i);
  /// Lets go of point i (its run, which inherited the lock, holds it while it lives).
  void release_point(size_t i);
  /// How claimed point i starts: an unfinished run with checkpoints/last.pt and the config the
  /// point has now continues (`runner run --resume`); else what an earlier attempt left is
  /// moved aside to <output>/<name>/<point-id>.old-<time>/ (never deleted) and it starts afresh.
  PointStart prepare_point(size_t i);

  /// `runner run` arguments of point i: the base, the point's overrides, then `extra` overrides
  /// (as --set), then its run folder; `resume`: `--resume` its folder with `extra`.
  std::vector<std::string> run_args(size_t i, const std::vector<std::string>& extra = {},
                                    bool resume = false) const;

  /// What point i's run tells its trackers (tags runner.sweep, runner.sweep_point, sweep.<key>):
  /// RUNNER_SWEEP, RUNNER_SWEEP_POINT and RUNNER_SWEEP_SETTINGS (its overrides as a JSON
  /// object), and the folder lock this command holds for it (util::kHeldLockVar).
  std::map<std::string, std::string> point_variables(size_t i) const;
  /// The descriptor of point i's held lock, for its run to inherit; -1 when none is held.
  int point_lock_fd(size_t i) const;

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

  sweep::Sweep sweep_;  ///< its points grow as a search asks for trials (add_point)
  std::filesystem::path dir_;
  std::vector<PointRow> rows_;
  std::map<size_t, util::FolderLock> locks_;  ///< the points this command holds
};

}  // namespace runner::sweep
