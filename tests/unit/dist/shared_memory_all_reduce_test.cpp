#include "dist/shared_memory_all_reduce.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <c10/util/BFloat16.h>
#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "temp_files.hpp"

namespace runner::dist {
namespace {

// Rank `rank`'s value at index i: different per rank and index, not exactly representable sums.
template <typename T>
T rank_value(int rank, size_t i) {
  return static_cast<T>(std::sin(0.37 * static_cast<double>(i) + rank) * (rank + 1) + 0.1 * rank);
}

// Runs `body(rank)` in world_size - 1 forked children and in this process as rank 0, after
// every rank has attached; returns the children's exit codes.
std::vector<int> run_ranks(int world_size, size_t chunk_bytes, double timeout_s,
                           const std::function<int(SharedMemoryAllReduce&, int)>& body) {
  auto owner = SharedMemoryAllReduce::create(world_size, timeout_s, chunk_bytes);
  int attached[2], go[2];
  EXPECT_EQ(pipe(attached), 0);
  EXPECT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int rank = 1; rank < world_size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        auto member = SharedMemoryAllReduce::attach(owner->name(), rank, world_size, timeout_s);
        char byte = 1;
        if (write(attached[1], &byte, 1) != 1 || read(go[0], &byte, 1) != 1) _exit(90);
        member->all_attached();
        code = body(*member, rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        code = 91;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  char byte = 0;
  for (int rank = 1; rank < world_size; ++rank) EXPECT_EQ(read(attached[0], &byte, 1), 1);
  for (int rank = 1; rank < world_size; ++rank) EXPECT_EQ(write(go[1], &byte, 1), 1);
  owner->all_attached();
  const int own_code = body(*owner, 0);
  std::vector<int> codes = {own_code};
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  for (int fd : {attached[0], attached[1], go[0], go[1]}) close(fd);
  return codes;
}

// What each rank wrote to dir/rank<N>, checked to be the same bytes on every rank.
std::vector<std::vector<char>> same_bits_on_every_rank(const runner::testing::TempDir& dir,
                                                       int world_size) {
  std::vector<std::vector<char>> results;
  for (int rank = 0; rank < world_size; ++rank) {
    std::ifstream in(dir.path().string() + "/rank" + std::to_string(rank), std::ios::binary);
    results.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (int rank = 1; rank < world_size; ++rank)
    EXPECT_EQ(results[rank], results[0]) << "rank " << rank << " got other bits than rank 0";
  return results;
}

template <typename T>
void expect_every_rank_gets_the_same_mean(int world_size, const std::vector<size_t>& counts) {
  runner::testing::TempDir dir;
  // A 4 KiB slot: 1024 floats per chunk, so the counts below span many chunks and both slot sets.
  auto codes = run_ranks(world_size, 4096, 30, [&](SharedMemoryAllReduce& all_reduce, int rank) {
    std::ofstream out(dir.path().string() + "/rank" + std::to_string(rank), std::ios::binary);
    for (size_t count : counts) {
      std::vector<T> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = rank_value<T>(rank, i);
      all_reduce.average(data.data(), data.size());
      out.write(reinterpret_cast<const char*>(data.data()), count * sizeof(T));
    }
    return out.good() ? 0 : 1;
  });
  for (int code : codes) EXPECT_EQ(code, 0);

  const std::vector<std::vector<char>> results = same_bits_on_every_rank(dir, world_size);
  const T* mean = reinterpret_cast<const T*>(results[0].data());
  size_t at = 0, wrong = 0;
  for (size_t count : counts) {
    for (size_t i = 0; i < count; ++i, ++at) {
      double expected = 0;
      for (int rank = 0; rank < world_size; ++rank) expected += rank_value<T>(rank, i);
      expected /= world_size;
      if (std::abs(mean[at] - expected) > 1e-6 * (1 + std::abs(expected))) ++wrong;
    }
  }
  EXPECT_EQ(at * sizeof(T), results[0].size());
  EXPECT_EQ(wrong, 0u) << "elements off the mean";
}

TEST(SharedMemoryAllReduce, EveryRankGetsTheMeanOfTwoRanks) {
  // Counts around the chunk and share edges, one empty call, one over many chunks.
  expect_every_rank_gets_the_same_mean<float>(2, {1, 15, 16, 17, 1023, 1024, 1025, 0, 100003});
}

TEST(SharedMemoryAllReduce, EveryRankGetsTheMeanOfThreeRanksInDouble) {
  expect_every_rank_gets_the_same_mean<double>(3, {5, 511, 512, 513, 40000});
}

// train.grad_comm bf16 through shared memory: every rank gets the same bits, and they are ATen's
// bf16 rounding of the float32 mean of each rank's value rounded to bf16 (one rounding per
// rank, one of the mean: the sum itself is not rounded, unlike a bf16 all-reduce).
TEST(SharedMemoryAllReduce, Bf16EveryRankGetsTheRoundedMeanOfRoundedValues) {
  for (int world_size : {2, 3}) {
    SCOPED_TRACE(std::to_string(world_size) + " ranks");
    runner::testing::TempDir dir;
    const std::vector<size_t> counts = {1, 31, 32, 33, 2047, 2048, 2049, 0, 100003};
    auto codes = run_ranks(world_size, 4096, 30, [&](SharedMemoryAllReduce& all_reduce, int rank) {
      std::ofstream out(dir.path().string() + "/rank" + std::to_string(rank), std::ios::binary);
      for (size_t count : counts) {
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = rank_value<float>(rank, i);
        all_reduce.average_bf16(data.data(), data.size());
        out.write(reinterpret_cast<const char*>(data.data()), count * sizeof(float));
      }
      return out.good() ? 0 : 1;
    });
    for (int code : codes) EXPECT_EQ(code, 0);
    const std::vector<std::vector<char>> results = same_bits_on_every_rank(dir, world_size);
    const float* mean = reinterpret_cast<const float*>(results[0].data());
    size_t at = 0, wrong = 0;
    for (size_t count : counts) {
      for (size_t i = 0; i < count; ++i, ++at) {
        float sum = 0;
        for (int rank = 0; rank < world_size; ++rank)
          sum += static_cast<float>(c10::BFloat16(rank_value<float>(rank, i)));
        const float expected = static_cast<float>(c10::BFloat16(sum / world_size));
        if (mean[at] != expected) ++wrong;
      }
    }
    EXPECT_EQ(at * sizeof(float), results[0].size());
    EXPECT_EQ(wrong, 0u) << "elements that are not the bf16 mean";
  }
}

// The sharded step's exchange: each rank's share (bounds the caller chose: uneven, empty ones,
// unaligned) becomes the mean of every rank's values there; the rest of its buffer stays its own.
// The same over a vector in pieces (each gradient where autograd left it), shares crossing them.
TEST(SharedMemoryAllReduce, EachRankGetsTheMeanOfItsOwnShare) {
  for (int world_size : {2, 3}) {
    SCOPED_TRACE(std::to_string(world_size) + " ranks");
    // 4 KiB slots: a piece of 1024 / ranks floats per owner, so the larger shares take rounds.
    const std::vector<std::vector<size_t>> splits =
        world_size == 2
            ? std::vector<std::vector<size_t>>{{0, 1, 1},
                                               {0, 9, 17},
                                               {0, 0, 1000},
                                               {0, 0, 0},
                                               {0, 31001, 50003}}
            : std::vector<std::vector<size_t>>{
                  {0, 1, 1, 1}, {0, 5, 6, 17}, {0, 400, 400, 1000}, {0, 3, 20000, 50003}};
    auto codes = run_ranks(world_size, 4096, 30, [&](SharedMemoryAllReduce& all_reduce, int rank) {
      for (bool split : {false, true})
        for (const auto& bounds : splits) {
          const size_t count = bounds.back();
          std::vector<float> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = rank_value<float>(rank, i);
          if (split) {  // as gradients lie: pieces of one vector, an empty one among them
            std::vector<SharedMemoryAllReduce::Span> spans;
            size_t at = 0;
            for (size_t cut : {size_t{7}, size_t{7}, size_t{333}, size_t{2500}, size_t{31001}})
              if (cut > at && cut < count) {
                spans.push_back({data.data() + at, cut - at});
                spans.push_back({data.data() + cut, 0});
                at = cut;
              }
            spans.push_back({data.data() + at, count - at});
            all_reduce.average_own_share(spans, bounds);
          } else {
            all_reduce.average_own_share(data.data(), bounds);
          }
          for (size_t i = 0; i < count; ++i) {
            float expected = rank_value<float>(rank, i);
            if (i >= bounds[rank] && i < bounds[rank + 1]) {
              float sum = 0;
              for (int r = 0; r < world_size; ++r) sum += rank_value<float>(r, i);
              expected = sum / static_cast<float>(world_size);
            }
            if (std::abs(data[i] - expected) > 1e-6f * (1 + std::abs(expected))) return 10;
          }
        }
      return 0;
    });
    for (int code : codes)
      EXPECT_EQ(code, 0) << "a rank's buffer is not its share's mean and its own rest";
  }
}

TEST(SharedMemoryAllReduce, ARankThatExitsIsNamedInsteadOfAHang) {
  std::string message;
  auto codes = run_ranks(2, 4096, 60, [&](SharedMemoryAllReduce& all_reduce, int rank) {
    if (rank == 1) return 0;  // leaves without taking part
    std::vector<float> data(3000, 1.0f);
    try {
      all_reduce.average(data.data(), data.size());
    } catch (const Error& e) {
      message = e.what();
    }
    return 0;
  });
  // Rank 1 is a zombie until rank 0's call returns (waitpid comes after): its exit must be
  // noticed all the same, well before the 60 s timeout would name it otherwise.
  for (int code : codes) EXPECT_EQ(code, 0);
  EXPECT_NE(message.find("rank 1 (process"), std::string::npos) << message;
  EXPECT_NE(message.find("exited during the gradient all-reduce"), std::string::npos) << message;
}

TEST(SharedMemoryAllReduce, ARankThatNeverArrivesTimesOutNamingIt) {
  std::string message;
  int release[2];
  ASSERT_EQ(pipe(release), 0);
  run_ranks(2, 4096, 0.5, [&](SharedMemoryAllReduce& all_reduce, int rank) {
    char byte = 0;
    if (rank == 1) return read(release[0], &byte, 1) == 1 ? 0 : 1;  // alive, elsewhere
    std::vector<double> data(10, 2.0);
    try {
      all_reduce.average(data.data(), data.size());
    } catch (const Error& e) {
      message = e.what();
    }
    return write(release[1], &byte, 1) == 1 ? 0 : 1;
  });
  close(release[0]);
  close(release[1]);
  EXPECT_NE(message.find("rank(s) 1 did not reach the gradient all-reduce"), std::string::npos)
      << message;
}

// The step's small collectives: flags summed, a minimum and a maximum, interleaved with a
// gradient average (one slot-set sequence for all of them); every rank gets the same values.
// 3 ranks, 4 KiB slots: the 1500-float message takes two chunks.
TEST(SharedMemoryAllReduce, SmallAllReducesSumMaxMinInRankOrder) {
  constexpr int kRanks = 3;
  auto codes = run_ranks(kRanks, 4096, 30, [&](SharedMemoryAllReduce& all_reduce, int rank) {
    for (int round = 0; round < 3; ++round) {
      std::vector<float> flags = {rank == 1 ? 1.0f : 0.0f, 1.0f, static_cast<float>(rank)};
      all_reduce.all_reduce(flags.data(), flags.size(), SharedMemoryAllReduce::Op::kSum, "flags");
      if (flags != std::vector<float>{1.0f, 3.0f, 3.0f}) return 10;
      float lowest = rank == 2 ? -1.0f : static_cast<float>(rank + round);
      all_reduce.all_reduce(&lowest, 1, SharedMemoryAllReduce::Op::kMin, "first");
      if (lowest != -1.0f) return 11;
      std::vector<double> sums = {0.1 * rank, 1e-17 * rank};  // a window's loss sums (float64)
      all_reduce.all_reduce(sums.data(), sums.size(), SharedMemoryAllReduce::Op::kSum, "sums");
      if (sums[0] != (0.0 + 0.1) + 0.2 || sums[1] != (0.0 + 1e-17) + 2e-17) return 14;
      std::vector<float> message(1500, 0.0f);
      for (size_t i = 0; i < message.size(); ++i)
        message[i] = static_cast<float>((i + static_cast<size_t>(rank)) % 7);
      all_reduce.all_reduce(message.data(), message.size(), SharedMemoryAllReduce::Op::kMax, "max");
      for (size_t i = 0; i < message.size(); ++i) {
        float expected = 0;
        for (int r = 0; r < kRanks; ++r)
          expected = std::max(expected, static_cast<float>((i + static_cast<size_t>(r)) % 7));
        if (message[i] != expected) return 12;
      }
      std::vector<float> grads(5000, static_cast<float>(rank));
      all_reduce.average(grads.data(), grads.size());
      for (float g : grads)
        if (g != 1.0f) return 13;
    }
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0) << "a rank got another reduction than the others";
}

// BatchNorm's buffers before each step: rank 0's bytes in every rank's pieces (floats and an
// int64 counter, more bytes than one slot), the others' own values overwritten.
TEST(SharedMemoryAllReduce, BroadcastGivesEveryRankTheFirstRanksBytes) {
  constexpr int kRanks = 3;
  auto codes = run_ranks(kRanks, 4096, 30, [&](SharedMemoryAllReduce& all_reduce, int rank) {
    for (int round = 0; round < 2; ++round) {
      std::vector<float> mean(3000), empty;
      int64_t counter = rank == 0 ? 41 + round : -1;
      std::vector<float> var(17);
      for (size_t i = 0; i < mean.size(); ++i) mean[i] = rank_value<float>(rank, i);
      for (size_t i = 0; i < var.size(); ++i) var[i] = rank_value<float>(rank, i + 9);
      all_reduce.broadcast_from_first({{mean.data(), mean.size() * sizeof(float)},
                                       {empty.data(), 0},
                                       {&counter, sizeof(counter)},
                                       {var.data(), var.size() * sizeof(float)}},
                                      "buffers");
      for (size_t i = 0; i < mean.size(); ++i)
        if (mean[i] != rank_value<float>(0, i)) return 10;
      for (size_t i = 0; i < var.size(); ++i)
        if (var[i] != rank_value<float>(0, i + 9)) return 11;
      if (counter != 41 + round) return 12;
    }
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0) << "a rank's buffers are not rank 0's";
}

// The sharded step keeps the parameters and optimizer state in the arena: zeros at first, one
// memory for every rank that joins.
TEST(SharedMemoryAllReduce, TheArenaIsOneMemoryForEveryRank) {
  auto owner = SharedMemoryAllReduce::create(2, 30, 4096, 100000);
  auto member = SharedMemoryAllReduce::attach(owner->name(), 1, 2, 30);
  ASSERT_NE(owner->arena(), nullptr);
  EXPECT_EQ(member->arena_bytes(), 100000u);
  const unsigned char* seen = member->arena();
  EXPECT_TRUE(std::all_of(seen, seen + 100000, [](unsigned char b) { return b == 0; }));
  std::memset(owner->arena() + 99990, 7, 10);
  EXPECT_EQ(seen[99999], 7);
  EXPECT_EQ(SharedMemoryAllReduce::create(2, 30)->arena(), nullptr);
}

TEST(SharedMemoryAllReduce, NothingIsLeftInDevShmAndStrangersCannotJoin) {
  auto owner = SharedMemoryAllReduce::create(2, 30);
  const std::string path = "/dev/shm" + owner->name();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  EXPECT_THROW(SharedMemoryAllReduce::attach(owner->name(), 1, 3, 30), Error);  // other size
  owner->all_attached();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " left behind";
  try {
    SharedMemoryAllReduce::attach(owner->name(), 1, 2, 30);
    ADD_FAILURE() << "attached to a removed segment";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not on the same host"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace runner::dist
