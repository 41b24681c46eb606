#pragma once
// glibc's malloc, set for a training step. A step frees and allocates the same activations every
// time; by default glibc hands large blocks back to the kernel (mmap'd blocks on free, the heap's
// top past its trim threshold) and the next step faults each page in again, zero-filled: 9 % of
// resnet18's 1-thread step at 56 px (bench/RESULTS.md, "Where the ResNet step goes").

namespace runner::util {

/// Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap, and the heap is not
/// trimmed: memory freed by one step is reused by the next. The process keeps its peak mapped
/// (its peak RSS is unchanged). Left alone when GLIBC_TUNABLES names a glibc.malloc setting
/// (the user's choice). Call once, early in main.
void tune_malloc_for_training();

}  // namespace runner::util
