#include "dist/shared_memory_all_reduce.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <torch/torch.h>

#include "dist/world.hpp"
#include "dist/world_impl.hpp"
#include "runner/error.hpp"

namespace runner::dist {

namespace {

constexpr uint64_t kSegmentMagic = 0x72756e6e65725348ULL;  // "runnerSH"
constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;
constexpr int kSpinsBeforeSleep = 2000;  // ~0.1 ms of pause: ranks in step arrive within it
constexpr auto kSleepSlice = std::chrono::milliseconds(50);
constexpr auto kLivenessEvery = std::chrono::milliseconds(200);

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Shared (not private) futex operations: the word lives in a mapping of several processes.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::milliseconds slice) {
  timespec timeout{static_cast<time_t>(slice.count() / 1000),
                   static_cast<long>(slice.count() % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// Each rank reduces its own share: the sum of its data and every other rank's staged copy of
// that share, divided by the world size, written back in place and, unless `published` is
// null (the sharded step's owner keeps its share), published in its own slot for the others to
// copy. Blocks of the accumulator stay in L1.
template <typename T>
void reduce_share(T* __restrict own, const std::vector<const T*>& others, T* __restrict published,
                  size_t count, T world_size) {
  constexpr size_t kBlock = 1024;
  T sum[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t n = std::min(kBlock, count - begin);
    for (size_t i = 0; i < n; ++i) sum[i] = own[begin + i];
    for (const T* __restrict other : others)
      for (size_t i = 0; i < n; ++i) sum[i] += other[begin + i];
    for (size_t i = 0; i < n; ++i) own[begin + i] = sum[i] / world_size;
    if (published != nullptr) std::memcpy(published + begin, own + begin, n * sizeof(T));
  }
}

// float32 -> bf16, rounding to nearest even (NaN stays NaN), as ATen's conversion.
inline uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float from_bf16(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// The owner's share in bf16: its own values and the others' (bf16 already) summed in float32;
// the mean rounded to bf16, kept (as float32) and published for the others.
void reduce_share_bf16(float* __restrict own, const std::vector<const uint16_t*>& others,
                       uint16_t* __restrict published, size_t count, float world_size) {
  constexpr size_t kBlock = 1024;
  float sum[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t n = std::min(kBlock, count - begin);
    for (size_t i = 0; i < n; ++i) sum[i] = from_bf16(to_bf16(own[begin + i]));
    for (const uint16_t* __restrict other : others)
      for (size_t i = 0; i < n; ++i) sum[i] += from_bf16(other[begin + i]);
    for (size_t i = 0; i < n; ++i) {
      const uint16_t mean = to_bf16(sum[i] / world_size);
      published[begin + i] = mean;
      own[begin + i] = from_bf16(mean);
    }
  }
}

// Values staged in the slots as they are.
template <typename T>
struct SlotsAsIs {
  using Slot = T;
  static void stage(Slot* slot, const T* values, size_t n) {
    std::memcpy(slot, values, n * sizeof(T));
  }
  static void take(T* values, const Slot* slot, size_t n) {
    std::memcpy(values, slot, n * sizeof(T));
  }
  static void reduce(T* own, const std::vector<const Slot*>& others, Slot* published, size_t n,
                     int world_size) {
    reduce_share(own, others, published, n, static_cast<T>(world_size));
  }
};

// float32 values staged as bf16: twice the elements per chunk, half the bytes staged and
// copied back; the sums stay float32.
struct Bf16Slots {
  using Slot = uint16_t;
  static void stage(Slot* slot, const float* values, size_t n) {
    for (size_t i = 0; i < n; ++i) slot[i] = to_bf16(values[i]);
  }
  static void take(float* values, const Slot* slot, size_t n) {
    for (size_t i = 0; i < n; ++i) values[i] = from_bf16(slot[i]);
  }
  static void reduce(float* own, const std::vector<const Slot*>& others, Slot* published, size_t n,
                     int world_size) {
    reduce_share_bf16(own, others, published, n, static_cast<float>(world_size));
  }
};

}  // namespace

// What lives at the start of the segment: the header, then one record per rank, each on its
// own cache line so that ranks arriving at a barrier do not contend for one line.
struct SharedMemoryAllReduce::Layout {
  struct alignas(kCacheLine) Header {
    std::atomic<uint64_t> magic;
    uint32_t world_size;
    uint64_t chunk_bytes;
    uint64_t bytes;
    uint64_t arena_bytes;
    alignas(kCacheLine) std::atomic<uint32_t> wake;  ///< futex word: bumped by every arrival
    std::atomic<uint32_t> sleepers;                  ///< ranks in futex_wait (skip the wake call)
  };
  struct alignas(kCacheLine) RankRecord {
    std::atomic<uint64_t> arrived;  ///< barriers this rank has reached
    std::atomic<int32_t> pid;
  };

  static size_t slots_offset(int world_size) {
    return round_up(sizeof(Header) + sizeof(RankRecord) * world_size, kPage);
  }
  static size_t arena_offset(int world_size, size_t chunk_bytes) {
    return round_up(slots_offset(world_size) + 2 * static_cast<size_t>(world_size) * chunk_bytes,
                    kPage);
  }
  static size_t segment_bytes(int world_size, size_t chunk_bytes, size_t arena_bytes) {
    return arena_offset(world_size, chunk_bytes) + round_up(arena_bytes, kPage);
  }
  static Header* header(void* base) { return static_cast<Header*>(base); }
  static RankRecord* record(void* base, int rank) {
    return reinterpret_cast<RankRecord*>(static_cast<unsigned char*>(base) + sizeof(Header)) + rank;
  }
};

std::unique_ptr<SharedMemoryAllReduce> SharedMemoryAllReduce::create(int world_size,
                                                                     double timeout_s,
                                                                     size_t chunk_bytes,
                                                                     size_t arena_bytes) {
  chunk_bytes = round_up(std::max<size_t>(chunk_bytes, kPage), kCacheLine);
  std::random_device entropy;
  const uint64_t token = (uint64_t{entropy()} << 32) | entropy();
  const std::string name = fmt::format("/runner-grad-{}-{:016x}", getpid(), token);
  const size_t bytes = Layout::segment_bytes(world_size, chunk_bytes, arena_bytes);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    throw Error(
        fmt::format("cannot create shared memory segment {}: {}", name, std::strerror(errno)));
  // Reserve the pages now: a full /dev/shm (64 MB in a default container) is an error here,
  // not a SIGBUS in the middle of a backward pass.
  int reserve_error = ftruncate(fd, static_cast<off_t>(bytes)) == 0
                          ? posix_fallocate(fd, 0, static_cast<off_t>(bytes))
                          : errno;
  void* base = reserve_error == 0
                   ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                   : MAP_FAILED;
  if (reserve_error == 0 && base == MAP_FAILED) reserve_error = errno;
  close(fd);
  if (reserve_error != 0) {
    shm_unlink(name.c_str());
    throw Error(fmt::format("/dev/shm has no room for a {:.1f} MiB segment ({})",
                            static_cast<double>(bytes) / (1 << 20), std::strerror(reserve_error)));
  }
  auto* header = new (base) Layout::Header();
  header->world_size = static_cast<uint32_t>(world_size);
  header->chunk_bytes = chunk_bytes;
  header->bytes = bytes;
  header->arena_bytes = arena_bytes;
  for (int rank = 0; rank < world_size; ++rank)
    new (Layout::record(base, rank)) Layout::RankRecord();
  Layout::record(base, 0)->pid.store(getpid());
  header->magic.store(kSegmentMagic, std::memory_order_release);
  return std::unique_ptr<SharedMemoryAllReduce>(
      new SharedMemoryAllReduce(name, 0, world_size, timeout_s, base, bytes));
}

std::unique_ptr<SharedMemoryAllReduce> SharedMemoryAllReduce::attach(const std::string& name,
                                                                     int rank, int world_size,
                                                                     double timeout_s) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0)
    throw Error(
        fmt::format("rank {} cannot open shared memory segment {} ({}): not on the "
                    "same host as rank 0?",
                    rank, name, std::strerror(errno)));
  struct stat info {};
  const size_t bytes = fstat(fd, &info) == 0 ? static_cast<size_t>(info.st_size) : 0;
  void* base = bytes >= sizeof(Layout::Header)
                   ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                   : MAP_FAILED;
  close(fd);
  if (base == MAP_FAILED)
    throw Error(fmt::format("rank {} cannot map shared memory segment {}", rank, name));
  auto* header = Layout::header(base);
  if (header->magic.load(std::memory_order_acquire) != kSegmentMagic ||
      header->world_size != static_cast<uint32_t>(world_size) || header->bytes != bytes) {
    munmap(base, bytes);
    throw Error(fmt::format("rank {}: shared memory segment {} is not one made for {} ranks", rank,
                            name, world_size));
  }
  Layout::record(base, rank)->pid.store(getpid());
  return std::unique_ptr<SharedMemoryAllReduce>(
      new SharedMemoryAllReduce(name, rank, world_size, timeout_s, base, bytes));
}

SharedMemoryAllReduce::SharedMemoryAllReduce(std::string name, int rank, int world_size,
                                             double timeout_s, void* base, size_t bytes)
    : name_(std::move(name)),
      rank_(rank),
      world_size_(world_size),
      timeout_s_(timeout_s),
      base_(base),
      bytes_(bytes),
      chunk_bytes_(Layout::header(base)->chunk_bytes),
      arena_bytes_(Layout::header(base)->arena_bytes) {}

unsigned char* SharedMemoryAllReduce::arena() const {
  return arena_bytes_ == 0
             ? nullptr
             : static_cast<unsigned char*>(base_) + Layout::arena_offset(world_size_, chunk_bytes_);
}

SharedMemoryAllReduce::~SharedMemoryAllReduce() {
  for (int fd : peer_pidfds_)
    if (fd >= 0) close(fd);
  if (rank_ == 0 && !unlinked_) shm_unlink(name_.c_str());
  munmap(base_, bytes_);
}

void SharedMemoryAllReduce::all_attached() {
  if (rank_ == 0 && !unlinked_) shm_unlink(name_.c_str());
  unlinked_ = true;
  // A pidfd turns readable when its process exits, zombie or not (kill(pid, 0) still finds a
  // zombie its parent has not reaped yet).
  peer_pidfds_.assign(world_size_, -1);
  for (int rank = 0; rank < world_size_; ++rank) {
    const int32_t pid = Layout::record(base_, rank)->pid.load();
    if (rank != rank_ && pid > 0)
      peer_pidfds_[rank] = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  }
}

bool SharedMemoryAllReduce::has_exited(int rank) const {
  if (rank >= static_cast<int>(peer_pidfds_.size()) || peer_pidfds_[rank] < 0) return false;
  pollfd exit_event{peer_pidfds_[rank], POLLIN, 0};
  return poll(&exit_event, 1, 0) > 0;
}

unsigned char* SharedMemoryAllReduce::slot(int parity, int rank) const {
  return static_cast<unsigned char*>(base_) + Layout::slots_offset(world_size_) +
         (static_cast<size_t>(parity) * world_size_ + rank) * chunk_bytes_;
}

bool SharedMemoryAllReduce::all_arrived(uint64_t barrier) const {
  for (int rank = 0; rank < world_size_; ++rank)
    if (Layout::record(base_, rank)->arrived.load(std::memory_order_acquire) < barrier)
      return false;
  return true;
}

std::vector<int> SharedMemoryAllReduce::ranks_behind(uint64_t barrier) const {
  std::vector<int> behind;
  for (int rank = 0; rank < world_size_; ++rank)
    if (Layout::record(base_, rank)->arrived.load(std::memory_order_acquire) < barrier)
      behind.push_back(rank);
  return behind;
}

void SharedMemoryAllReduce::barrier() {
  using Clock = std::chrono::steady_clock;
  const uint64_t target = ++barriers_;
  auto* header = Layout::header(base_);
  Layout::record(base_, rank_)->arrived.store(target, std::memory_order_release);
  header->wake.fetch_add(1);
  if (header->sleepers.load() > 0) futex_wake_all(&header->wake);

  for (int spin = 0; spin < kSpinsBeforeSleep; ++spin) {
    if (all_arrived(target)) return;
    cpu_relax();
  }
  const auto start = Clock::now();
  auto next_liveness_check = start + kLivenessEvery;
  for (;;) {
    // Announce the sleep before reading the word: an arrival after this read changes the word,
    // so the wait returns at once; one before it is seen by the check below.
    header->sleepers.fetch_add(1);
    const uint32_t seen = header->wake.load();
    if (!all_arrived(target)) futex_wait(&header->wake, seen, kSleepSlice);
    header->sleepers.fetch_sub(1);
    if (all_arrived(target)) return;
    const std::vector<int> behind = ranks_behind(target);
    const auto now = Clock::now();
    if (now >= next_liveness_check) {
      next_liveness_check = now + kLivenessEvery;
      for (int rank : behind) {
        const int32_t pid = Layout::record(base_, rank)->pid.load();
        if (has_exited(rank))
          throw Error(fmt::format(
              "rank {}: rank {} (process {}) exited during {} (shared memory); its log says why",
              rank_, rank, pid, doing_));
      }
    }
    if (std::chrono::duration<double>(now - start).count() > timeout_s_)
      throw Error(fmt::format(
          "rank {}: rank(s) {} did not reach {} (shared memory) within {:.0f} s; see their logs "
          "(a rank stuck in data loading or a debugger?)",
          rank_, fmt::join(behind, ", "), doing_, timeout_s_));
  }
}

// The chunk protocol: each rank stages the other ranks' shares of a chunk in its slot, averages
// its own share from theirs, publishes it, then takes the others' averaged shares back. `Slots`
// says how values sit in the slots (SlotsAsIs, Bf16Slots).
template <typename Slots, typename T>
void SharedMemoryAllReduce::average_chunked(T* data, size_t count) {
  using Slot = typename Slots::Slot;
  const size_t per_chunk = chunk_bytes_ / sizeof(Slot);
  std::vector<const Slot*> others;
  for (size_t start = 0; start < count; start += per_chunk) {
    const size_t n = std::min(per_chunk, count - start);
    T* chunk = data + start;
    const int parity = static_cast<int>(chunks_++ & 1);
    // Shares start on cache-line boundaries, so no two ranks write one line.
    const size_t share = round_up((n + world_size_ - 1) / world_size_, kCacheLine / sizeof(Slot));
    auto share_begin = [&](int rank) { return std::min(n, share * static_cast<size_t>(rank)); };
    auto share_size = [&](int rank) { return share_begin(rank + 1) - share_begin(rank); };
    auto* own_slot = reinterpret_cast<Slot*>(slot(parity, rank_));

    for (int rank = 0; rank < world_size_; ++rank)
      if (rank != rank_)
        Slots::stage(own_slot + share_begin(rank), chunk + share_begin(rank), share_size(rank));
    barrier();
    others.clear();
    for (int rank = 0; rank < world_size_; ++rank)
      if (rank != rank_)
        others.push_back(reinterpret_cast<const Slot*>(slot(parity, rank)) + share_begin(rank_));
    Slots::reduce(chunk + share_begin(rank_), others, own_slot + share_begin(rank_),
                  share_size(rank_), world_size_);
    barrier();
    for (int rank = 0; rank < world_size_; ++rank)
      if (rank != rank_)
        Slots::take(chunk + share_begin(rank),
                    reinterpret_cast<const Slot*>(slot(parity, rank)) + share_begin(rank),
                    share_size(rank));
  }
}

namespace {

// Calls visit(pointer, count, offset) for the pieces of the vector `spans` make that cover its
// elements [begin, end): `offset` counts from `begin`. `starts`: each span's first element.
template <typename Visit>
void for_each_piece(const std::vector<SharedMemoryAllReduce::Span>& spans,
                    const std::vector<size_t>& starts, size_t begin, size_t end, Visit visit) {
  size_t i =
      static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin()) -
      1;
  for (size_t at = begin; at < end; ++i) {
    const size_t into = at - starts[i];
    const size_t n = std::min(spans[i].count - into, end - at);
    visit(spans[i].data + into, n, at - begin);
    at += n;
  }
}

}  // namespace

// Round k: every rank stages the k-th piece of every other rank's share into its slot (a slot
// holds a piece per owner), a barrier, and each owner averages its k-th piece with the others'
// staged copies in place. Nothing is published back: one barrier a round. A slot set is
// rewritten two rounds later, after a barrier its readers pass only once they have read it.
void SharedMemoryAllReduce::average_own_share(const std::vector<Span>& spans,
                                              const std::vector<size_t>& bounds) {
  doing_ = "the sharded step's gradient exchange";
  constexpr size_t kLine = kCacheLine / sizeof(float);
  const size_t piece = std::max(kLine, chunk_bytes_ / sizeof(float) / world_size_ / kLine * kLine);
  std::vector<size_t> starts;  // of each span in the vector
  size_t length = 0;
  for (const Span& span : spans) {
    starts.push_back(length);
    length += span.count;
  }
  if (bounds.size() != static_cast<size_t>(world_size_) + 1 || bounds.back() != length)
    throw Error("internal: the sharded exchange's shares do not cover its gradients");
  size_t largest = 0;
  for (int rank = 0; rank < world_size_; ++rank)
    largest = std::max(largest, bounds[rank + 1] - bounds[rank]);
  const size_t rounds = (largest + piece - 1) / piece;
  std::vector<const float*> others;
  std::vector<const float*> others_here;
  for (size_t round = 0; round < rounds; ++round) {
    const int parity = static_cast<int>(chunks_++ & 1);
    auto piece_of = [&](int owner, size_t& begin, size_t& end) {
      begin = std::min(bounds[owner + 1], bounds[owner] + round * piece);
      end = std::min(bounds[owner + 1], begin + piece);
    };
    auto* own_slot = reinterpret_cast<float*>(slot(parity, rank_));
    for (int owner = 0; owner < world_size_; ++owner) {
      if (owner == rank_) continue;
      size_t begin, end;
      piece_of(owner, begin, end);
      float* staged = own_slot + owner * piece;
      for_each_piece(spans, starts, begin, end, [&](float* data, size_t n, size_t offset) {
        std::memcpy(staged + offset, data, n * sizeof(float));
      });
    }
    barrier();
    size_t begin, end;
    piece_of(rank_, begin, end);
    others.clear();
    for (int rank = 0; rank < world_size_; ++rank)
      if (rank != rank_)
        others.push_back(reinterpret_cast<const float*>(slot(parity, rank)) + rank_ * piece);
    for_each_piece(spans, starts, begin, end, [&](float* data, size_t n, size_t offset) {
      others_here.clear();
      for (const float* other : others) others_here.push_back(other + offset);
      reduce_share<float>(data, others_here, nullptr, n, static_cast<float>(world_size_));
    });
  }
}

void SharedMemoryAllReduce::all_reduce(float* data, size_t count, Op op, const char* what) {
  doing_ = what;
  all_reduce_chunked(data, count, op);
}

void SharedMemoryAllReduce::all_reduce(double* data, size_t count, Op op, const char* what) {
  doing_ = what;
  all_reduce_chunked(data, count, op);
}

template <typename T>
void SharedMemoryAllReduce::all_reduce_chunked(T* data, size_t count, Op op) {
  const size_t per_chunk = chunk_bytes_ / sizeof(T);
  for (size_t start = 0; start < count; start += per_chunk) {
    const size_t n = std::min(per_chunk, count - start);
    const int parity = static_cast<int>(chunks_++ & 1);
    std::memcpy(slot(parity, rank_), data + start, n * sizeof(T));
    barrier();
    const auto* first = reinterpret_cast<const T*>(slot(parity, 0));
    std::memcpy(data + start, first, n * sizeof(T));
    for (int rank = 1; rank < world_size_; ++rank) {
      const auto* other = reinterpret_cast<const T*>(slot(parity, rank));
      T* out = data + start;
      for (size_t i = 0; i < n; ++i)
        out[i] = op == Op::kSum   ? out[i] + other[i]
                 : op == Op::kMax ? std::max(out[i], other[i])
                                  : std::min(out[i], other[i]);
    }
  }
}

void SharedMemoryAllReduce::broadcast_from_first(const std::vector<Bytes>& pieces,
                                                 const char* what) {
  doing_ = what;
  size_t total = 0;
  for (const Bytes& piece : pieces) total += piece.bytes;
  // Round by round, a slot's worth: rank 0 packs the pieces' bytes, the others unpack them.
  // Every rank walks the pieces alike, to keep its place for the next round.
  size_t index = 0, into = 0;  // where the next round begins: piece, byte within it
  for (size_t start = 0; start < total; start += chunk_bytes_) {
    const int parity = static_cast<int>(chunks_++ & 1);
    unsigned char* staged = slot(parity, 0);
    const size_t round_bytes = std::min(chunk_bytes_, total - start);
    if (rank_ != 0) barrier();
    for (size_t done = 0; done < round_bytes;) {
      auto* piece = static_cast<unsigned char*>(pieces[index].data) + into;
      const size_t n = std::min(pieces[index].bytes - into, round_bytes - done);
      if (rank_ == 0)
        std::memcpy(staged + done, piece, n);
      else
        std::memcpy(piece, staged + done, n);
      done += n;
      into += n;
      if (into == pieces[index].bytes) {
        ++index;
        into = 0;
      }
    }
    if (rank_ == 0) barrier();
  }
}

void SharedMemoryAllReduce::wait_for_all(const char* what) {
  doing_ = what;
  barrier();
}

// Rank 0 creates the segment and sends its name; every rank attaches; the ranks agree whether
// all of them could.
std::shared_ptr<SharedMemoryAllReduce> join_shared_memory_all_reduce(World& world,
                                                                     std::string& why_not,
                                                                     size_t chunk_bytes,
                                                                     size_t arena_bytes) {
  const double timeout_s = std::chrono::duration<double>(world.impl()->timeout).count();
  constexpr int64_t kNameLength = 96;
  std::shared_ptr<SharedMemoryAllReduce> all_reduce;
  // The name travels as NUL-terminated characters in an int64 tensor (empty: rank 0 failed).
  auto name = torch::zeros({kNameLength}, torch::kInt64);
  int64_t* characters = name.data_ptr<int64_t>();
  if (world.is_main()) {
    try {
      all_reduce =
          SharedMemoryAllReduce::create(world.world_size(), timeout_s, chunk_bytes, arena_bytes);
      const std::string& text = all_reduce->name();
      for (size_t i = 0; i < text.size() && i + 1 < kNameLength; ++i) characters[i] = text[i];
    } catch (const Error& e) {
      why_not = e.what();
    }
  }
  std::vector<torch::Tensor> sent = {name};
  world.broadcast_(sent, 0);
  if (!world.is_main() && characters[0] != 0) {
    std::string text;
    for (int64_t i = 0; i < kNameLength && characters[i] != 0; ++i)
      text += static_cast<char>(characters[i]);
    try {
      all_reduce = SharedMemoryAllReduce::attach(text, world.rank(), world.world_size(), timeout_s);
    } catch (const Error& e) {
      why_not = e.what();
    }
  }
  const bool everyone = world.all_reduce(all_reduce ? 1.0 : 0.0, ReduceOp::kMin) > 0;
  if (all_reduce) all_reduce->all_attached();
  if (!everyone) {
    if (why_not.empty()) why_not = "another rank could not open the segment (not on this host?)";
    return nullptr;
  }
  return all_reduce;
}

void SharedMemoryAllReduce::average(float* data, size_t count) {
  doing_ = "the gradient all-reduce";
  average_chunked<SlotsAsIs<float>>(data, count);
}
void SharedMemoryAllReduce::average(double* data, size_t count) {
  doing_ = "the gradient all-reduce";
  average_chunked<SlotsAsIs<double>>(data, count);
}
void SharedMemoryAllReduce::average_bf16(float* data, size_t count) {
  doing_ = "the gradient all-reduce";
  average_chunked<Bf16Slots>(data, count);
}

}  // namespace runner::dist
