#pragma once
// What `runner sweep` checks before any point runs, and `runner validate SWEEP.yaml` too: each
// point's devices, model (a timm/<name> imports) and data (data.check, the model's classes and
// channels), the data and the model once per distinct section; a search's base the same, and
// that its splits have what its pruner judges. A problem is a ConfigError naming the point.

#include "sweep/sweep_file.hpp"

namespace runner::cli {

void check_sweep_points(const sweep::Sweep& sweep);

}  // namespace runner::cli
