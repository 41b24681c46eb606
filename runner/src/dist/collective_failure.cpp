// Who is missing when a collective fails: ranks that fail in the same collective say so in the
// store, so a rank can tell a peer stuck elsewhere from peers that waited with it.

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "dist/world_impl.hpp"

namespace runner::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", seconds);
  return buffer;
}

// Ranks that have not marked collective `seq` within `grace`; empty when all of them did.
std::vector<int> ranks_absent(c10d::Store& store, int world_size, int rank, int64_t seq,
                              std::chrono::milliseconds grace) {
  const std::string base = "runner/stuck/" + std::to_string(seq) + "/";
  store.set(base + std::to_string(rank), std::vector<uint8_t>{'1'});
  const auto deadline = Clock::now() + grace;
  std::vector<int> absent;
  while (true) {
    absent.clear();
    for (int r = 0; r < world_size; ++r) {
      if (!store.check({base + std::to_string(r)})) absent.push_back(r);
    }
    if (absent.empty() || Clock::now() >= deadline) return absent;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

Error collective_failure(const World& world, const std::string& what, int64_t seq,
                         Clock::time_point start, const std::string& cause) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const World::Impl& impl = *world.impl();
  const std::string head = "rank " + std::to_string(world.rank()) + ": " + what + " (collective #" +
                           std::to_string(seq) + ")";
  std::vector<int> absent;
  try {
    const auto grace =
        std::min<std::chrono::milliseconds>(std::chrono::seconds(5), impl.timeout / 2);
    absent = ranks_absent(*impl.store, world.world_size(), world.rank(), seq, grace);
  } catch (const std::exception&) {
    // The store went with its host (rank 0, or torchrun's agent): who is missing is unknowable.
    return Error(head + " failed after " + seconds_text(elapsed) +
                 " s (a peer died, or it timed out): " + cause);
  }
  const bool timed_out = elapsed >= 0.9 * std::chrono::duration<double>(impl.timeout).count();
  const std::string how =
      (timed_out ? " timed out after " : " failed after ") + seconds_text(elapsed) + " s";
  if (absent.empty()) {
    return Error(head + how + " on every rank (a peer died or the network failed): " + cause);
  }
  std::string names;
  for (size_t i = 0; i < absent.size(); ++i) names += (i ? ", " : "") + std::to_string(absent[i]);
  return Error(head + how + ": rank" + (absent.size() > 1 ? "s " : " ") + names +
               " did not arrive (hung, dead, or still busy elsewhere; see its log); " + cause);
}

}  // namespace runner::dist
