#pragma once
// A run's summary.json as its readers need it (sweeps, `runner report`, the comparison page):
// whether the run finished, and the words for how it ended. Torch-free.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace runner::output {

/// The run's summary.json; an empty object when it is missing or unreadable.
nlohmann::json read_summary(const std::filesystem::path& run_dir);

/// Whether a summary says the run finished: "status": "finished", or no status at all (written
/// before runs recorded how they ended). An interrupted or failed run has not finished.
bool summary_says_finished(const nlohmann::json& summary);

/// Records in `run_dir` that the run failed for `reason` (what runner's launcher saw end a rank
/// other than 0; the main rank often saw only a broken connection): summary.json's status and
/// error, the main rank's own error kept as error_on_rank0, and report.html again. A finished
/// run is left as it is. Best effort: never throws (the console already has the report).
void record_rank_failure(const std::filesystem::path& run_dir, const std::string& reason);

/// How the run ended, for a report's badge: "finished", "interrupted by SIGINT at ...",
/// "failed: ...", or "unfinished (no summary.json)".
std::string run_status_text(const nlohmann::json& summary);

}  // namespace runner::output
