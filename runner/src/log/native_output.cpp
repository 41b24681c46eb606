#include "log/native_output.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include "log/logging.hpp"

namespace runner::log {
namespace {

struct Capture {
  std::mutex mutex;
  int console_fd = -1;           // the original stderr
  std::FILE* console = nullptr;  // over console_fd
  int read_fd = -1;
  std::thread reader;
  std::map<std::string, long> seen;  // message (timestamp stripped) -> times
  spdlog::level::level_enum continuation = spdlog::level::warn;
};

Capture& capture() {
  static Capture c;
  return c;
}

// c10's prefix: "[W1201 08:24:01.066218626 reducer.cpp:332] text"; the letter is the level.
spdlog::level::level_enum level_of(const std::string& line, spdlog::level::level_enum fallback) {
  if (line.size() > 2 && line[0] == '[') {
    switch (line[1]) {
      case 'I':
        return spdlog::level::info;
      case 'W':
        return spdlog::level::warn;
      case 'E':
        return spdlog::level::err;
      case 'F':
        return spdlog::level::critical;
      default:
        break;
    }
  }
  return fallback;
}

// Kineto's prefix (the profiler of train.profile): "STAGE:2026-12-07 20:39:18 11245:11245 ".
// Its progress lines go to the log file only; its warnings and errors to the console too, but
// for the GPU count it fails to take on a machine without a GPU driver (the profile records the
// host there).
bool forward_kineto(const std::string& line) {
  static const std::regex kineto_prefix(
      R"(^(INFO|STAGE|WARNING|ERROR):\d{4}-\d\d-\d\d [0-9:]+ \d+:\d+ )");
  std::smatch m;
  if (!std::regex_search(line, m, kineto_prefix)) return false;
  const bool progress = m[1] == "INFO" || m[1] == "STAGE";
  const std::string text = "kineto: " + line;
  if (progress || line.find("gpuGetDeviceCount failed") != std::string::npos)
    file_only(spdlog::level::debug, text);
  else
    spdlog::warn("{}", text);
  return true;
}

void forward(Capture& c, const std::string& line) {
  if (line.empty() || forward_kineto(line)) return;
  static const std::regex c10_prefix(R"(^\[([IWEF])\d{4} [0-9:.]+ )");
  std::smatch m;
  const bool prefixed = std::regex_search(line, m, c10_prefix);
  // A line without c10's prefix continues the message before it (multi-line warnings).
  const auto level = prefixed ? level_of(line, spdlog::level::warn) : c.continuation;
  if (prefixed) c.continuation = level;
  const std::string key = prefixed ? line.substr(m.length()) : line;
  const long times = ++c.seen[key];
  auto logger = spdlog::default_logger();
  // Every line lands in the log file; the console shows a repeated line at 1, 10, 100, ... times.
  if (times == 1) {
    logger->log(level, "libtorch: {}", line);
  } else {
    long shown = 10;
    while (shown < times) shown *= 10;
    if (times == shown)
      logger->log(level, "libtorch: {} (the same message {} times so far)", line, times);
    else
      file_only(level, "libtorch: " + line);
  }
}

void read_lines(Capture* c, int fd) {
  std::string pending;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1)
      forward(*c, pending.substr(start, end - start));
    pending.erase(0, start);
  }
  if (!pending.empty()) forward(*c, pending);
  ::close(fd);
}

}  // namespace

void capture_native_output() {
  Capture& c = capture();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.read_fd >= 0) return;
  int fds[2];
  std::fflush(stderr);
  if (::pipe(fds) != 0) return;  // logging stays as it was: nothing is lost, only untagged
  c.console_fd = ::dup(STDERR_FILENO);
  c.console = ::fdopen(c.console_fd, "w");
  ::dup2(fds[1], STDERR_FILENO);
  ::close(fds[1]);
  c.read_fd = fds[0];
  set_console_file(c.console);
  c.reader = std::thread(read_lines, &c, fds[0]);
}

void release_native_output() {
  Capture& c = capture();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.read_fd < 0) return;
  std::fflush(stderr);
  ::dup2(c.console_fd, STDERR_FILENO);  // closes the pipe's last write end: the reader sees EOF
  if (c.reader.joinable()) c.reader.join();
  c.read_fd = -1;
  set_console_file(nullptr);
  std::fclose(c.console);  // also closes console_fd; fd 2 is its own copy
  c.console = nullptr;
  c.console_fd = -1;
}

std::FILE* console_stderr() {
  Capture& c = capture();
  return c.console ? c.console : stderr;
}

}  // namespace runner::log
