#pragma once
// Host memory for batches, kept for the next batch of the same size instead of returned to the
// system: a batch of 64 images of 224 px is 38 MB, which glibc maps fresh for every allocation
// (above its mmap threshold), and the first write of each of its 9,000 pages faults: measured, a
// fifth of the loader's time per image (collate 0.38 ms of 1.55, bench-data).

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace runner::data {

/// An uninitialised float32 CPU tensor of `sizes` whose memory goes back to a pool of its byte
/// size when the tensor's storage dies (at most a few kept per size; the rest freed).
torch::Tensor pooled_float_tensor(const std::vector<int64_t>& sizes);

}  // namespace runner::data
