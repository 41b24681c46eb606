#include "util/quiet_stderr.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

namespace runner::util {
namespace {

// File descriptor 2 is the process's: threads that quiet it at once (data.check decodes on every
// core) share one redirection, made by the first and undone by the last.
std::mutex quiet_mutex;
int quiet_count = 0;
int saved_stderr = -1;

}  // namespace

QuietStderr::QuietStderr() {
  std::lock_guard<std::mutex> lock(quiet_mutex);
  if (quiet_count++ > 0) return;
  std::fflush(stderr);
  saved_stderr = ::dup(2);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved_stderr >= 0 && null >= 0) ::dup2(null, 2);
  if (null >= 0) ::close(null);
}

QuietStderr::~QuietStderr() {
  std::lock_guard<std::mutex> lock(quiet_mutex);
  if (--quiet_count > 0 || saved_stderr < 0) return;
  std::fflush(stderr);
  ::dup2(saved_stderr, 2);
  ::close(saved_stderr);
  saved_stderr = -1;
}

}  // namespace runner::util
