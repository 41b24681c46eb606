#include "util/line_process.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "runner/error.hpp"

namespace runner::util {

LineProcess::LineProcess(const std::vector<std::string>& argv) : program_(argv.at(0)) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw Error("cannot start " + program_ + ": pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw Error("cannot start " + program_ + ": pipe");
  }
  std::vector<std::string> text = argv;
  std::vector<char*> args;
  for (auto& a : text) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw Error("cannot start " + program_ + ": fork: " + std::strerror(errno));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(143);
    ::signal(SIGINT, SIG_IGN);  // a Ctrl-C is the sweep's to answer, not the helper's
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
}

LineProcess::~LineProcess() {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

std::string LineProcess::ask(const std::string& line) {
  const std::string request = line + "\n";
  const auto ended = [&]() -> Error {
    int status = 0;
    std::string how = "ended";
    if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
      how = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                              : "was killed by signal " + std::to_string(WTERMSIG(status));
      pid_ = -1;
    }
    return Error(program_ + " " + how + " instead of answering");
  };
  // Its stdin closed under us would kill us with SIGPIPE: a write error says it instead.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::write(to_child_, request.data() + sent, request.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::sigaction(SIGPIPE, &old, nullptr);
      throw ended();
    }
    sent += static_cast<size_t>(n);
  }
  ::sigaction(SIGPIPE, &old, nullptr);
  for (;;) {
    if (const size_t newline = buffered_.find('\n'); newline != std::string::npos) {
      std::string answer = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return answer;
    }
    char chunk[4096];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ended();
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace runner::util
