#include "dist/rendezvous_host.hpp"

#include <chrono>

#include "compat/torch_compat.hpp"
#include "runner/error.hpp"

namespace runner::dist {

struct RendezvousHost::Store {
  c10::intrusive_ptr<c10d::TCPStore> tcp;
};

RendezvousHost::RendezvousHost(const std::string& master_addr, int port, int world_size,
                               double timeout_s)
    : store_(std::make_unique<Store>()) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  try {
    store_->tcp =
        compat::make_tcp_store(master_addr, port, /*is_server=*/true, world_size, timeout);
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw Error("the launcher cannot host the rendezvous on " + master_addr + ":" +
                std::to_string(port) + ": " +
                (c10_error ? c10_error->what_without_backtrace() : e.what()) +
                " (is the port in use by another run? choose another launch.master_port / "
                "MASTER_PORT, or 0 to pick a free one)");
  }
}

RendezvousHost::~RendezvousHost() = default;

int RendezvousHost::port() const { return store_->tcp->getPort(); }

}  // namespace runner::dist
