#pragma once
// The rendezvous store's listening socket, bound to one address. c10d's TCPStore listens on
// every interface, and the store is unauthenticated: anyone who reaches the port can write a
// run's keys. Bound to launch.master_addr's own address instead, a one-node run (127.0.0.1)
// listens on loopback only and a multi-node run on the address the other nodes dial.

#include <string>

namespace runner::dist {

struct ListenSocket {
  int fd = -1;   ///< owned by the caller (c10d's store closes it)
  int port = 0;  ///< the port bound (the chosen one when 0 was asked for)
};

/// A socket listening on `address` (a host name or IP, resolved here) and `port` (0: a free
/// port), close-on-exec. Throws runner::Error naming address:port and the system's reason
/// when no resolved address can be bound.
ListenSocket listen_only_on(const std::string& address, int port);

}  // namespace runner::dist
