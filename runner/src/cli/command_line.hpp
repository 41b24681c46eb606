#pragma once
// Declaring and parsing a command's flags: each flag is declared once, with its help text and
// the environment variable that can set it.

#include <boost/program_options.hpp>

#include <map>
#include <string>
#include <vector>

namespace runner::cli {

namespace po = boost::program_options;

/// A flag's environment variable (empty when it has none), for the help text and parsing.
struct FlagEnv {
  std::string flag;
  std::string env;
};

/// One subcommand's flags and positional arguments.
class CommandLine {
 public:
  CommandLine(std::string command, std::string usage, std::string summary);

  /// Declares a flag: `name` as Boost spells it ("set", "num-processes,n"), its value semantic
  /// (nullptr for a switch), its help, and an environment variable that sets it when the flag is
  /// absent ("" for none).
  CommandLine& flag(const std::string& name, const po::value_semantic* value,
                    const std::string& help, const std::string& env = "");
  /// Collects remaining arguments as the positional `name` (a list).
  CommandLine& positional(const std::string& name, int max_count = -1);

  /// Parses `args` (without the command name). Throws ConfigError on unknown or malformed flags,
  /// naming the command and the close matches. `--help` prints usage and returns false.
  bool parse(const std::vector<std::string>& args);

  bool has(const std::string& name) const { return vm_.count(name) != 0 && !vm_[name].defaulted(); }
  template <class T>
  T get(const std::string& name) const {
    return vm_[name].as<T>();
  }
  /// `name`'s value, or `fallback` where the command line leaves it out.
  template <class T>
  T get_or(const std::string& name, T fallback) const {
    return has(name) ? get<T>(name) : fallback;
  }
  std::vector<std::string> list(const std::string& name) const;
  /// The positional `name` given exactly once; else ConfigError "runner COMMAND: give one
  /// `what`; see 'runner help COMMAND'".
  std::string only(const std::string& name, const std::string& what) const;
  const po::variables_map& values() const { return vm_; }

 private:
  std::string command_, usage_, summary_;
  po::options_description options_;
  po::positional_options_description positional_;
  std::vector<FlagEnv> envs_;
  std::string positional_name_;
  po::variables_map vm_;
};

}  // namespace runner::cli
