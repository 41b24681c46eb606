#pragma once
// The subcommands of `runner`. Each takes its arguments (after the command name) and returns
// the process exit code; user errors are thrown as runner::Error.

#include <string>
#include <vector>

namespace runner::cli {

using Args = std::vector<std::string>;

int command_validate(const Args& args);
int command_config(const Args& args);
int command_plugins(const Args& args);
int command_env(const Args& args);
int command_schema(const Args& args);
int command_run(const Args& args);
int command_predict(const Args& args);
int command_sweep(const Args& args);
int command_sweep_point(const Args& args);
int command_export(const Args& args);
int command_report(const Args& args);
int command_import(const Args& args);
int command_show_batch(const Args& args);
int command_lr_find(const Args& args);
int command_bench_data(const Args& args);
int command_track(const Args& args);

}  // namespace runner::cli
