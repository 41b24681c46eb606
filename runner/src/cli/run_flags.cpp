#include "cli/run_flags.hpp"

namespace runner::cli {

void add_run_flags(CommandLine& cl) {
  cl.flag("set", po::value<std::vector<std::string>>()->composing(),
          "Override KEY=VALUE (dotted keys, list indices too), e.g. --set optimizer.lr=1e-4")
      .flag("cpu", nullptr, "Run on CPU ranks over Gloo (launch.device=cpu)")
      .flag("num-processes,n", po::value<int>(), "Ranks on this node (launch.num_processes)",
            "RUNNER_NUM_PROCESSES")
      .flag("nnodes", po::value<int>(), "Nodes (launch.nnodes)")
      .flag("node-rank", po::value<int>(), "This node's rank (launch.node_rank)")
      .flag("master-addr", po::value<std::string>(), "Rendezvous host (launch.master_addr)")
      .flag("master-port", po::value<int>(), "Rendezvous port, 0 = free port (launch.master_port)")
      .flag("threads", po::value<int>(), "libtorch threads per rank (launch.threads_per_process)",
            "RUNNER_THREADS")
      .flag("log-level", po::value<std::string>(), "trace|debug|info|warn|error (log_level)",
            "RUNNER_LOG_LEVEL");
}

void add_config_dir_flag(CommandLine& cl) {
  cl.flag("config-dir", po::value<std::string>(),
          "Resolve the experiment's relative paths (data, plugins, weights) against DIR, not "
          "its folder");
}

std::string config_dir(const CommandLine& cl) { return cl.get_or<std::string>("config-dir", ""); }

std::vector<std::string> run_overrides(const CommandLine& cl) {
  std::vector<std::string> out;
  if (cl.has("set")) out = cl.get<std::vector<std::string>>("set");
  if (cl.has("cpu")) out.push_back("launch.device=cpu");
  if (cl.has("num-processes"))
    out.push_back("launch.num_processes=" + std::to_string(cl.get<int>("num-processes")));
  if (cl.has("nnodes")) out.push_back("launch.nnodes=" + std::to_string(cl.get<int>("nnodes")));
  if (cl.has("node-rank"))
    out.push_back("launch.node_rank=" + std::to_string(cl.get<int>("node-rank")));
  if (cl.has("master-addr"))
    out.push_back("launch.master_addr=" + cl.get<std::string>("master-addr"));
  if (cl.has("master-port"))
    out.push_back("launch.master_port=" + std::to_string(cl.get<int>("master-port")));
  if (cl.has("threads"))
    out.push_back("launch.threads_per_process=" + std::to_string(cl.get<int>("threads")));
  if (cl.has("log-level")) out.push_back("log_level=" + cl.get<std::string>("log-level"));
  return out;
}

}  // namespace runner::cli
