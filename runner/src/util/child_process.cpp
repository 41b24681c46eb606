#include "util/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "runner/error.hpp"
#include "util/signal_names.hpp"

extern char** environ;

namespace runner::util {
namespace {

int g_signal_pipe[2] = {-1, -1};
pid_t g_catcher_pid = 0;
volatile sig_atomic_t g_caught = 0;

extern "C" void on_caught_signal(int signo) {
  // A child between fork and exec still runs this handler: it must not speak for us.
  if (::getpid() != g_catcher_pid) return;
  const int saved = errno;
  g_caught = 1;
  const unsigned char byte = static_cast<unsigned char>(signo);
  if (g_signal_pipe[1] >= 0) (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
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

void fill_exit(int status, ChildExit& exit) {
  if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
    exit.exit_code = 128 + exit.signal;
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (auto& t : texts) out.push_back(t.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> environment_with(const std::map<std::string, std::string>& variables) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (variables.count(entry.substr(0, entry.find('='))) == 0) out.push_back(entry);
  }
  for (const auto& [name, value] : variables) out.push_back(name + "=" + value);
  return out;
}

std::string describe_exit(const ChildExit& exit) {
  if (exit.signal != 0)
    return std::string("was killed by signal ") + signal_name(exit.signal) + " (" +
           std::to_string(exit.signal) + ")";
  return "exited with code " + std::to_string(exit.exit_code);
}

SignalCatcher::SignalCatcher(bool usr1) : usr1_(usr1) {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    throw Error(std::string("cannot create a pipe for signals: ") + std::strerror(errno));
  g_catcher_pid = ::getpid();
  g_caught = 0;
  struct sigaction action {};
  action.sa_handler = on_caught_signal;
  action.sa_flags = SA_RESTART;  // reads, writes and waits go on; poll() wakes on the pipe
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &old_int_);
  ::sigaction(SIGTERM, &action, &old_term_);
  if (usr1_) ::sigaction(SIGUSR1, &action, &old_usr1_);
}

SignalCatcher::~SignalCatcher() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  if (usr1_) ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  g_signal_pipe[0] = g_signal_pipe[1] = -1;
}

std::vector<int> SignalCatcher::take() {
  std::vector<int> signals;
  unsigned char byte = 0;
  while (::read(g_signal_pipe[0], &byte, 1) == 1) signals.push_back(byte);
  return signals;
}

bool SignalCatcher::caught() const { return g_caught != 0; }

int SignalCatcher::fd() const { return g_signal_pipe[0]; }

Supervisor::Supervisor(size_t tail_lines) : tail_lines_(tail_lines) {}

Supervisor::~Supervisor() {
  for (Child& child : children_) {
    if (child.running) {
      ::kill(child.exit.pid, SIGKILL);
      int status = 0;
      while (::waitpid(child.exit.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    for (Stream& stream : child.streams)
      if (stream.fd >= 0) ::close(stream.fd);
  }
}

size_t Supervisor::start(const ChildSpec& spec) {
  if (spec.argv.empty()) throw Error("internal: a child process without a program");
  using Output = ChildSpec::Output;
  // Everything the child needs is made before fork: after it, only exec-safe calls.
  std::vector<std::string> argv_text = spec.argv, env_text = spec.environment;
  std::vector<char*> argv = pointers(argv_text), envp = pointers(env_text);
  const std::string cannot_run = "runner: cannot run " + spec.argv[0] + ": ";
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, log_fd = -1;
  const auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], log_fd})
      if (fd >= 0) ::close(fd);
  };
  if (spec.output == Output::kLogFile) {
    log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
      throw Error("cannot write " + spec.log_path + ": " + std::strerror(errno) +
                  "; check that its folder is writable");
  } else if (::pipe2(out_pipe, O_CLOEXEC) != 0 ||
             (spec.output == Output::kEcho && ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    close_all();
    throw Error("cannot create a pipe for " + spec.argv[0] + ": " + std::strerror(errno));
  }
  const int child_out = spec.output == Output::kLogFile ? log_fd : out_pipe[1];
  const int child_err = spec.output == Output::kEcho ? err_pipe[1] : child_out;
  std::cout.flush();
  std::fflush(stdout);
  sigset_t blocked;
  sigemptyset(&blocked);
  for (const int signo : spec.blocked_signals) sigaddset(&blocked, signo);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    close_all();
    throw Error("cannot start " + spec.argv[0] + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (!spec.blocked_signals.empty()) ::sigprocmask(SIG_BLOCK, &blocked, nullptr);
    if (spec.die_with_us) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(143);  // we died before the line above
    }
    ::setpgid(0, 0);
    if (spec.inherited_fd >= 0) ::fcntl(spec.inherited_fd, F_SETFD, 0);
    ::dup2(child_out, STDOUT_FILENO);
    ::dup2(child_err, STDERR_FILENO);
    if (spec.environment.empty())
      ::execvp(argv[0], argv.data());
    else
      ::execvpe(argv[0], argv.data(), envp.data());
    const char* reason = std::strerror(errno);
    (void)!::write(STDERR_FILENO, cannot_run.data(), cannot_run.size());
    (void)!::write(STDERR_FILENO, reason, std::strlen(reason));
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  Child child;
  child.spec = spec;
  child.exit.pid = pid;
  if (log_fd >= 0) ::close(log_fd);
  if (out_pipe[0] >= 0) {
    ::close(out_pipe[1]);
    ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    child.streams[0] = {out_pipe[0], spec.output == Output::kCapture ? -1 : STDOUT_FILENO, {}};
  }
  if (err_pipe[0] >= 0) {
    ::close(err_pipe[1]);
    ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    child.streams[1] = {err_pipe[0], STDERR_FILENO, {}};
  }
  children_.push_back(std::move(child));
  return children_.size() - 1;
}

void Supervisor::signal_all(int signo) {
  for (const Child& child : children_)
    if (child.running) ::kill(child.exit.pid, signo);
}

bool Supervisor::any_running() const {
  return std::any_of(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
}

void Supervisor::emit_line(Child& child, const Stream& stream, const std::string& line) {
  child.tail.push_back(without_ansi(line));
  while (child.tail.size() > tail_lines_) child.tail.pop_front();
  if (stream.console_fd < 0) return;
  write_all(stream.console_fd, child.spec.prefix + line + "\n");
}

void Supervisor::read_stream(Child& child, Stream& stream) {
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more now
    if (n == 0) {
      if (!stream.partial.empty()) emit_line(child, stream, stream.partial);
      stream.partial.clear();
      ::close(stream.fd);
      stream.fd = -1;
      return;
    }
    if (child.spec.output == ChildSpec::Output::kCapture)
      child.captured.append(buffer, static_cast<size_t>(n));
    stream.partial.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = stream.partial.find('\n')) != std::string::npos) {
      emit_line(child, stream, stream.partial.substr(0, newline));
      stream.partial.erase(0, newline + 1);
    }
  }
}

