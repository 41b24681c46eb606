#pragma once
// World's process-group internals, shared by the dist/ sources only (pulls in c10d headers).

#include <chrono>

#include "compat/torch_compat.hpp"
#include "dist/world.hpp"
#include "runner/error.hpp"

namespace runner::dist {

struct World::Impl {
  compat::StorePtr store;  ///< the rendezvous store (prefixed under torchrun's agent store)
  compat::ProcessGroupPtr group;
  std::chrono::milliseconds timeout{0};
  std::string endpoint;  ///< "host:port" of the rendezvous, for messages
};

/// Runs a c10d call, turning its exceptions into runner::Error naming this rank and `what`.
template <typename Fn>
auto with_rank_context(const World& world, const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    throw Error("rank " + std::to_string(world.rank()) + ": " + what + " failed (a peer died, " +
                "or it timed out): " + e.what_without_backtrace());
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    throw Error("rank " + std::to_string(world.rank()) + ": " + what + " failed (a peer died, " +
                "or it timed out): " + e.what());
  }
}

}  // namespace runner::dist
