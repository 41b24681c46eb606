#pragma once
// An all-reduce for ranks on one host through one POSIX shared memory segment (torch-free but
// for the join over a World). Each rank
// stages the parts of a chunk the others own, reduces its own part from everyone's staging
// slots, and copies the others' results back: on CPU, no socket copies through the kernel and
// no communication thread competing with the compute threads for the cores (Gloo over
// loopback TCP costs ~80 ms of CPU per 198 MB all-reduce on 2 ranks; this ~40 ms).
//
// Chunks alternate between two sets of staging slots, so two barriers per chunk suffice: a
// rank rewrites a slot set only after every rank has passed the barrier of the chunk between.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace runner::dist {

class World;

class SharedMemoryAllReduce {
 public:
  /// Bytes of one rank's staging slot (two per rank): small enough to stay in cache between
  /// staging and reducing, large enough that a barrier is rare.
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  /// Creates a fresh segment for `world_size` ranks and joins it as rank 0. Throws runner::Error
  /// saying why (e.g. /dev/shm too small for it) when it cannot.
  /// `arena_bytes`: room after the staging slots for what the ranks keep as one copy (the
  /// sharded step's parameters and optimizer state), zeros at first.
  static std::unique_ptr<SharedMemoryAllReduce> create(int world_size, double timeout_s,
                                                       size_t chunk_bytes = kDefaultChunkBytes,
                                                       size_t arena_bytes = 0);
  /// Joins the segment `name` (create()'s name()) as `rank`. Throws runner::Error when there is
  /// no such segment here (another host) or it was made for another world size.
  static std::unique_ptr<SharedMemoryAllReduce> attach(const std::string& name, int rank,
                                                       int world_size, double timeout_s);
  ~SharedMemoryAllReduce();
  SharedMemoryAllReduce(const SharedMemoryAllReduce&) = delete;
  SharedMemoryAllReduce& operator=(const SharedMemoryAllReduce&) = delete;

  const std::string& name() const { return name_; }
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  /// Call on every rank once every rank has attached. Rank 0 removes the segment's name (the
  /// memory lives on until the last rank unmaps it: nothing is left in /dev/shm when a rank
  /// dies); each rank opens a pidfd of every other rank's process it can see, to notice its exit.
  void all_attached();

  /// Replaces `data` on every rank by the element-wise mean over the ranks (every rank gets the
  /// same bits). Every rank calls it with the same count, in the same order as its other calls.
  /// Throws runner::Error naming this rank and the missing ones when a rank exits or does not
  /// arrive within the timeout.
  void average(float* data, size_t count);
  void average(double* data, size_t count);
  /// The same with half the bytes through the segment (train.grad_comm bf16): each rank's values
  /// rounded to bf16 once, their mean taken in float32 and rounded to bf16 once; every rank gets
  /// the same float32 values (bf16 ones).
  void average_bf16(float* data, size_t count);
  /// Consecutive float32 elements; a list of them reads as one vector, in order.
  struct Span {
    float* data;
    size_t count;
  };
  /// The sharded step's exchange over the vector `spans` make (each parameter's gradient where
  /// it lies, nothing gathered first): rank r's elements [bounds[r], bounds[r + 1]) (its share;
  /// bounds: world size + 1 ascending offsets from 0 to the vector's length, the same on every
  /// rank) become the mean over the ranks; the rest stays this rank's own.
  void average_own_share(const std::vector<Span>& spans, const std::vector<size_t>& bounds);
  void average_own_share(float* data, const std::vector<size_t>& bounds) {
    average_own_share({{data, bounds.back()}}, bounds);
  }
  /// The small collectives of each step beside the gradients' (the step's flags, a failure's
  /// message): `data` becomes the sum, max or min over the ranks, taken in rank order (every
  /// rank gets the same bits). One barrier per chunk, no socket, no thread woken.
  enum class Op { kSum, kMax, kMin };
  void all_reduce(float* data, size_t count, Op op, const char* what);
  void all_reduce(double* data, size_t count, Op op, const char* what);
  /// Rank 0's bytes of `pieces` copied into every rank's (BatchNorm's buffers before each step).
  struct Bytes {
    void* data;
    size_t bytes;
  };
  void broadcast_from_first(const std::vector<Bytes>& pieces, const char* what);
  /// Waits until every rank has called it (the sharded step: every share stepped before any
  /// rank reads the parameters again). `what` names it in the errors.
  void wait_for_all(const char* what);

  /// The arena create() reserved, page-aligned, and its size (0 without one).
  unsigned char* arena() const;
  size_t arena_bytes() const { return arena_bytes_; }

 private:
  struct Layout;
  SharedMemoryAllReduce(std::string name, int rank, int world_size, double timeout_s, void* base,
                        size_t bytes);
  /// The average of `data` over the ranks, chunk by chunk through the slots, which hold the
  /// values as `Slots` says (shared_memory_all_reduce.cpp: as they are, or as bf16).
  template <typename Slots, typename T>
  void average_chunked(T* data, size_t count);
  template <typename T>
  void all_reduce_chunked(T* data, size_t count, Op op);
  /// Waits until every rank has arrived at barrier number `++barriers_`.
  void barrier();
  /// The staging slot of `rank` in slot set `parity`.
  unsigned char* slot(int parity, int rank) const;
  bool all_arrived(uint64_t barrier) const;  ///< the waiting loops' check: no allocation
  std::vector<int> ranks_behind(uint64_t barrier) const;  ///< for the error messages
  bool has_exited(int rank) const;

  std::string name_;
  int rank_ = 0;
  int world_size_ = 1;
  double timeout_s_ = 300;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  size_t chunk_bytes_ = 0;
  uint64_t barriers_ = 0;  ///< barriers passed so far (the same count on every rank)
  uint64_t chunks_ = 0;    ///< chunks reduced so far: picks the slot set
  bool unlinked_ = false;
  size_t arena_bytes_ = 0;
  const char* doing_ = "the gradient all-reduce";  ///< the collective under way, for errors
  std::vector<int> peer_pidfds_;  ///< per rank: a pidfd of its process, or -1 (not visible here)
};

/// Collective over `world` (every rank calls it): a segment for its ranks, joined by all of them,
/// with the world's collective timeout. Null on every rank when some rank could not join (not
/// on one host, /dev/shm full), `why_not` then says why.
std::shared_ptr<SharedMemoryAllReduce> join_shared_memory_all_reduce(
    World& world, std::string& why_not,
    size_t chunk_bytes = SharedMemoryAllReduce::kDefaultChunkBytes, size_t arena_bytes = 0);

}  // namespace runner::dist
