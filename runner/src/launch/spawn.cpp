#include "launch/spawn.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/world_env.hpp"
#include "output/run_report.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"
#include "sweep/child_process.hpp"
#include "util/atomic_file.hpp"

extern char** environ;

namespace runner::launch {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};
pid_t g_launcher_pid = 0;

extern "C" void on_launcher_signal(int signo) {
  // A child between fork and exec still runs this handler: it must not speak for the launcher.
  if (::getpid() != g_launcher_pid) return;
  const int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  if (g_signal_pipe[1] >= 0) (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGHUP:
      return "SIGHUP";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "signal";
  }
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

struct Stream {
  int fd = -1;
  int console_fd = 1;
  std::string partial;
};

struct Child {
  RankExit exit;
  bool running = true;
  Stream streams[2];
  std::deque<std::string> tail;
};

class Supervisor {
 public:
  Supervisor(const SpawnOptions& options) : options_(options) {}

  int run(int master_port) {
    char dir[] = "/tmp/runner-launch-XXXXXX";
    if (::mkdtemp(dir) != nullptr) log_paths_dir_ = dir;
    install_signal_handlers();
    start_children(master_port);
    int result = supervise();
    restore_signal_handlers();
    if (!log_paths_dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(log_paths_dir_, ignored);
    }
    return result;
  }

 private:
  void install_signal_handlers() {
    if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw Error(std::string("launcher: cannot create a pipe: ") + std::strerror(errno));
    }
    g_launcher_pid = ::getpid();
    struct sigaction action {};
    action.sa_handler = on_launcher_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }

  void restore_signal_handlers() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }

  std::vector<std::string> child_environment(int local_rank, int master_port) const {
    const int world_size = options_.nproc_per_node * options_.nnodes;
    const int rank = options_.node_rank * options_.nproc_per_node + local_rank;
    std::map<std::string, std::string> set = {
        {"RANK", std::to_string(rank)},
        {"LOCAL_RANK", std::to_string(local_rank)},
        {"WORLD_SIZE", std::to_string(world_size)},
        {"LOCAL_WORLD_SIZE", std::to_string(options_.nproc_per_node)},
        {"GROUP_RANK", std::to_string(options_.node_rank)},
        {"MASTER_ADDR", options_.master_addr},
        {"MASTER_PORT", std::to_string(master_port)},
        {kLaunchedByRunnerVar, "1"},
    };
    if (options_.host_rendezvous) set[kLauncherStoreVar] = "1";
    if (!log_paths_dir_.empty()) set[kLogPathFileVar] = log_path_file(rank);
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string text = *entry;
      if (set.count(text.substr(0, text.find('='))) == 0) env.push_back(text);
    }
    for (const auto& [key, value] : set) env.push_back(key + "=" + value);
    return env;
  }

  void start_children(int master_port) {
    const pid_t launcher = ::getpid();
    for (int local = 0; local < options_.nproc_per_node; ++local) {
      Child child;
      child.exit.rank = options_.node_rank * options_.nproc_per_node + local;
      // Everything the child needs is built before fork: after fork only exec-safe calls.
      std::vector<std::string> env_text = child_environment(local, master_port);
      std::vector<char*> envp;
      for (auto& e : env_text) envp.push_back(e.data());
      envp.push_back(nullptr);
      std::vector<std::string> arg_text = {options_.executable};
      arg_text.insert(arg_text.end(), options_.args.begin(), options_.args.end());
      std::vector<char*> argv;
      for (auto& a : arg_text) argv.push_back(a.data());
      argv.push_back(nullptr);
      int out_pipe[2], err_pipe[2];
      if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        stop_all(SIGKILL);
        throw Error(std::string("launcher: cannot create pipes: ") + std::strerror(errno));
      }
      pid_t pid = ::fork();
      if (pid < 0) {
        stop_all(SIGKILL);
        throw Error(std::string("launcher: fork failed: ") + std::strerror(errno));
      }
      if (pid == 0) {
        // Ranks die with the launcher, even when it is SIGKILLed.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        // Their own process group: a Ctrl-C (or `timeout`, which signals its whole group)
        // reaches the launcher alone, which passes it on once; a rank that got it twice would
        // take it as "stop at once".
        ::setpgid(0, 0);
        if (::getppid() != launcher) ::_exit(143);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execve(argv[0], argv.data(), envp.data());
        const char* message = "runner launcher: cannot execute the rank program\n";
        (void)!::write(2, message, std::strlen(message));
        ::_exit(127);
      }
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
      ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
      child.exit.pid = pid;
      child.streams[0] = {out_pipe[0], 1, {}};
      child.streams[1] = {err_pipe[0], 2, {}};
      children_.push_back(std::move(child));
    }
  }

  void emit_line(Child& child, Stream& stream, const std::string& line) {
    child.tail.push_back(line);
    while (static_cast<int>(child.tail.size()) > options_.tail_lines) child.tail.pop_front();
    std::string text = line + "\n";
    if (options_.prefix_output && child.exit.rank != 0) {
      text = "[rank " + std::to_string(child.exit.rank) + "] " + text;
    }
    write_all(stream.console_fd, text);
  }

  // Reads what is available; returns false at end of file.
  bool drain(Child& child, Stream& stream) {
    char buffer[8192];
    while (true) {
      ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return true;  // EAGAIN: nothing more now
      if (n == 0) {
        if (!stream.partial.empty()) emit_line(child, stream, stream.partial);
        stream.partial.clear();
        ::close(stream.fd);
        stream.fd = -1;
        return false;
      }
      stream.partial.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while ((newline = stream.partial.find('\n')) != std::string::npos) {
        emit_line(child, stream, stream.partial.substr(0, newline));
        stream.partial.erase(0, newline + 1);
      }
    }
  }

  void stop_all(int signo) {
    for (Child& child : children_) {
      if (child.running) ::kill(child.exit.pid, signo);
    }
  }

  void reap() {
    for (Child& child : children_) {
      if (!child.running) continue;
      int status = 0;
      pid_t done = ::waitpid(child.exit.pid, &status, WNOHANG);
      if (done != child.exit.pid) continue;
      child.running = false;
      if (WIFSIGNALED(status)) child.exit.signal = WTERMSIG(status);
      if (WIFEXITED(status)) child.exit.exit_code = WEXITSTATUS(status);
      bool failed = child.exit.signal != 0 || child.exit.exit_code != 0;
      if (failed && first_failure_ < 0 && !stopping_) {
        first_failure_ = static_cast<int>(&child - children_.data());
        begin_stop();
      }
    }
  }

  // The first SIGINT/SIGTERM is passed on: each rank stops after its current step and saves
  // its work (engine/stop_request.hpp). A second one stops them at once.
  void on_signal(int signo) {
    if (interrupted_by_ == 0) {
      interrupted_by_ = signo;
      write_all(2, std::string("runner launcher: received ") + signal_name(signo) +
                       ": every rank stops after its current step and saves checkpoints/last.pt "
                       "(press Ctrl-C again to stop at once)\n");
      stopping_ = true;
      stop_all(signo);
      // Ranks that do not answer (stuck in a collective, or not yet training) are killed.
      kill_deadline_ = Clock::now() + std::chrono::milliseconds(
                                          static_cast<int64_t>(options_.interrupt_grace_s * 1000));
      return;
    }
    write_all(2, std::string("runner launcher: received ") + signal_name(signo) +
                     " again: stopping all ranks now\n");
    stop_all(SIGKILL);
  }

  void begin_stop() {
    if (stopping_) return;
    stopping_ = true;
    stop_all(SIGTERM);
    kill_deadline_ = Clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(options_.stop_grace_s * 1000));
  }

  int supervise() {
    auto all_closed_by = Clock::time_point::max();
    while (true) {
      std::vector<pollfd> fds;
      std::vector<std::pair<Child*, Stream*>> owners;
      fds.push_back({g_signal_pipe[0], POLLIN, 0});
      owners.push_back({nullptr, nullptr});
      for (Child& child : children_) {
        for (Stream& stream : child.streams) {
          if (stream.fd < 0) continue;
          fds.push_back({stream.fd, POLLIN, 0});
          owners.push_back({&child, &stream});
        }
      }
      bool any_running = false;
      for (const Child& child : children_) any_running = any_running || child.running;
      // Once every rank is gone, stop waiting on pipes held open by leftover grandchildren.
      if (!any_running && (fds.size() == 1 || Clock::now() > all_closed_by)) break;
      if (!any_running && all_closed_by == Clock::time_point::max()) {
        all_closed_by = Clock::now() + std::chrono::seconds(2);
      }
      ::poll(fds.data(), fds.size(), 100);
      if (fds[0].revents & POLLIN) {
        unsigned char signo = 0;
        while (::read(g_signal_pipe[0], &signo, 1) == 1) on_signal(signo);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) drain(*owners[i].first, *owners[i].second);
      }
      reap();
      if (stopping_ && Clock::now() > kill_deadline_) {
        stop_all(SIGKILL);
        kill_deadline_ = Clock::time_point::max();
      }
    }
    for (Child& child : children_) {
      for (Stream& stream : child.streams) {
        if (stream.fd >= 0) {
          if (!stream.partial.empty()) emit_line(child, stream, stream.partial);
          ::close(stream.fd);
          stream.fd = -1;
        }
      }
    }
    if (interrupted_by_ != 0) {
      // Ranks that finished anyway (the signal came after training): the run is complete.
      for (const Child& child : children_)
        if (child.exit.signal != 0 || child.exit.exit_code != 0) return 128 + interrupted_by_;
      return 0;
    }
    if (first_failure_ >= 0) {
      report_failure(children_[static_cast<size_t>(first_failure_)]);
      // A rank killed by a signal is a failed run (1; the report names the signal), so that
      // 130 and 143 keep meaning "you interrupted it".
      const RankExit& exit = children_[static_cast<size_t>(first_failure_)].exit;
      return exit.signal != 0 ? 1 : exit.exit_code;
    }
    return 0;
  }

  std::string log_path_file(int rank) const {
    return log_paths_dir_ + "/rank" + std::to_string(rank) + ".path";
  }

  // The last lines of the rank's log file, when the rank said where it is: a rank other than
  // 0 shows only warnings on its console, so its output alone often ends before the failure.
  std::vector<std::string> log_tail(const Child& child, std::string& path) const {
    std::vector<std::string> lines;
    if (log_paths_dir_.empty()) return lines;
    std::ifstream where(log_path_file(child.exit.rank));
    std::getline(where, path);
    std::ifstream log(path);
    std::deque<std::string> tail;
    for (std::string line; std::getline(log, line);) {
      tail.push_back(line);
      if (static_cast<int>(tail.size()) > options_.tail_lines) tail.pop_front();
    }
    lines.assign(tail.begin(), tail.end());
    return lines;
  }

  void report_failure(Child& child) {
    std::string path;
    const auto logged = log_tail(child, path);
    child.exit.last_lines =
        logged.empty() ? std::vector<std::string>(child.tail.begin(), child.tail.end()) : logged;
    std::string text = "runner launcher: rank " + std::to_string(child.exit.rank) + " (pid " +
                       std::to_string(child.exit.pid) + ") " + describe_exit(child.exit) +
                       "; stopped the other ranks.\n";
    text += "runner launcher: last " + std::to_string(child.exit.last_lines.size()) +
            " lines of rank " + std::to_string(child.exit.rank) +
            (logged.empty() ? std::string(":\n") : " (" + path + "):\n");
    for (const std::string& line : child.exit.last_lines) text += "  | " + line + "\n";
    write_all(2, text);
    if (!path.empty() && child.exit.rank != 0)
      record_failure_in_run(std::filesystem::path(path).parent_path().parent_path(), child);
  }

  // The main rank wrote the run's summary.json and report.html with what it saw (often only
  // a broken connection); the cause is this rank's end.
  void record_failure_in_run(const std::filesystem::path& run_dir, const Child& child) const {
    try {
      nlohmann::json summary = output::read_summary(run_dir);
      if (summary.value("status", "") == "finished") return;
      std::string reason =
          "rank " + std::to_string(child.exit.rank) + " " + describe_exit(child.exit);
      // Its last words say why it exited; a killed rank's only say where it was.
      const std::string line = sweep::last_error_line(child.exit.last_lines);
      if (child.exit.signal == 0 && !line.empty()) reason += ": " + line;
      if (summary.contains("error") && summary["error"] != reason)
        summary["error_on_rank0"] = summary["error"];
      summary["status"] = "failed";
      summary["error"] = reason;
      summary["run_dir"] = run_dir.string();
      util::write_file_atomically((run_dir / "summary.json").string(), summary.dump(2) + "\n");
      output::write_run_report(run_dir, output::run_status_text(summary));
    } catch (const std::exception&) {
      // Best effort: the console already has the report.
    }
  }

  const SpawnOptions& options_;
  std::string log_paths_dir_;  ///< where ranks write their log file's path (kLogPathFileVar)
  std::vector<Child> children_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  bool stopping_ = false;
  int first_failure_ = -1;
  int interrupted_by_ = 0;
  Clock::time_point kill_deadline_ = Clock::time_point::max();
};

}  // namespace

