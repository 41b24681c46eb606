#include "cli/command_line.hpp"

#include <cstdlib>
#include <iostream>

#include "runner/error.hpp"
#include "runner/suggest.hpp"

namespace runner::cli {

CommandLine::CommandLine(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      summary_(std::move(summary)),
      options_("Options") {
  options_.add_options()("help,h", "Show this help.");
}

CommandLine& CommandLine::flag(const std::string& name, const po::value_semantic* value,
                               const std::string& help, const std::string& env) {
  const std::string text = env.empty() ? help : help + " [env " + env + "]";
  if (value)
    options_.add_options()(name.c_str(), value, text.c_str());
  else
    options_.add_options()(name.c_str(), text.c_str());
  if (!env.empty()) envs_.push_back({name.substr(0, name.find(',')), env});
  return *this;
}

CommandLine& CommandLine::positional(const std::string& name, int max_count) {
  positional_name_ = name;
  options_.add_options()(name.c_str(), po::value<std::vector<std::string>>(), "");
  positional_.add(name.c_str(), max_count);
  return *this;
}

std::vector<std::string> CommandLine::list(const std::string& name) const {
  if (vm_.count(name) == 0) return {};
  return vm_[name].as<std::vector<std::string>>();
}

std::string CommandLine::only(const std::string& name, const std::string& what) const {
  const std::vector<std::string> given = list(name);
  if (given.size() != 1)
    throw ConfigError("runner " + command_ + ": give one " + what + "; see 'runner help " +
                      command_ + "'");
  return given.front();
}

bool CommandLine::parse(const std::vector<std::string>& args) {
  try {
    po::parsed_options parsed =
        po::command_line_parser(args)
            .options(options_)
            .positional(positional_)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run();
    po::store(parsed, vm_);
    // Environment variables fill flags that the command line did not give.
    for (const auto& fe : envs_) {
      if (vm_.count(fe.flag) && !vm_[fe.flag].defaulted()) continue;
      const char* value = std::getenv(fe.env.c_str());
      if (value == nullptr || *value == '\0') continue;
      std::vector<std::string> env_args = {"--" + fe.flag, value};
      po::variables_map env_vm;
      po::store(po::command_line_parser(env_args).options(options_).run(), env_vm);
      auto it = env_vm.find(fe.flag);
      if (it != env_vm.end()) {
        vm_.erase(fe.flag);
        vm_.insert(*it);
      }
    }
    po::notify(vm_);
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    for (const auto& o : options_.options()) names.push_back("--" + o->long_name());
    const std::string bad = e.get_option_name();
    throw ConfigError("runner " + command_ + ": unknown option '" + bad + "'" +
                      did_you_mean(bad, names) + "; see 'runner " + command_ + " --help'");
  } catch (const po::error& e) {
    throw ConfigError("runner " + command_ + ": " + e.what() + "; see 'runner " + command_ +
                      " --help'");
  }
  if (vm_.count("help")) {
    std::cout << "usage: runner " << command_ << " " << usage_ << "\n\n" << summary_ << "\n\n";
    // Hide the positional's internal option from the listing.
    po::options_description visible("Options");
    for (const auto& o : options_.options())
      if (o->long_name() != positional_name_) visible.add(o);
    std::cout << visible << "\n";
    return false;
  }
  return true;
}

}  // namespace runner::cli
