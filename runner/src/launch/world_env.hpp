#pragma once
// Where this process sits in a distributed world, read from the environment a launcher left:
// torchrun (or runner's own launcher), SLURM srun, or Open MPI mpirun. Torch-free.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace runner::launch {

/// Default rendezvous port when no launcher names one (torchrun's default).
constexpr int kDefaultMasterPort = 29500;

/// Environment variable set by runner's own launcher in every rank it spawns.
constexpr const char* kLaunchedByRunnerVar = "RUNNER_LAUNCHED";
/// Set to 1 by runner's own launcher when it hosts the rendezvous store (ranks join as clients).
constexpr const char* kLauncherStoreVar = "RUNNER_LAUNCHER_STORE";
/// A file where a rank spawned by runner's launcher writes the path of its log file, so the
/// launcher can show a failed rank's last log lines (its console shows warnings only).
constexpr const char* kLogPathFileVar = "RUNNER_LOG_PATH_FILE";
/// The restarts before this attempt (JSON: [{time, cause, rank}]), set by runner's launcher
/// under launch.max_restarts: the ranks record them in run.json and summary.json.
constexpr const char* kRestartsVar = "RUNNER_RESTARTS";
/// The attempt a rank belongs to (0, then 1 after the first restart), set by runner's launcher.
/// Each attempt's ranks meet under their own prefix of the launcher's store, which lives across
/// restarts: a restarted rank that reaches it before the last attempt's ranks have all ended
/// waits for its own attempt's peers instead of joining the old ones.
constexpr const char* kAttemptVar = "RUNNER_ATTEMPT";

/// One process's place in the world.
struct WorldEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  /// Where master_addr came from, for errors: "MASTER_ADDR", "SLURM_NODELIST" or "default".
  std::string master_addr_source = "default";
  int master_port = kDefaultMasterPort;
  std::string source = "none";  ///< "torchrun", "runner", "slurm", "mpi" or "none"
  /// torchrun's agent (or runner's launcher) already hosts a TCPStore at the master address:
  /// every rank joins it as a client, under this key prefix (empty: rank 0 hosts the store).
  std::string agent_store_prefix;
};

/// Reads a variable; returns nullptr when unset. Tests pass a map-backed lookup.
using EnvLookup = std::function<const char*(const char* name)>;

/// The process environment as an EnvLookup.
EnvLookup process_env();

/// The world this process was started in, checked in the order torchrun/runner, SLURM, Open
/// MPI; nullopt when no launcher variables are present (a single process). Throws
/// runner::ConfigError for malformed or contradictory values (e.g. RANK >= WORLD_SIZE).
std::optional<WorldEnv> detect_world_env(const EnvLookup& env = process_env());

/// Expands a SLURM hostlist such as "node[01-04,07],gpu3" into host names, in order.
/// Throws runner::ConfigError on malformed brackets.
std::vector<std::string> expand_slurm_nodelist(const std::string& nodelist);

/// True when this process is a rank spawned by runner's own launcher (never spawn again).
bool launched_by_runner(const EnvLookup& env = process_env());

}  // namespace runner::launch