std::vector<size_t> Supervisor::reap() {
  std::vector<size_t> ended;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& child = children_[i];
    if (!child.running) continue;
    int status = 0;
    const pid_t done = ::waitpid(child.exit.pid, &status, WNOHANG);
    if (done == 0 || (done < 0 && errno == EINTR)) continue;
    child.running = false;
    if (done == child.exit.pid) {
      fill_exit(status, child.exit);
    } else {  // reaped elsewhere (SIGCHLD ignored, say): say so rather than call it done
      child.exit.exit_code = 255;
      child.tail.push_back(std::string("runner: lost track of the process (waitpid: ") +
                           std::strerror(errno) + ")");
    }
    ended.push_back(i);
  }
  return ended;
}

std::vector<size_t> Supervisor::wait(int timeout_ms, const SignalCatcher* catcher) {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, Stream*>> owners;
  if (catcher) {
    fds.push_back({catcher->fd(), POLLIN, 0});
    owners.push_back({nullptr, nullptr});
  }
  for (Child& child : children_)
    for (Stream& stream : child.streams)
      if (stream.fd >= 0) {
        fds.push_back({stream.fd, POLLIN, 0});
        owners.push_back({&child, &stream});
      }
  ::poll(fds.data(), fds.size(), timeout_ms);
  for (size_t k = 0; k < fds.size(); ++k)
    if (owners[k].first && fds[k].revents != 0) read_stream(*owners[k].first, *owners[k].second);
  return reap();
}

void Supervisor::drain(int grace_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    bool open = false;
    for (const Child& child : children_)
      for (const Stream& stream : child.streams) open = open || stream.fd >= 0;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (!open || left <= 0) break;
    wait(static_cast<int>(std::min<int64_t>(left, 100)));
  }
  for (Child& child : children_)
    for (Stream& stream : child.streams)
      if (stream.fd >= 0) {
        if (!stream.partial.empty()) emit_line(child, stream, stream.partial);
        stream.partial.clear();
        ::close(stream.fd);
        stream.fd = -1;
      }
}

ChildExit Supervisor::exit(size_t i) const {
  const Child& child = children_.at(i);
  ChildExit out = child.exit;
  if (child.spec.output == ChildSpec::Output::kLogFile)
    out.last_lines = tail_of_file(child.spec.log_path, tail_lines_);
  else
    out.last_lines.assign(child.tail.begin(), child.tail.end());
  return out;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  Supervisor supervisor;
  ChildSpec spec;
  spec.argv = argv;
  spec.output = ChildSpec::Output::kCapture;
  const size_t child = supervisor.start(spec);
  while (supervisor.any_running()) supervisor.wait(100);
  supervisor.drain();
  return {supervisor.exit(child).exit_code, supervisor.captured(child)};
}

ChildExit run_passing_on_signals(const ChildSpec& spec, bool& interrupted) {
  Supervisor supervisor;
  const size_t child = supervisor.start(spec);
  SignalCatcher catcher;
  while (supervisor.any_running()) {
    supervisor.wait(100, &catcher);
    for (const int signo : catcher.take()) supervisor.signal_all(signo);
  }
  supervisor.drain();
  interrupted = catcher.caught();
  return supervisor.exit(child);
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

}  // namespace runner::util
