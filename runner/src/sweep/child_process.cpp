#include "sweep/child_process.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <iostream>

#include <sys/wait.h>
#include <unistd.h>

#include "runner/error.hpp"

namespace runner::sweep {
namespace {

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_interrupted = 0;

extern "C" void on_sweep_signal(int signo) {
  g_interrupted = 1;
  if (g_child_pid > 0) ::kill(static_cast<pid_t>(g_child_pid), signo);
}

std::string without_ansi(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
      continue;
    }
    if (line[i] != '\r') out += line[i];
  }
  return out;
}

bool mentions_error(const std::string& line) {
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return lower.find("error") != std::string::npos || lower.find("what():") != std::string::npos ||
         lower.find("out of memory") != std::string::npos;
}

}  // namespace

ChildExit run_child(const std::string& executable, const std::vector<std::string>& args,
                    size_t tail_lines) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw Error(std::string("runner sweep: cannot create a pipe: ") + std::strerror(errno));
  std::vector<std::string> argv_text = {executable};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(std::string("runner sweep: cannot start a child process: ") + std::strerror(errno));
  if (pid == 0) {
    // Exec at once: nothing else runs in the forked copy.
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(argv[0], argv.data());
    const std::string msg =
        "runner sweep: cannot run " + executable + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(fds[1]);
  g_interrupted = 0;
  g_child_pid = pid;
  struct sigaction action {
  }, old_int{}, old_term{};
  action.sa_handler = on_sweep_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);

  std::deque<std::string> tail;
  std::string partial;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::cout.write(buffer, n);
    std::cout.flush();
    partial.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = partial.find('\n')) != std::string::npos) {
      tail.push_back(without_ansi(partial.substr(0, newline)));
      partial.erase(0, newline + 1);
      if (tail.size() > tail_lines) tail.pop_front();
    }
  }
  if (!partial.empty()) tail.push_back(without_ansi(partial));
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_pid = 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);

  ChildExit result;
  result.interrupted = g_interrupted != 0;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  result.last_lines.assign(tail.begin(), tail.end());
  return result;
}

std::string last_error_line(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (mentions_error(*it)) return *it;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->find_first_not_of(" \t") != std::string::npos) return *it;
  return "";
}

}  // namespace runner::sweep
