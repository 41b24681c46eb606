#pragma once
// runner's own launcher: starts the local ranks of a world as child processes (fork + exec at
// once, so no libtorch thread state is ever forked), tees their output, and stops them all when
// one fails or the launcher is interrupted. Torch-free.

#include <functional>
#include <string>
#include <vector>

namespace runner::launch {

/// What to start and how the world is laid out.
struct SpawnOptions {
  std::string executable;                 ///< path of the program each rank runs
  std::vector<std::string> args;          ///< its arguments (without argv[0])
  int nproc_per_node = 1;                 ///< ranks started on this node
  int nnodes = 1;                         ///< nodes in the world
  int node_rank = 0;                      ///< this node's index, 0..nnodes-1
  std::string master_addr = "127.0.0.1";  ///< where rank 0 hosts the rendezvous store
  int master_port = 0;                    ///< 0: pick a free port (single node only)
  double stop_grace_s = 5.0;              ///< SIGTERM -> SIGKILL delay when stopping ranks
  double interrupt_grace_s = 300.0;       ///< after SIGINT/SIGTERM: time to save, then SIGKILL
  int tail_lines = 20;                    ///< lines of a failed rank's output shown in the report
  bool prefix_output = true;              ///< prefix lines of ranks > 0 with "[rank N] "
  /// When set, node 0 calls it with master_port before starting ranks: it hosts the rendezvous
  /// store (0: any free port) and returns the port; every rank then joins as a client. Keep what
  /// it starts alive until spawn_ranks returns.
  std::function<int(int master_port)> host_rendezvous;
};

/// How a rank ended.
struct RankExit {
  int rank = -1;  ///< global rank
  int pid = -1;
  int exit_code = 0;                    ///< valid when signal == 0
  int signal = 0;                       ///< terminating signal, or 0
  std::vector<std::string> last_lines;  ///< tail of its stdout+stderr
};

/// Human form of a rank's end: "exited with code 3" / "was killed by signal SIGKILL (9)".
std::string describe_exit(const RankExit& exit);

/// Absolute path of the running program (/proc/self/exe), to spawn ranks of itself.
std::string self_executable();

/// A TCP port that was free on this machine a moment ago.
int pick_free_port();

/// Starts the ranks, waits for them and returns the launcher's exit code: 0 when every rank
/// exited 0; otherwise the first failing rank's code (128+signal when killed) after stopping
/// the others (SIGTERM, then SIGKILL after stop_grace_s) and printing which rank failed, how,
/// and its last output lines to stderr (and, for a rank other than 0, into the run's
/// summary.json and report.html). A SIGINT/SIGTERM to the launcher is passed on to every rank
/// (which stops after its step, see engine/stop_request.hpp); a second one kills them; the
/// code is then 130/143, or 0 when every rank still ended well.
/// Throws runner::ConfigError on a bad layout (e.g. master_port 0 with nnodes > 1).
int spawn_ranks(const SpawnOptions& options);

/// Under torchrun (TORCHELASTIC_ERROR_FILE set), records `message` as this rank's root-cause
/// error in the JSON torchrun's summary reads; does nothing otherwise. Never throws.
void write_torchelastic_error(const std::string& message);

}  // namespace runner::launch
