// runner: one YAML file -> a distributed deep-learning experiment on libtorch.

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "models/torchscript_error.hpp"
#include "registry/plugin_loader.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "runner/suggest.hpp"
#include "util/cpu_features.hpp"
#include "util/malloc_tuning.hpp"
#include "util/process_title.hpp"

namespace {

struct Command {
  int (*run)(const runner::cli::Args&);
  const char* summary;
};

/// Whether the command runs tensor kernels: those stop before ATen would, where
/// ATEN_CPU_CAPABILITY names kernels this CPU cannot run (`runner env` reports it instead).
bool runs_tensor_kernels(const std::string& command) {
  for (const char* reader : {"env", "plugins", "schema", "config", "report", "track"})
    if (command == reader) return false;
  return true;
}

const std::map<std::string, Command>& commands() {
  using namespace runner::cli;
  static const std::map<std::string, Command> table = {
      {"validate", {command_validate, "Validate experiment and sweep files against their schemas"}},
      {"config", {command_config, "Print an experiment's fully resolved config"}},
      {"plugins", {command_plugins, "List registered plugins by kind, with their parameters"}},
      {"env", {command_env, "Versions, devices and threads of this machine"}},
      {"schema", {command_schema, "Print the experiment JSON Schema with every plugin included"}},
      {"run", {command_run, "Train (and predict) as an experiment file says"}},
      {"predict", {command_predict, "Predict a split with a checkpoint or pretrained weights"}},
      {"sweep", {command_sweep, "Run every point of a sweep file and summarise them"}},
      {"sweep-point",
       {command_sweep_point, "Ready a sweep point's folder (a SLURM sweep's tasks run it)"}},
      {"export", {command_export, "Write a checkpoint's model as safetensors with timm's names"}},
      {"report", {command_report, "Build a run's report.html, or one page comparing runs"}},
      {"track", {command_track, "Send what a run's trackers could not (a server that was down)"}},
      {"lr-find",
       {command_lr_find, "Suggest an lr by Leslie Smith's range test on the real training step"}},
      {"bench-data",
       {command_bench_data, "Time the input pipeline alone: images/s and where the time goes"}},
      {"show-batch",
       {command_show_batch, "Draw a batch as the model gets it (augmented, mixed), captioned"}},
      {"import",
       {command_import, "Build a timm model as TorchScript (model.backbone: timm/NAME)"}}};
  return table;
}

void print_usage() {
  std::cout << "usage: runner COMMAND [ARGS...]    (runner help COMMAND for its options)\n\n"
               "Commands:\n";
  for (const auto& kv : commands()) {
    std::cout << "  " << kv.first << std::string(12 - kv.first.size(), ' ') << kv.second.summary
              << "\n";
  }
  std::cout << "  help      This list, or one command's options: runner help COMMAND\n";
}

}  // namespace

int main(int argc, char** argv) {
  runner::util::tune_malloc_for_training();
  runner::util::remember_command_line(argc, argv);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage();
    return argc < 2 ? runner::kExitUsage : runner::kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::cout << "runner " << RUNNER_VERSION << "\n";
    return runner::kExitOk;
  }
  std::string name = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  // runner help [COMMAND]: the usage, or COMMAND --help.
  if (name == "help") {
    if (rest.empty()) {
      print_usage();
      return runner::kExitOk;
    }
    name = rest.front();
    rest = {"--help"};
  }
  try {
    auto it = commands().find(name);
    if (it == commands().end()) {
      std::vector<std::string> names;
      for (const auto& kv : commands()) names.push_back(kv.first);
      throw runner::ConfigError("unknown command '" + name + "'" +
                                runner::did_you_mean(name, names) + "; see 'runner help'");
    }
    if (runs_tensor_kernels(name)) {
      if (const std::string why = runner::util::aten_capability_refusal(); !why.empty())
        throw runner::ConfigError(why);
    }
    runner::register_builtin_plugins(runner::registries());
    runner::load_plugins_from_environment();
    return it->second.run(runner::cli::Args(rest.begin(), rest.end()));
  } catch (const runner::Error& e) {
    std::cerr << "runner: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    // libtorch's message without its C++ stack frames (a rank's log keeps the whole text).
    std::string message = e.what_without_backtrace();
    message = message.substr(0, message.find('\n'));
    std::cerr << "runner: error: libtorch: " << message
              << " (the full trace is in the rank's log under the run's logs/)\n";
    return runner::kExitFailure;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the command was given or reads that the system refuses (a symlink loop, no
    // permission, a file where a folder should be): the path and the reason, one line.
    std::cerr << "runner: error: " << e.path1().string() << ": " << e.code().message()
              << (e.path2().empty() ? "" : " (with " + e.path2().string() + ")")
              << ": check the path and its permissions\n";
    return runner::kExitUsage;
  } catch (const std::exception& e) {
    if (runner::models::is_torchscript_error(e.what())) {
      // Raised inside a scripted model (model.backbone timm/* or torchscript), not by runner.
      std::cerr << "runner: error: the scripted model failed: "
                << runner::models::error_reason_line(e.what()) << "\n";
      return runner::kExitFailure;
    }
    std::cerr << "runner: internal error: " << e.what()
              << " (please report it with the command and config that caused it)\n";
    return runner::kExitFailure;
  }
}
