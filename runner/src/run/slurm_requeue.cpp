#include "run/slurm_requeue.hpp"

#include <cstdlib>
#include <filesystem>

#include "config/experiment.hpp"
#include "run/run_folder.hpp"
#include "util/child_process.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::optional<RequeuedJob> requeued_job(const config::Experiment& e) {
  if (!e.options.launch.slurm_requeue) return std::nullopt;
  RequeuedJob job;
  job.job_id = env_or_empty("SLURM_JOB_ID");
  job.restart_count = std::atoi(env_or_empty("SLURM_RESTART_COUNT").c_str());
  if (job.job_id.empty() || job.restart_count <= 0) return std::nullopt;
  job.run_dir = run_folder_to_continue(e, "slurm_job_id", job.job_id);
  if (job.run_dir.empty() || !fs::exists(fs::path(job.run_dir) / "config.yaml"))
    return std::nullopt;
  job.resume = fs::exists(fs::path(job.run_dir) / "checkpoints" / "last.pt");
  // A timestamped folder that saved nothing is left as it is: the job starts a new one.
  if (!job.resume && !e.options.output.run_dir) return std::nullopt;
  return job;
}

std::string requeue_this_job() {
  const std::string job = env_or_empty("SLURM_JOB_ID");
  if (job.empty()) return "SLURM_JOB_ID is not set: this is no SLURM job";
  const util::CommandResult result = util::run_command({"scontrol", "requeue", job});
  if (result.exit_code == 0) return "";
  std::string output = result.output;
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  if (const auto newline = output.rfind('\n'); newline != std::string::npos)
    output = output.substr(newline + 1);
  return "scontrol requeue " + job + " " +
         (result.exit_code == 127 ? std::string("could not be run (is scontrol on PATH?)")
                                  : "exited with code " + std::to_string(result.exit_code)) +
         (output.empty() ? "" : ": " + output);
}

}  // namespace runner::run
