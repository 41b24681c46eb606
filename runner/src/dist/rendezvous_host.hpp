#pragma once
// The rendezvous store hosted by runner's own launcher, as torchrun's agent hosts it: the store
// listens before any rank starts, so every rank joins it at once as a client. When rank 0 hosted
// it, a rank that started first found no listener and c10d's client slept a whole second.

#include <memory>
#include <string>

namespace runner::dist {

class RendezvousHost {
 public:
  /// Listens on `port` (0: any free port) for a world of `world_size` ranks. Throws
  /// runner::Error naming host:port when the port cannot be had (in use, not permitted).
  RendezvousHost(const std::string& master_addr, int port, int world_size, double timeout_s);
  ~RendezvousHost();
  RendezvousHost(const RendezvousHost&) = delete;
  RendezvousHost& operator=(const RendezvousHost&) = delete;

  /// The port the store listens on (the chosen one when 0 was asked for).
  int port() const;

 private:
  struct Store;
  std::unique_ptr<Store> store_;
};

}  // namespace runner::dist
