#pragma once
// How much memory this process's host lets it use: the machine's RAM, or less where a cgroup
// (a container, a SLURM job) limits it. Torch-free.

#include <cstdint>

namespace runner::util {

/// Bytes of RAM, lowered to the cgroup v2 memory.max when one is set; 0 when unknown.
int64_t physical_memory_bytes();

}  // namespace runner::util
