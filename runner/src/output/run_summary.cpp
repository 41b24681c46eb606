#include "output/run_summary.hpp"

#include <fstream>

#include "output/run_report.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {

nlohmann::json read_summary(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "summary.json");
  if (!in) return nlohmann::json::object();
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return summary.is_object() ? summary : nlohmann::json::object();
}

bool summary_says_finished(const nlohmann::json& summary) {
  if (!summary.is_object() || summary.empty()) return false;
  const auto status = summary.find("status");
  return status == summary.end() || *status == "finished";
}

void record_rank_failure(const std::filesystem::path& run_dir, const std::string& reason) {
  try {
    nlohmann::json summary = read_summary(run_dir);
    if (summary.value("status", "") == "finished") return;
    if (summary.contains("error") && summary["error"] != reason)
      summary["error_on_rank0"] = summary["error"];
    summary["status"] = "failed";
    summary["error"] = reason;
    summary["run_dir"] = run_dir.string();
    util::write_file_atomically((run_dir / "summary.json").string(), summary.dump(2) + "\n");
    write_run_report(run_dir, run_status_text(summary));
  } catch (const std::exception&) {
    // Best effort: the console already has the launcher's report.
  }
}

std::string run_status_text(const nlohmann::json& summary) {
  if (!summary.is_object() || summary.empty()) return "unfinished (no summary.json)";
  const std::string status = summary.value("status", "finished");
  if (status == "interrupted")
    return "interrupted by " + summary.value("signal", std::string("a signal")) + " at " +
           summary.value("stopped_at", std::string("?")) + ": continue with " +
           summary.value("resume_command", std::string("runner run --resume RUN_DIR"));
  if (status == "requeued")
    return "requeued by SLURM (" + summary.value("signal", std::string("SIGUSR1")) + ") at " +
           summary.value("stopped_at", std::string("?")) + ": the requeued job continues it, or " +
           summary.value("resume_command", std::string("runner run --resume RUN_DIR"));
  if (status == "failed") return "failed: " + summary.value("error", std::string("?"));
  if (status == "pruned" && summary.contains("pruned") && summary.at("pruned").is_object())
    return "pruned after epoch " + summary.at("pruned").value("epoch", nlohmann::json(0)).dump() +
           ": " + summary.at("pruned").value("reason", std::string("?"));
  return status;
}

}  // namespace runner::output
