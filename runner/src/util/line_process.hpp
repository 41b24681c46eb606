#pragma once
// A helper program spoken to a line at a time: a request on its stdin, its answer the next line
// of its stdout (runner's Optuna bridge). It dies with us; its stderr is ours. Torch-free.

#include <string>
#include <vector>

namespace runner::util {

class LineProcess {
 public:
  /// Starts `argv` (argv[0] looked up in PATH). Throws runner::Error when it cannot start.
  explicit LineProcess(const std::vector<std::string>& argv);
  /// Closes its stdin (it ends) and reaps it.
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  /// Sends `line` and returns its answer. Throws runner::Error naming the program when it has
  /// ended (its exit) instead of answering.
  std::string ask(const std::string& line);

 private:
  std::string program_;
  int pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffered_;
};

}  // namespace runner::util
