#pragma once
// report.html: one self-contained page per run (inline CSS and SVG, images as data URIs; no
// network), built from the files a run leaves in its directory: config.yaml, command.txt,
// env.json, metrics.jsonl (per step, per epoch, and the best epoch's confusion matrix),
// summary.json and best_examples.json. A failed or stopped run gets a page with what it has.

#include <filesystem>
#include <string>
#include <vector>

namespace runner::output {

/// Writes `run_dir`/report.html. `status`: "finished", "stopped: ..." or "failed: ...".
/// Throws runner::Error when the file cannot be written.
void write_run_report(const std::filesystem::path& run_dir, const std::string& status);

struct ComparisonOptions {
  std::string title;  ///< the page's heading; empty: "N runs side by side"
  /// Non-empty: the runs come ranked by this metric, best first (a sweep's points, in its
  /// summary's order); the page numbers them and says so.
  std::string ranked_by;
};

/// One page comparing runs side by side at `output`: each run named by its experiment and the
/// settings that differ between the runs (their own columns too), the summary figures, and
/// overlaid curves.
void write_comparison_report(const std::vector<std::filesystem::path>& run_dirs,
                             const std::filesystem::path& output,
                             const ComparisonOptions& options = {});

}  // namespace runner::output
