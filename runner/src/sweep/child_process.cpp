#include "sweep/child_process.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/error.hpp"

namespace runner::sweep {
namespace {

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_interrupted = 0;
// Children running side by side (start_logged_child), one per slot (0: free): a signal goes
// to each.
constexpr int kMaxChildren = 256;
volatile sig_atomic_t g_children[kMaxChildren] = {};

extern "C" void on_sweep_signal(int signo) {
  g_interrupted = 1;
  if (g_child_pid > 0) ::kill(static_cast<pid_t>(g_child_pid), signo);
  for (int i = 0; i < kMaxChildren; ++i)
    if (g_children[i] > 0) ::kill(static_cast<pid_t>(g_children[i]), signo);
}

void forget_child(pid_t pid) {
  for (int i = 0; i < kMaxChildren; ++i)
    if (g_children[i] == pid) g_children[i] = 0;
}

void fill_exit(int status, ChildExit& result) {
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + result.signal;
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
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

// Starts argv[0] (looked up in PATH) with `args`, its stdout and stderr on `output_fd`;
// returns its pid. The child execs at once: nothing else runs in the forked copy.
pid_t start_with_output(const std::vector<std::string>& argv_text, int output_fd) {
  std::vector<std::string> text = argv_text;
  std::vector<char*> argv;
  for (auto& a : text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string failure = "runner sweep: cannot run " + text[0] + ": ";
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(std::string("runner sweep: cannot start a child process: ") + std::strerror(errno));
  if (pid == 0) {
    // Its own process group: a Ctrl-C reaches the sweep alone, which passes it on once (a run
    // that got it twice would stop at once instead of saving its work).
    ::setpgid(0, 0);
    ::dup2(output_fd, STDOUT_FILENO);
    ::dup2(output_fd, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    // No allocation after fork (another thread may hold the allocator's lock): write pieces.
    const char* reason = std::strerror(errno);
    (void)!::write(STDERR_FILENO, failure.data(), failure.size());
    (void)!::write(STDERR_FILENO, reason, std::strlen(reason));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  return pid;
}

// Starts argv with its stdout and stderr into a pipe; returns the pid and the pipe's read end.
// The pipe's ends close in the child at exec (only its dup2'd copies stay open there).
std::pair<pid_t, int> start_piped(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(std::string("runner sweep: cannot create a pipe: ") + std::strerror(errno));
  pid_t pid;
  try {
    pid = start_with_output(argv, fds[1]);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

}  // namespace

InterruptForwarding::InterruptForwarding() {
  g_interrupted = 0;
  struct sigaction action {};
  action.sa_handler = on_sweep_signal;
  action.sa_flags = SA_RESTART;  // reads, writes and waits go on; the children's ends end them
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &old_int_);
  ::sigaction(SIGTERM, &action, &old_term_);
}

InterruptForwarding::~InterruptForwarding() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptForwarding::interrupted() const { return g_interrupted != 0; }

ChildExit run_child(const std::string& executable, const std::vector<std::string>& args,
                    size_t tail_lines) {
  std::vector<std::string> argv = {executable};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto [pid, read_end] = start_piped(argv);
  InterruptForwarding forward;
  g_child_pid = pid;

  std::deque<std::string> tail;
  std::string partial;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(read_end, buffer, sizeof(buffer));
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
  ::close(read_end);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_pid = 0;

  ChildExit result;
  result.interrupted = g_interrupted != 0;
  fill_exit(status, result);
  result.last_lines.assign(tail.begin(), tail.end());
  return result;
}

int start_logged_child(const std::string& executable, const std::vector<std::string>& args,
                       const std::string& log_path) {
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0)
    throw Error("runner sweep: cannot write " + log_path + ": " + std::strerror(errno) +
                "; check the sweep's output folder");
  std::vector<std::string> argv = {executable};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid;
  try {
    pid = start_with_output(argv, log);
  } catch (...) {
    ::close(log);
    throw;
  }
  ::close(log);
  int slot = 0;
  while (slot < kMaxChildren && g_children[slot] != 0) ++slot;
  if (slot < kMaxChildren) g_children[slot] = pid;
  // A signal that came before the slot was filled did not reach this child: pass it on now.
  if (g_interrupted) ::kill(pid, SIGTERM);
  return pid;
}

int wait_for_any_child(const std::vector<int>& running, const std::vector<std::string>& log_paths,
                       ChildExit& exit) {
  if (running.empty()) return -1;
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, 0)) < 0 && errno == EINTR) {
  }
  if (pid < 0) return -1;
  forget_child(pid);
  exit = ChildExit{};
  exit.interrupted = g_interrupted != 0;
  fill_exit(status, exit);
  for (size_t i = 0; i < running.size(); ++i)
    if (running[i] == pid && i < log_paths.size()) exit.last_lines = tail_of_file(log_paths[i]);
  return pid;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  const auto [pid, read_end] = start_piped(argv);
  CommandResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(read_end, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  ::close(read_end);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildExit exit;
  fill_exit(status, exit);
  result.exit_code = exit.exit_code;
  return result;
}

std::vector<std::string> tail_of_file(const std::string& path, size_t count) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(without_ansi(line));
    if (tail.size() > count) tail.pop_front();
  }
  return {tail.begin(), tail.end()};
}

std::string last_error_line(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (mentions_error(*it)) return *it;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->find_first_not_of(" \t") != std::string::npos) return *it;
  return "";
}

}  // namespace runner::sweep
