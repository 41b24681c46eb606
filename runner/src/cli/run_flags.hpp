#pragma once
// Flags shared by `run`, `predict` and `sweep`, and how they become config overrides.

#include <string>
#include <vector>

#include "cli/command_line.hpp"

namespace runner::cli {

/// Declares --set, --cpu, --num-processes, --nnodes, --node-rank, --master-addr, --master-port,
/// --threads and --log-level.
void add_run_flags(CommandLine& cl);

/// Declares --config-dir (run and predict).
void add_config_dir_flag(CommandLine& cl);
/// The --config-dir folder, or "" (relative paths resolve against the experiment file's folder).
std::string config_dir(const CommandLine& cl);

/// The --set overrides followed by the ones the other run flags stand for.
std::vector<std::string> run_overrides(const CommandLine& cl);

}  // namespace runner::cli
