#include "launch/spawn.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/world_env.hpp"
#include "runner/error.hpp"
#include "util/signal_names.hpp"

extern char** environ;

namespace runner::launch {
namespace {

using Clock = std::chrono::steady_clock;

void write_stderr(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(2, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The local ranks of one node, from their start to their last line.
class RankGroup {
 public:
  explicit RankGroup(const SpawnOptions& options)
      : options_(options), supervisor_(static_cast<size_t>(options.tail_lines)) {}

  LaunchResult run(int master_port) {
    char dir[] = "/tmp/runner-launch-XXXXXX";
    if (::mkdtemp(dir) != nullptr) log_paths_dir_ = dir;
    LaunchResult result;
    {
      util::SignalCatcher signals(options_.pass_on_usr1);
      for (int local = 0; local < options_.nproc_per_node; ++local)
        supervisor_.start(rank_spec(local, master_port));
      supervise(signals);
      supervisor_.drain();  // lines still in the pipes
    }
    for (size_t i = 0; i < supervisor_.size(); ++i) result.ranks.push_back(supervisor_.exit(i));
    result.interrupted_by = interrupted_by_;
    if (interrupted_by_ != 0) {
      // Ranks that finished anyway (the signal came after training): the run is complete.
      for (const auto& rank : result.ranks)
        if (!rank.ended_well()) result.exit_code = 128 + interrupted_by_;
    } else if (first_failure_ >= 0) {
      describe_failure(static_cast<size_t>(first_failure_), result);
      // A rank killed by a signal is a failed run (1; the report names the signal), so that
      // 130 and 143 keep meaning "you interrupted it".
      result.exit_code = result.failure.signal != 0 ? 1 : result.failure.exit_code;
    }
    result.run_dir = run_dir();
    if (!log_paths_dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(log_paths_dir_, ignored);
    }
    return result;
  }

 private:
  int global_rank(int local) const { return options_.node_rank * options_.nproc_per_node + local; }

  util::ChildSpec rank_spec(int local, int master_port) const {
    const int rank = global_rank(local);
    std::map<std::string, std::string> set = {
        {"RANK", std::to_string(rank)},
        {"LOCAL_RANK", std::to_string(local)},
        {"WORLD_SIZE", std::to_string(options_.nproc_per_node * options_.nnodes)},
        {"LOCAL_WORLD_SIZE", std::to_string(options_.nproc_per_node)},
        {"GROUP_RANK", std::to_string(options_.node_rank)},
        {"MASTER_ADDR", options_.master_addr},
        {"MASTER_PORT", std::to_string(master_port)},
        {kLaunchedByRunnerVar, "1"},
    };
    for (const auto& [key, value] : options_.environment) set[key] = value;
    if (options_.host_rendezvous) set[kLauncherStoreVar] = "1";
    if (!log_paths_dir_.empty()) set[kLogPathFileVar] = log_path_file(rank);
    util::ChildSpec spec;
    spec.argv = {options_.executable};
    spec.argv.insert(spec.argv.end(), options_.args.begin(), options_.args.end());
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      if (set.count(text.substr(0, text.find('='))) == 0) spec.environment.push_back(text);
    }
    for (const auto& [key, value] : set) spec.environment.push_back(key + "=" + value);
    if (options_.prefix_output && rank != 0) spec.prefix = "[rank " + std::to_string(rank) + "] ";
    spec.die_with_us = true;  // ranks die with the launcher, even when it is SIGKILLed
    // SLURM's warning may come while a rank still starts (a short time limit, a busy node):
    // passed on then, it would end the rank before its handler is there. Blocked, it waits
    // until the rank handles it (train/stop_request.cpp) and stops at its first step.
    if (options_.pass_on_usr1) spec.blocked_signals = {SIGUSR1};
    return spec;
  }

  void supervise(util::SignalCatcher& signals) {
    while (supervisor_.any_running()) {
      const std::vector<size_t> ended = supervisor_.wait(100, &signals);
      for (const int signo : signals.take()) on_signal(signo);
      for (const size_t i : ended)
        if (!supervisor_.exit(i).ended_well() && first_failure_ < 0 && !stopping_) {
          first_failure_ = static_cast<int>(i);
          begin_stop(SIGTERM, options_.stop_grace_s);
        }
      if (stopping_ && Clock::now() > kill_deadline_) {
        supervisor_.signal_all(SIGKILL);
        kill_deadline_ = Clock::time_point::max();
      }
    }
  }

  void begin_stop(int signo, double grace_s) {
    stopping_ = true;
    supervisor_.signal_all(signo);
    // Ranks that do not answer (stuck in a collective, or not yet training) are killed.
    kill_deadline_ = after(grace_s);
  }

  // The first SIGINT/SIGTERM is passed on: each rank stops after its current step and saves
  // its work (train/stop_request.hpp). The same again within util::kRepeatedSignalSeconds is
  // that one delivered twice (`timeout` signals us and then our group); a later one stops the
  // ranks at once.
  void on_signal(int signo) {
    const std::string name = util::signal_name(signo);
    if (interrupted_by_ != 0 &&
        util::monotonic_seconds() - interrupted_at_ < util::kRepeatedSignalSeconds)
      return;
    if (interrupted_by_ == 0) {
      interrupted_by_ = signo;
      interrupted_at_ = util::monotonic_seconds();
      write_stderr(signo == SIGUSR1
                       ? "runner launcher: received SIGUSR1 (SLURM's time limit is near): every "
                         "rank stops after its current step and saves checkpoints/last.pt, then "
                         "the job is requeued\n"
                       : "runner launcher: received " + name +
                             ": every rank stops after its current step and saves "
                             "checkpoints/last.pt (press Ctrl-C again to stop at once)\n");
      begin_stop(signo, options_.interrupt_grace_s);
      return;
    }
    if (signo == SIGUSR1) return;  // SLURM says it once; a repeat is no person's insistence
    write_stderr("runner launcher: received " + name + " again: stopping all ranks now\n");
    supervisor_.signal_all(SIGKILL);
  }

  // RUN_DIR of RUN_DIR/logs/rankN.log, from the first rank that said where its log is.
  std::string run_dir() const {
    for (int local = 0; local < options_.nproc_per_node && !log_paths_dir_.empty(); ++local) {
      std::ifstream where(log_path_file(global_rank(local)));
      std::string path;
      if (std::getline(where, path) && !path.empty())
        return std::filesystem::path(path).parent_path().parent_path().string();
    }
    return "";
  }

  std::string log_path_file(int rank) const {
    return log_paths_dir_ + "/rank" + std::to_string(rank) + ".path";
  }

  // The failed rank, with the last lines of its log file when the rank said where it is: a
  // rank other than 0 shows only warnings on its console, so its output alone often ends
  // before the failure.
  void describe_failure(size_t local, LaunchResult& result) const {
    const int rank = global_rank(static_cast<int>(local));
    util::ChildExit failure = supervisor_.exit(local);
    std::string path;
    if (!log_paths_dir_.empty()) {
      std::ifstream where(log_path_file(rank));
      std::getline(where, path);
    }
    const auto logged =
        path.empty() ? std::vector<std::string>() : util::tail_of_file(path, options_.tail_lines);
    if (!logged.empty()) failure.last_lines = logged;
    std::string text = "runner launcher: rank " + std::to_string(rank) + " (pid " +
                       std::to_string(failure.pid) + ") " + util::describe_exit(failure) +
                       "; stopped the other ranks.\n";
    text += "runner launcher: last " + std::to_string(failure.last_lines.size()) +
            " lines of rank " + std::to_string(rank) +
            (logged.empty() ? std::string(":\n") : " (" + path + "):\n");
    for (const std::string& line : failure.last_lines) text += "  | " + line + "\n";
    write_stderr(text);
    result.failed_rank = rank;
    result.failure = failure;
    result.failed_rank_log = path;
  }

  const SpawnOptions& options_;
  util::Supervisor supervisor_;
  std::string log_paths_dir_;  ///< where ranks write their log file's path (kLogPathFileVar)
  bool stopping_ = false;
  int first_failure_ = -1;
  int interrupted_by_ = 0;
  double interrupted_at_ = 0;  ///< monotonic seconds of the first interrupt
  Clock::time_point kill_deadline_ = Clock::time_point::max();
};

}  // namespace

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

LaunchResult spawn_ranks(const SpawnOptions& options) {
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
  RankGroup ranks(options);
  return ranks.run(port);
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
