#pragma once
// The local executor: a sweep's points as `runner run` child processes on this machine, one
// after another (their output on the console) or up to N at once (each into its folder's
// output.log), CPU threads split and GPUs sliced so points side by side do not compete.
// Torch-free.

#include <string>

#include "sweep/sweep_book.hpp"

namespace runner::sweep {

struct LocalExecutorOptions {
  std::string executable;  ///< the runner program each point runs
  int parallel = 1;        ///< points at once
  int gpu_count = 0;       ///< CUDA devices of this machine (points on CUDA get their own)
  int cpu_cores = 1;       ///< cores this sweep may use (points on CPU share them)
};

/// Runs every point of `book` not finished earlier; returns 0 when all finished, 1 when any
/// failed, 130 when interrupted (running points are stopped; a rerun resumes).
int run_local(SweepBook& book, const LocalExecutorOptions& options);

}  // namespace runner::sweep
