#pragma once
// World's process-group internals, shared by the dist/ sources only (pulls in c10d headers).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "compat/torch_compat.hpp"
#include "dist/world.hpp"
#include "runner/error.hpp"

namespace runner::dist {

class SharedMemoryAllReduce;

struct World::Impl {
  compat::StorePtr store;  ///< the rendezvous store (prefixed under torchrun's agent store)
  compat::ProcessGroupPtr group;
  compat::ProcessGroupPtr host_group;  ///< Gloo: `group` itself, or a second group beside NCCL
  std::chrono::milliseconds timeout{0};
  std::string endpoint;     ///< "host:port" of the rendezvous, for messages
  int64_t collectives = 0;  ///< collectives started so far: the same sequence on every rank
  /// Set by DataParallel where the ranks share a segment: small host collectives (each step's
  /// flags) go through it instead of Gloo's sockets and threads.
  std::shared_ptr<SharedMemoryAllReduce> shared_memory;
};

/// `who` (e.g. "rank 0") cannot listen for the rendezvous on `endpoint` ("host:port"): the
/// error, with c10's message of `cause` and what to do about a port in use.
Error cannot_host_rendezvous(const std::string& who, const std::string& endpoint,
                             const std::exception& cause);

/// The error for collective number `seq` (`what`), started at `start`, that failed with
/// `cause`. Marks this rank in the store as having reached it, waits briefly for the other
/// ranks that failed in it, and names the ranks that never reached it. Needs world.impl().
Error collective_failure(const World& world, const std::string& what, int64_t seq,
                         std::chrono::steady_clock::time_point start, const std::string& cause);

/// Runs a c10d collective, turning its exceptions into runner::Error naming this rank, `what`
/// and, where the store still answers, the ranks that did not arrive. Every rank calls it for
/// the same collectives in the same order.
template <typename Fn>
auto with_rank_context(const World& world, const std::string& what, Fn&& fn) -> decltype(fn()) {
  const int64_t seq = ++world.impl()->collectives;
  const auto start = std::chrono::steady_clock::now();
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw collective_failure(world, what, seq, start, e.what_without_backtrace());
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    throw collective_failure(world, what, seq, start, e.what());
  }
}

}  // namespace runner::dist
