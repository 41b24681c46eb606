#pragma once
// What `runner sweep` checks before any point runs, and `runner validate SWEEP.yaml` too: each
// point's devices, model (a timm/<name> imports) and data (data.check, the model's classes and
// channels), the data and the model once per distinct section; a search's base the same, and
// that its splits have what its pruner judges. A problem is a ConfigError naming the point.

#include "sweep/sweep_file.hpp"

namespace runner::cli {

void check_sweep_points(const sweep::Sweep& sweep);

/// Everything `runner sweep` checks before its first point, as `runner validate SWEEP.yaml`
/// does: the points (check_sweep_points) where `points_here` (a local executor: SLURM's points
/// check on their nodes, with their devices and data), then for `search: optuna` that Optuna
/// imports and its storage answers.
void check_sweep_starts(const sweep::Sweep& sweep, bool points_here);

}  // namespace runner::cli
