#include "dist/rendezvous_host.hpp"

#include <chrono>

#include "dist/listen_socket.hpp"
#include "dist/world_impl.hpp"

namespace runner::dist {

struct RendezvousHost::Store {
  c10::intrusive_ptr<c10d::TCPStore> tcp;
};

RendezvousHost::RendezvousHost(const std::string& master_addr, int port, int world_size,
                               double timeout_s)
    : store_(std::make_unique<Store>()) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  try {
    const ListenSocket listener = listen_only_on(master_addr, port);
    store_->tcp = compat::make_tcp_store(master_addr, listener.port, /*is_server=*/true, world_size,
                                         timeout, listener.fd);
  } catch (const std::exception& e) {
    throw cannot_host_rendezvous("the launcher", master_addr + ":" + std::to_string(port), e);
  }
}

RendezvousHost::~RendezvousHost() = default;

int RendezvousHost::port() const { return store_->tcp->getPort(); }

}  // namespace runner::dist
