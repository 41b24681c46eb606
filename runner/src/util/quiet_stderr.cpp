#include "util/quiet_stderr.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace runner::util {

QuietStderr::QuietStderr() {
  std::fflush(stderr);
  saved_ = ::dup(2);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved_ >= 0 && null >= 0) ::dup2(null, 2);
  if (null >= 0) ::close(null);
}

QuietStderr::~QuietStderr() {
  if (saved_ < 0) return;
  std::fflush(stderr);
  ::dup2(saved_, 2);
  ::close(saved_);
}

}  // namespace runner::util
