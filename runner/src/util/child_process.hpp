#pragma once
// The one way runner starts and watches other programs (its ranks, a sweep's points, the timm
// importer, sbatch and squeue): fork and exec at once (no library thread state is ever forked),
// each child in a process group of its own (a Ctrl-C or `timeout` that signals our whole group
// reaches us alone, and we pass it on once), its output streamed line by line and its last lines
// kept, its end collected without blocking. Torch-free.

#include <csignal>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace runner::util {

/// How a child ended.
struct ChildExit {
  int pid = -1;
  int exit_code = 0;                    ///< its code; 128 + signal when a signal killed it
  int signal = 0;                       ///< the signal that killed it, or 0
  std::vector<std::string> last_lines;  ///< the tail of its output, ANSI colours removed
  bool ended_well() const { return exit_code == 0; }
};

/// Our environment ("KEY=value" each) with `variables` set or replaced: a ChildSpec's.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& variables);

/// "exited with code 3" / "was killed by signal SIGKILL (9)".
std::string describe_exit(const ChildExit& exit);

/// What to start and where its output goes.
struct ChildSpec {
  std::vector<std::string> argv;  ///< argv[0]: a path, or a name looked up in PATH
  /// The child's whole environment ("KEY=value" each); empty: ours.
  std::vector<std::string> environment;
  enum class Output {
    kEcho,     ///< stdout to our stdout, stderr to our stderr, each line after `prefix`
    kMerged,   ///< stdout and stderr together to our stdout, as they come
    kLogFile,  ///< both appended to `log_path` (children that run side by side)
    kCapture   ///< both kept (run_command), nothing shown
  };
  Output output = Output::kEcho;
  std::string prefix;        ///< kEcho: before each line ("[rank 1] ")
  std::string log_path;      ///< kLogFile
  bool die_with_us = false;  ///< SIGTERM to the child when we die, even by SIGKILL
  /// Blocked in the child from its first instruction: one that comes before the child handles
  /// it waits (pending) instead of taking its default action (SIGUSR1's ends the process).
  std::vector<int> blocked_signals;
  /// A descriptor of ours the child keeps open (its close-on-exec cleared there): a run
  /// folder's lock handed to the run (util/folder_lock). -1: none.
  int inherited_fd = -1;
};

/// While it lives, SIGINT and SIGTERM (and SIGUSR1 when asked) do not end this process: they are
/// recorded, in order, and wake Supervisor::wait. The previous handlers come back when it is
/// destroyed. One at a time per process.
class SignalCatcher {
 public:
  explicit SignalCatcher(bool usr1 = false);
  ~SignalCatcher();
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;
  /// The signals that came since the last take, in order.
  std::vector<int> take();
  /// Whether any came since it was made (taken or not).
  bool caught() const;
  /// The file descriptor that is readable while a signal is waiting to be taken.
  int fd() const;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_usr1_ {};
  bool usr1_ = false;
};

/// Children started and watched together.
class Supervisor {
 public:
  /// `tail_lines`: lines of each child's output kept for its ChildExit.
  explicit Supervisor(size_t tail_lines = 40);
  /// Kills (SIGKILL) and reaps every child still running: a supervisor never leaves orphans.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Starts `spec`; returns the child's index. Throws runner::Error (naming the program) when
  /// it cannot be started; a program that cannot be executed ends with code 127 and says why.
  size_t start(const ChildSpec& spec);
  /// Sends `signo` to every child still running.
  void signal_all(int signo);
  /// Waits at most `timeout_ms` for output, a child's end or a signal `catcher` caught; copies
  /// the output that came; returns the children that ended meanwhile.
  std::vector<size_t> wait(int timeout_ms, const SignalCatcher* catcher = nullptr);
  /// Once no child runs: copies what is left in their pipes, waiting at most `grace_ms` for
  /// pipes that a leftover grandchild holds open, and closes them.
  void drain(int grace_ms = 2000);

  size_t size() const { return children_.size(); }
  bool running(size_t i) const { return children_.at(i).running; }
  bool any_running() const;
  int pid(size_t i) const { return children_.at(i).exit.pid; }
  /// How child i ended (once it has), with the last lines of its output so far (of its log file
  /// for kLogFile).
  ChildExit exit(size_t i) const;
  /// Everything a kCapture child wrote.
  const std::string& captured(size_t i) const { return children_.at(i).captured; }

 private:
  struct Stream {
    int fd = -1;
    int console_fd = -1;  ///< where its lines go; -1: nowhere
    std::string partial;
  };
  struct Child {
    ChildSpec spec;
    ChildExit exit;
    bool running = true;
    Stream streams[2];
    std::deque<std::string> tail;
    std::string captured;  ///< kCapture
  };
  void read_stream(Child& child, Stream& stream);
  void emit_line(Child& child, const Stream& stream, const std::string& line);
  std::vector<size_t> reap();

  size_t tail_lines_;
  std::vector<Child> children_;
};

/// Runs `argv` (argv[0] looked up in PATH, our environment) to its end and returns its exit code
/// (127: it could not be run) and its stdout and stderr together.
struct CommandResult {
  int exit_code = 0;
  std::string output;
};
CommandResult run_command(const std::vector<std::string>& argv);

/// Runs `spec` to its end, passing on every SIGINT/SIGTERM we receive meanwhile (a second
/// Ctrl-C reaches it as a second one); `interrupted` says whether any came.
ChildExit run_passing_on_signals(const ChildSpec& spec, bool& interrupted);

/// The last `count` lines of a text file (ANSI colours removed); empty when unreadable.
std::vector<std::string> tail_of_file(const std::string& path, size_t count = 40);

/// The line of `lines` that best says why a program failed: the last one mentioning an error,
/// else the last non-empty one; "" when there is none.
std::string last_error_line(const std::vector<std::string>& lines);

}  // namespace runner::util