std::string describe_exit(const RankExit& exit) {
  if (exit.signal != 0) {
    return std::string("was killed by signal ") + signal_name(exit.signal) + " (" +
           std::to_string(exit.signal) + ")";
  }
  return "exited with code " + std::to_string(exit.exit_code);
}

std::string self_executable() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) throw Error(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  return std::string(buffer, static_cast<size_t>(n));
}

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("launcher: cannot open a socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw Error(std::string("launcher: cannot find a free port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

int spawn_ranks(const SpawnOptions& options) {
  if (options.nproc_per_node < 1) {
    throw ConfigError("launch.num_processes must be at least 1 (got " +
                      std::to_string(options.nproc_per_node) + ")");
  }
  if (options.nnodes < 1 || options.node_rank < 0 || options.node_rank >= options.nnodes) {
    throw ConfigError("launch.node_rank " + std::to_string(options.node_rank) + " must be in 0.." +
                      std::to_string(options.nnodes - 1) +
                      " (launch.nnodes = " + std::to_string(options.nnodes) + ")");
  }
  if (options.master_port < 0 || options.master_port > 65535) {
    throw ConfigError("launch.master_port " + std::to_string(options.master_port) +
                      " is not in 0..65535");
  }
  if (options.master_port == 0 && options.nnodes > 1) {
    throw ConfigError(
        "launch.master_port 0 (pick a free port) works on one node only; with nnodes > 1 every "
        "node must be given the same master_port");
  }
  if (::access(options.executable.c_str(), X_OK) != 0) {
    throw ConfigError("launcher: cannot execute '" + options.executable + "'");
  }
  int port = options.master_port;
  if (options.host_rendezvous && options.node_rank == 0) {
    port = options.host_rendezvous(port);
  } else if (port == 0) {
    port = pick_free_port();
  }
  Supervisor supervisor(options);
  return supervisor.run(port);
}

void write_torchelastic_error(const std::string& message) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path == nullptr || *path == '\0') return;
  try {
    nlohmann::json data = {
        {"message",
         {{"message", message},
          {"extraInfo",
           {{"py_callstack", message}, {"timestamp", std::to_string(std::time(nullptr))}}}}}};
    std::ofstream out(path);
    out << data.dump();
  } catch (...) {
    // Reporting is best effort: the non-zero exit code still tells torchrun.
  }
}

}  // namespace runner::launch
