#pragma once
// compare.html (`runner report A B ...`) and a sweep's report.html: runs side by side, for 2 to
// 50 of them. Each run is named by the settings that differ (run_naming.hpp); runs that differ
// only by their seed are drawn as their group's mean with a min-max band (switchable to single
// runs); two charts, each with a selector of every metric the runs recorded; a sortable table
// with the best run highlighted, the differing settings first and the shared ones folded.

#include <filesystem>
#include <string>
#include <vector>

namespace runner::output {

struct ComparisonOptions {
  std::string title;  ///< the page's heading; empty: "N runs side by side"
  /// Non-empty: the runs come ranked by this metric, best first (a sweep's points, in its
  /// summary's order); the page numbers them and says so.
  std::string ranked_by;
};

/// Writes the page to `output` (parent folders created). Throws runner::Error when the file
/// cannot be written.
void write_comparison_report(const std::vector<std::filesystem::path>& run_dirs,
                             const std::filesystem::path& output,
                             const ComparisonOptions& options = {});

}  // namespace runner::output
