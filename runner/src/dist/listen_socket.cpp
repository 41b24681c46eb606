#include "dist/listen_socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runner/error.hpp"

namespace runner::dist {

ListenSocket listen_only_on(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = address + ":" + std::to_string(port);
  if (const int code = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
      code != 0)
    throw Error("cannot listen on " + where + ": " + ::gai_strerror(code));
  std::string reason = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      ::freeaddrinfo(found);
      const int bound_port = bound.ss_family == AF_INET6
                                 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                 : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      return {fd, bound_port};
    }
    reason = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw Error("cannot listen on " + where + ": " + reason);
}

}  // namespace runner::dist
