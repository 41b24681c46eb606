#pragma once
// A sweep's results, one row per point, as a console table, CSV, Markdown and a figure.
// Torch-free.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::sweep {

/// One point of a sweep: what it asked for and, once run, what it measured.
struct PointRow {
  std::string id;  ///< the point's id (its overrides in short)
  std::string status =
      "pending";       ///< pending, running, done, "done (earlier run)" (resumed), failed
  std::string reason;  ///< why it failed: exit code and last error line
  int processes = 1;
  std::string batch_size;    ///< per process ("auto" until the run resolves it)
  int64_t global_batch = 0;  ///< processes x batch x accumulation; 0: unknown
  std::string precision;
  std::optional<double> images_per_s, epoch_seconds, peak_host_mib, peak_gpu_mib;
  nlohmann::json val_metrics = nlohmann::json::object();  ///< final validation metrics
  std::optional<double> best_value;  ///< train.best.metric of the best checkpoint
  std::string best_metric;           ///< that metric's name
  std::string best_mode = "max";     ///< max or min: which best_value ranks first
  std::string log_path;              ///< where the point's output went, for a failure's reason
  /// A search's trial: the epochs it trained (judged by the study) of the epochs it had.
  std::optional<int64_t> epochs_run;
  int64_t epochs_planned = 0;

  bool finished() const { return status == "done" || status == "done (earlier run)"; }
};

/// Fills the measured fields of `row` from a run's summary.json (as run_experiment writes it).
void fill_from_summary(PointRow& row, const nlohmann::json& summary);

/// The rows ordered by best_value (best first, in each row's best_mode); rows without one keep
/// their order after the ranked ones.
std::vector<PointRow> ranked(const std::vector<PointRow>& rows);

/// Column names then one text row per point, in the order of `rows`. The "rank" column numbers
/// the points with a best value, 1 for the best.
std::vector<std::vector<std::string>> table_cells(const std::vector<PointRow>& rows);

/// The table aligned for a terminal.
std::string console_table(const std::vector<PointRow>& rows);
/// The table as CSV (RFC 4180 quoting).
std::string csv_table(const std::vector<PointRow>& rows);
/// The table as a GitHub Markdown table.
std::string markdown_table(const std::vector<PointRow>& rows);

/// Writes summary.csv and summary.md into `dir` (the sweep's report.html charts the points).
void write_summary(const std::filesystem::path& dir, const std::string& title,
                   const std::vector<PointRow>& rows);

/// The name of the "best" column: "best <metric>".
std::string best_column(const std::vector<PointRow>& rows);

}  // namespace runner::sweep
