#pragma once
// Errors a user can act on. The CLI prints what() as one line and exits with exit_code().

#include <stdexcept>
#include <string>

namespace runner {

/// Process exit codes shared by every command.
enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

/// Base of every error meant for a user: what was wrong, where, and what to do.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitFailure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// A bad experiment/sweep file, override or command line (exit code 2).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, kExitUsage) {}
};

/// A bad data file, checkpoint or weights file (exit code 1).
class DataError : public Error {
 public:
  explicit DataError(const std::string& message) : Error(message, kExitFailure) {}
};

/// The place data is kept does not answer (a web server, a pipe: command) after its retries.
/// Before any rank starts it is a configuration that names a place that does not answer (exit
/// 2); during a run it stops every rank with last.pt saved, and is never left out as one bad
/// sample (data.on_bad_image: skip).
class StorageError : public ConfigError {
 public:
  explicit StorageError(const std::string& message) : ConfigError(message) {}
};

}  // namespace runner
