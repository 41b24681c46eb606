#pragma once
// Console and file logging for every rank: the main process logs at the configured level to
// the console; other ranks log only warnings and errors there, prefixed "[rank N]"; every rank
// can write its full log to a file in the run directory.

#include <cstdio>
#include <string>

#include <spdlog/common.h>

namespace runner::log {

struct LogOptions {
  int rank = 0;
  int world_size = 1;
  std::string level = "info";  ///< trace|debug|info|warn|error
  std::string file;            ///< "" for no log file
};

/// Installs the process-wide spdlog logger. Throws ConfigError on an unknown level.
void init_logging(const LogOptions& options);

/// Adds (or replaces) the log file once the run directory is known.
void set_log_file(const std::string& path);

/// Writes the console sink to `console` (nullptr: stderr again); see native_output.hpp.
void set_console_file(std::FILE* console);

/// Logs `message` to the log file only (when there is one), not to the console.
void file_only(spdlog::level::level_enum level, const std::string& message);

/// Whether stdout is a terminal (progress bars) or not (plain progress lines).
bool stdout_is_terminal();

}  // namespace runner::log
