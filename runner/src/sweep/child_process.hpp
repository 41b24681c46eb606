#pragma once
// Running one command as a child process, its output streamed to ours and its tail kept, so a
// sweep can say why a point failed. Torch-free.

#include <string>
#include <vector>

namespace runner::sweep {

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

/// The line of `lines` that best says why a run failed: the last one mentioning an error, else
/// the last non-empty one; "" when there is none.
std::string last_error_line(const std::vector<std::string>& lines);

}  // namespace runner::sweep
