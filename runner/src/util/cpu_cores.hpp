#pragma once
// How many cores this process may use: its CPU affinity (taskset, cgroup cpusets, SLURM's
// task binding), not the machine's total. Torch-free.

namespace runner::util {

/// Cores in this process's affinity mask; std::thread::hardware_concurrency() when unknown.
int usable_cpu_cores();

/// Default libtorch threads of one of `local_ranks` ranks: SLURM_CPUS_PER_TASK inside a SLURM
/// task that sets it, else the usable cores shared evenly; at least 1.
int default_threads_per_rank(int local_ranks);

}  // namespace runner::util
