#pragma once
// runner's own launcher: starts the local ranks of a world as child processes (through
// util::Supervisor), tees their output, stops them all when one fails or the launcher is
// interrupted, and returns how each ended. It only launches: it writes nothing into a run
// folder. Torch-free.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/child_process.hpp"

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
  /// launch.slurm_requeue: SIGUSR1 (SLURM's signal before a time limit) is passed on to every
  /// rank as a stop, as SIGINT/SIGTERM are.
  bool pass_on_usr1 = false;
  /// Set in every rank's environment besides the world's variables.
  std::map<std::string, std::string> environment;
  /// When set, node 0 calls it with master_port before starting ranks: it hosts the rendezvous
  /// store (0: any free port) and returns the port; every rank then joins as a client. Keep what
  /// it starts alive until spawn_ranks returns.
  std::function<int(int master_port)> host_rendezvous;
};

/// How the ranks ended.
struct LaunchResult {
  /// The launcher's exit code: 0 when every rank exited 0; the first failing rank's code (1
  /// when a signal killed it: 130 and 143 keep meaning "you interrupted it"); 128 + the signal
  /// that interrupted the launcher unless every rank still ended well.
  int exit_code = 0;
  std::vector<util::ChildExit> ranks;  ///< by local rank; last_lines: its output's tail
  /// The first rank that failed (its global rank), or -1.
  int failed_rank = -1;
  util::ChildExit failure;  ///< how it ended; last_lines from its log file when it said where
  /// The failed rank's log file (RUN_DIR/logs/rankN.log), when it said where; else "".
  std::string failed_rank_log;
  int interrupted_by = 0;  ///< SIGINT/SIGTERM the launcher passed on, or 0
  /// The run folder the ranks wrote (from where they said their logs are), "" when none said.
  std::string run_dir;
};

/// Absolute path of the running program (/proc/self/exe), to spawn ranks of itself.
std::string self_executable();

/// A TCP port that was free on this machine a moment ago.
int pick_free_port();

/// Starts the ranks and waits for them. A failing rank stops the others (SIGTERM, then SIGKILL
/// after stop_grace_s) and is reported on stderr: which rank, how it ended, its last lines. A
/// SIGINT/SIGTERM to the launcher is passed on to every rank once (each stops after its step,
/// see train/stop_request.hpp); a second one kills them. Writes no file of the run: the caller
/// records a failure where it keeps the run. Throws runner::ConfigError on a bad layout (e.g.
/// master_port 0 with nnodes > 1).
LaunchResult spawn_ranks(const SpawnOptions& options);

/// Under torchrun (TORCHELASTIC_ERROR_FILE set), records `message` as this rank's root-cause
/// error in the JSON torchrun's summary reads; does nothing otherwise. Never throws.
void write_torchelastic_error(const std::string& message);

}  // namespace runner::launch
