#pragma once
// What is checked before anything trains, the same for `validate`, `run --dry-run`, `run`
// (before any rank starts) and a rank started by another launcher: the devices the experiment
// names exist, and the run folder can be written and is the run's own. A failed check is one
// line (file:line or --set, the key, what to do) and exit 2, and nothing has been written.

#include <optional>
#include <string>

#include "config/experiment.hpp"
#include "config/resume_plan.hpp"
#include "run/run_options.hpp"

namespace runner::run {

/// launch.device cuda, launch.backend nccl and data.device cuda need a CUDA device here; NCCL
/// refuses two ranks on one GPU (launch.gpu_ids). Throws ConfigError naming the key.
void check_devices(const config::Experiment& e);

/// The folder a run writes: one this user can write (output.run_dir, else output.root); for a
/// new run (not a resume), one that is free: new, empty, or holding only a sweep's output.log;
/// or, with options.overwrite, a run folder (it is emptied when the run starts). Throws
/// ConfigError naming output.run_dir or output.root and what to do.
void check_output_folder(const config::Experiment& e, const RunOptions& options);

/// A timm/<name> model exists and its pretrained weights are cached: imported now (once, into
/// the cache the ranks load) so that a bad name is one line before any rank starts, not one per
/// rank. Nothing to do for other backbones. Throws ConfigError with timm's reason.
void check_model(const config::Experiment& e);

/// The checkpoint a command starts from (a resume's last.pt, predict's --checkpoint) opens and
/// fits the experiment's model, and, given `world_size`, was written by as many processes
/// (the sampler's order depends on it). Throws ConfigError naming the file, before any rank
/// starts.
void check_checkpoint(const config::Experiment& e, const std::string& path,
                      std::optional<int> world_size = std::nullopt);

/// A resume has something to continue: its last.pt is short of train.epochs and of
/// train.max_steps as the resume sets them. Throws ConfigError saying how to train it longer or
/// predict again; a missing or damaged last.pt is check_checkpoint's to report.
void check_run_to_continue(const config::ResumePlan& plan);

/// Makes `dir` the new run's own (the main process, as the run starts): refuses it as
/// check_output_folder does, empties a run folder that options.overwrite replaces.
void claim_run_folder(const config::Experiment& e, const RunOptions& options,
                      const std::string& dir);

}  // namespace runner::run
