#pragma once
// Running one command as a child process, its output streamed to ours and its tail kept, so a
// sweep can say why a point failed. Torch-free.

#include <csignal>
#include <string>
#include <vector>

namespace runner::sweep {

/// While it lives, SIGINT and SIGTERM sent to us are passed on to the running children (of
/// run_child and start_logged_child) instead of ending us, and remembered.
class InterruptForwarding {
 public:
  InterruptForwarding();
  ~InterruptForwarding();
  InterruptForwarding(const InterruptForwarding&) = delete;
  InterruptForwarding& operator=(const InterruptForwarding&) = delete;
  /// Whether a SIGINT or SIGTERM came since it was made.
  bool interrupted() const;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

/// How a child ended.
struct ChildExit {
  int exit_code = 0;                    ///< the child's code; 128+signal when killed
  int signal = 0;                       ///< terminating signal, or 0
  bool interrupted = false;             ///< we got SIGINT/SIGTERM while it ran (and passed it on)
  std::vector<std::string> last_lines;  ///< tail of its stdout+stderr, ANSI colours removed
};

/// Runs `executable args...` (environment inherited), copying its stdout and stderr to our
/// stdout as they come, and waits for it. SIGINT/SIGTERM sent to us are passed on to the child
/// and reported as `interrupted`. Throws runner::Error when the child cannot be started.
ChildExit run_child(const std::string& executable, const std::vector<std::string>& args,
                    size_t tail_lines = 40);

/// Starts `executable args...` with its stdout and stderr appended to `log_path` (for points
/// that run side by side) and returns its pid without waiting. Throws runner::Error when it
/// cannot be started.
int start_logged_child(const std::string& executable, const std::vector<std::string>& args,
                       const std::string& log_path);

/// Waits for one of the children started by start_logged_child to end; fills `exit` (its tail
/// read from its log) and returns its pid, or -1 when none is left (waitpid's errno set).
/// Signals: hold an InterruptForwarding around the children's whole lives.
int wait_for_any_child(const std::vector<int>& running, const std::vector<std::string>& log_paths,
                       ChildExit& exit);

/// How a short command (sbatch, squeue) ended and what it printed (stdout and stderr).
struct CommandResult {
  int exit_code = 0;  ///< 127 when it could not be run
  std::string output;
};
/// Runs `argv` (argv[0] looked up in PATH) to its end, capturing its output.
CommandResult run_command(const std::vector<std::string>& argv);

/// The last `count` lines of a text file (ANSI colours removed); empty when unreadable.
std::vector<std::string> tail_of_file(const std::string& path, size_t count = 40);

/// The line of `lines` that best says why a run failed: the last one mentioning an error, else
/// the last non-empty one; "" when there is none.
std::string last_error_line(const std::vector<std::string>& lines);

}  // namespace runner::sweep
