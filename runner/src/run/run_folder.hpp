#pragma once
// The run folder a training run writes, and the folder a prediction writes its file to.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/experiment.hpp"
#include "run/run_options.hpp"

namespace runner::dist {
class World;
}

namespace runner::run {

/// Chooses the run folder on the main process (a resume's own, output.run_dir, else
/// output.root/<name>/<time>) and tells every rank (a collective); a new run claims it
/// (run/preflight: never another run's folder unless --overwrite replaces it), makes it with
/// logs/ and checkpoints/ and writes what the run runs with: config.yaml (`resolved`),
/// command.txt, run.json and env.json, then points each rank's log at logs/rankN.log. A resume
/// only appends its command line to command.txt: the rest waits for commit_resume. Every rank
/// throws the main process's error. Returns the folder.
std::string open_run_folder(const config::Experiment& e, const nlohmann::json& resolved,
                            const RunOptions& options, dist::World& world);

/// A resume whose checkpoint loaded: run.json records what it changed (and `restarts`, the
/// launcher's restarts up to this one), env.json where it runs, and each rank's log goes to
/// logs/rankN.log. Before it, a resume has changed nothing of the
/// folder but command.txt. A collective.
void commit_resume(const std::string& run_dir, const RunOptions& options, dist::World& world,
                   const nlohmann::json& restarts);

/// The folder a restarted attempt continues: output.run_dir, else the newest run of the
/// experiment (output.root/<name>/) whose run.json records `key`: `value` (the torchrun run id,
/// the SLURM job id); "" when there is none.
std::string run_folder_to_continue(const config::Experiment& e, const std::string& key,
                                   const std::string& value);

/// Under torchrun --max-restarts, a restarted worker group (TORCHELASTIC_RESTART_COUNT > 0)
/// continues the folder its first attempt made: output.run_dir, or the newest run of the
/// experiment whose run.json records this TORCHELASTIC_RUN_ID; from its checkpoints/last.pt
/// as a resume, or afresh in output.run_dir (overwrite) when it saved none (a timestamped
/// first attempt that saved nothing is left, and a new folder made). Nothing otherwise. Every
/// rank learns the main process's choice (a collective).
void continue_elastic_attempt(const config::Experiment& e, RunOptions& options, dist::World& world);

/// The restarts runner's launcher made before this attempt (launch::kRestartsVar), [] when none.
nlohmann::json restarts_so_far();

/// Where `runner predict` writes: beside --output; into RUN/predictions/ when the weights are a
/// run's checkpoint (RUN/checkpoints/x.pt); else the working folder (predict.output relative to
/// it). Made by the main process.
std::string open_prediction_dir(const RunOptions& options, dist::World& world);

/// Writes classes.txt (one class name a line) into the run folder; nothing without names.
void write_class_names(const std::string& run_dir, const std::vector<std::string>& names);

}  // namespace runner::run
