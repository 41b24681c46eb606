#include "launch/world_env.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "runner/error.hpp"

namespace runner::launch {
namespace {

int parse_int(const EnvLookup& env, const char* name, const std::string& source) {
  const char* text = env(name);
  if (text == nullptr) {
    throw ConfigError(source + " environment: " + name + " is not set (other " + source +
                      " variables are); set it or unset them all");
  }
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 1'000'000) {
    throw ConfigError(source + " environment: " + name + "='" + text +
                      "' is not a non-negative integer");
  }
  return static_cast<int>(value);
}

int parse_int_or(const EnvLookup& env, const char* name, int fallback, const std::string& source) {
  return env(name) == nullptr ? fallback : parse_int(env, name, source);
}

std::string string_or(const EnvLookup& env, const char* name, const std::string& fallback) {
  const char* text = env(name);
  return (text == nullptr || *text == '\0') ? fallback : std::string(text);
}

void check_world(const WorldEnv& world) {
  if (world.world_size < 1) {
    throw ConfigError(world.source + " environment: WORLD_SIZE must be at least 1");
  }
  if (world.rank >= world.world_size) {
    throw ConfigError(world.source + " environment: rank " + std::to_string(world.rank) +
                      " is not below the world size " + std::to_string(world.world_size) +
                      "; check the launcher's process counts");
  }
  if (world.local_world_size < 1 || world.local_rank >= world.local_world_size) {
    throw ConfigError(world.source + " environment: local rank " +
                      std::to_string(world.local_rank) + " is not below the local world size " +
                      std::to_string(world.local_world_size));
  }
  if (world.master_port < 1 || world.master_port > 65535) {
    throw ConfigError(world.source + " environment: master port " +
                      std::to_string(world.master_port) + " is not in 1..65535");
  }
}

// Splits on commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

void expand_host(const std::string& host, const std::string& whole, std::vector<std::string>& out) {
  auto open = host.find('[');
  if (open == std::string::npos) {
    if (host.find(']') != std::string::npos) {
      throw ConfigError("SLURM_NODELIST '" + whole + "': unmatched ']'");
    }
    if (!host.empty()) out.push_back(host);
    return;
  }
  auto close = host.find(']', open);
  if (close == std::string::npos) {
    throw ConfigError("SLURM_NODELIST '" + whole + "': unmatched '['");
  }
  const std::string prefix = host.substr(0, open);
  const std::string suffix = host.substr(close + 1);
  std::string ranges = host.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    std::string range =
        ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto dash = range.find('-');
    std::string first = range.substr(0, dash);
    std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
    if (first.empty() || last.empty() ||
        first.find_first_not_of("0123456789") != std::string::npos ||
        last.find_first_not_of("0123456789") != std::string::npos) {
      throw ConfigError("SLURM_NODELIST '" + whole + "': bad range '" + range + "'");
    }
    long lo = std::stol(first);
    long hi = std::stol(last);
    if (hi < lo) throw ConfigError("SLURM_NODELIST '" + whole + "': empty range '" + range + "'");
    for (long n = lo; n <= hi; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < first.size()) {  // zero padding as written, e.g. 01-04
        number.insert(0, first.size() - number.size(), '0');
      }
      expand_host(prefix + number + suffix, whole, out);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

std::vector<std::string> expand_slurm_nodelist(const std::string& nodelist) {
  std::vector<std::string> hosts;
  for (const std::string& part : split_top_level(nodelist)) {
    expand_host(part, nodelist, hosts);
  }
  return hosts;
}

bool launched_by_runner(const EnvLookup& env) {
  const char* value = env(kLaunchedByRunnerVar);
  return value != nullptr && std::string(value) == "1";
}

std::optional<WorldEnv> detect_world_env(const EnvLookup& env) {
  WorldEnv world;
  if (env("RANK") != nullptr || env("WORLD_SIZE") != nullptr) {
    world.source = launched_by_runner(env) ? "runner" : "torchrun";
    world.rank = parse_int(env, "RANK", world.source);
    world.world_size = parse_int(env, "WORLD_SIZE", world.source);
    world.local_rank = parse_int_or(env, "LOCAL_RANK", world.rank, world.source);
    world.local_world_size = parse_int_or(env, "LOCAL_WORLD_SIZE", world.world_size, world.source);
    world.node_rank =
        parse_int_or(env, "GROUP_RANK", world.rank / world.local_world_size, world.source);
    world.master_addr = string_or(env, "MASTER_ADDR", "127.0.0.1");
    world.master_port = parse_int_or(env, "MASTER_PORT", kDefaultMasterPort, world.source);
    if (string_or(env, "TORCHELASTIC_USE_AGENT_STORE", "") == "True") {
      world.agent_store_prefix =
          "/worker/attempt_" + string_or(env, "TORCHELASTIC_RESTART_COUNT", "0");
    } else if (world.source == "runner" && string_or(env, kLauncherStoreVar, "") == "1") {
      world.agent_store_prefix = "/runner/attempt_" + string_or(env, kAttemptVar, "0");
    }
  } else if (env("SLURM_PROCID") != nullptr && env("SLURM_NTASKS") != nullptr &&
             (env("SLURM_STEP_ID") != nullptr || env("SLURM_STEPID") != nullptr)) {
    // Tasks of a job step (srun). A batch script has SLURM_PROCID and SLURM_NTASKS too, but no
    // step: runner started there (`exec runner run ...`) is the job's launcher.
    world.source = "slurm";
    world.rank = parse_int(env, "SLURM_PROCID", world.source);
    world.world_size = parse_int(env, "SLURM_NTASKS", world.source);
    world.local_rank = parse_int_or(env, "SLURM_LOCALID", 0, world.source);
    world.node_rank = parse_int_or(env, "SLURM_NODEID", 0, world.source);
    // SLURM_NTASKS_PER_NODE may read "2(x3)"; the leading number is the per-node count.
    const char* per_node = env("SLURM_NTASKS_PER_NODE");
    world.local_world_size = per_node ? std::atoi(per_node) : 0;
    if (world.local_world_size <= 0) {
      int nnodes = parse_int_or(env, "SLURM_NNODES", 1, world.source);
      world.local_world_size = std::max(1, world.world_size / std::max(1, nnodes));
    }
    if (world.local_rank >= world.local_world_size) world.local_world_size = world.local_rank + 1;
    const char* nodelist =
        env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_NODELIST");
    std::vector<std::string> hosts =
        nodelist ? expand_slurm_nodelist(nodelist) : std::vector<std::string>{};
    world.master_addr = string_or(env, "MASTER_ADDR", hosts.empty() ? "127.0.0.1" : hosts[0]);
    if (!env("MASTER_ADDR") && !hosts.empty())
      world.master_addr_source =
          env("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_NODELIST";
    // The job id makes concurrent jobs on shared nodes pick different ports.
    int job_id = parse_int_or(env, "SLURM_JOB_ID", 0, world.source);
    world.master_port = parse_int_or(env, "MASTER_PORT", 15000 + job_id % 20000, world.source);
  } else if (env("OMPI_COMM_WORLD_RANK") != nullptr) {
    world.source = "mpi";
    world.rank = parse_int(env, "OMPI_COMM_WORLD_RANK", world.source);
    world.world_size = parse_int(env, "OMPI_COMM_WORLD_SIZE", world.source);
    world.local_rank = parse_int_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, world.source);
    world.local_world_size =
        parse_int_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", world.world_size, world.source);
    world.node_rank = parse_int_or(env, "OMPI_COMM_WORLD_NODE_RANK",
                                   world.rank / world.local_world_size, world.source);
    world.master_addr = string_or(env, "MASTER_ADDR", "127.0.0.1");
    world.master_port = parse_int_or(env, "MASTER_PORT", kDefaultMasterPort, world.source);
  } else {
    return std::nullopt;
  }
  if (env("MASTER_ADDR")) world.master_addr_source = "MASTER_ADDR";
  check_world(world);
  return world;
}

}  // namespace runner::launch
