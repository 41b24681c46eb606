#pragma once
// What `runner run --resume` continues with. The run folder is the source of truth: its saved
// config.yaml (plus the changes earlier resumes recorded in run.json) is the config the run was
// trained with; a command line may change only what a stopped run can take (train longer,
// relaunch elsewhere, log differently), and anything else is refused with the first key that
// would change.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.hpp"

namespace runner::config {

/// One key a resume changes: its dotted path and the values before and after.
struct KeyChange {
  std::string key;
  nlohmann::json from, to;
};

struct ResumePlan {
  std::string run_dir;
  Experiment experiment;           ///< what continues (relative paths: the run's config folder)
  std::vector<KeyChange> changes;  ///< against what the run last ran with
};

/// Every leaf where `to` differs from `from`, in key order (a list counts as one value).
std::vector<KeyChange> differing_keys(const nlohmann::json& from, const nlohmann::json& to);

/// Keys (dotted, prefixes ending in '.') a resumed run may change.
const std::vector<std::string>& keys_a_resume_may_change();
/// The same as one line for people ("train.epochs, ..., launch.*, ..."): the refusal, `runner
/// run --help` and docs/resume-and-interrupts.md (the docs test compares) say this list.
std::string keys_a_resume_may_change_text();

/// The newest run folder of experiment `name` under `root` that has checkpoints/last.pt;
/// throws ConfigError saying where it looked.
std::string newest_run_with_checkpoint(const std::string& root, const std::string& name);

/// Plans `runner run [FILE] --resume [RUN_DIR] [overrides]`: `file` may be empty (then the
/// run's own config is the base of the overrides), `run_dir` may be empty (then the newest run of
/// the file's experiment). Throws ConfigError (exit 2) naming the first key that would change
/// and may not, or what is missing from the run folder.
ResumePlan plan_resume(const std::string& file, const std::string& run_dir,
                       const std::vector<std::string>& overrides, const std::string& config_dir);

/// Whether `path` is a run folder (it holds the config.yaml a run saved).
bool is_run_folder(const std::string& path);

/// Why a finished run folder lacks checkpoints/NAME ("best.pt", "last.pt"): " (the run kept
/// best.pt only: train.checkpoints best)" when its summary.json says the policy removed it, else
/// "".
std::string removed_checkpoint_reason(const std::string& run_dir, const std::string& name);

/// The experiment a run folder last ran: its config.yaml with the changes its resumes recorded,
/// `overrides` applied on top, relative paths resolving against `config_dir` when given, else
/// the folder run.json recorded, else `fallback_dir`. Throws ConfigError when it has none.
Experiment load_run_experiment(const std::string& run_dir,
                               const std::vector<std::string>& overrides = {},
                               const std::string& config_dir = "",
                               const std::string& fallback_dir = "");

/// Writes RUN_DIR/run.json of a new run: where its config's relative paths resolve and from
/// which file.
void write_new_run_record(const std::string& run_dir, const Experiment& e);

/// Adds `fields` to RUN_DIR/run.json (what finds the run again: torchrun's run id).
void record_in_run(const std::string& run_dir, const nlohmann::json& fields);

/// What tracker `name` kept for the run in RUN_DIR/run.json (trackers.<name>), else {}.
nlohmann::json tracker_state(const std::string& run_dir, const std::string& name);

/// Keeps `state` for tracker `name` in RUN_DIR/run.json (trackers.<name>).
void record_tracker_state(const std::string& run_dir, const std::string& name,
                          const nlohmann::json& state);

/// Records in RUN_DIR/run.json the restarts runner's launcher made (launch.max_restarts):
/// [{time, cause, rank, resumed_at}]; nothing when there were none.
void record_restarts(const std::string& run_dir, const nlohmann::json& restarts);

/// Appends this resume to RUN_DIR/run.json: its time, command line and changes.
void record_resume(const std::string& run_dir, const std::string& command,
                   const std::vector<KeyChange>& changes);

}  // namespace runner::config
