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

/// How the run ended, for a report's badge: "finished", "interrupted by SIGINT at ...",
/// "failed: ...", or "unfinished (no summary.json)".
std::string run_status_text(const nlohmann::json& summary);

}  // namespace runner::output
