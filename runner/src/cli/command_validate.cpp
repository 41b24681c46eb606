#include <boost/program_options.hpp>

#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/config_issue.hpp"
#include "config/experiment.hpp"
#include "config/path_keys.hpp"
#include "run/preflight.hpp"
#include "run/run_trackers.hpp"
#include "run/start_checks.hpp"
#include "runner/error.hpp"
#include "sweep/sweep_file.hpp"

namespace runner::cli {

int command_validate(const Args& args) {
  CommandLine cl(
      "validate", "FILE... [--set KEY=VALUE]...",
      "Validates experiment and sweep files (a sweep: every point) against the schemas\n"
      "and every selected plugin's parameters, then that the data folders and weight\n"
      "files they name exist, that the data fits the model (classes, channels) and that\n"
      "the trackers' servers take the run: --schema-only skips those, for machines\n"
      "without the data. Prints one line per problem.");
  cl.flag("set", po::value<std::vector<std::string>>()->composing(),
          "Override KEY=VALUE (dotted keys, list indices too) before validating")
      .flag("quiet,q", nullptr, "Print problems only")
      .flag("schema-only", nullptr,
            "Check against the schemas only, not whether data folders and weight files exist")
      .positional("files");
  if (!cl.parse(args)) return 0;
  const auto files = cl.list("files");
  if (files.empty())
    throw ConfigError("runner validate: give at least one file; see 'runner validate --help'");
  const auto overrides =
      cl.has("set") ? cl.get<std::vector<std::string>>("set") : std::vector<std::string>{};
  int failures = 0;
  for (const auto& file : files) {
    try {
      if (sweep::is_sweep_file(file)) {
        const auto sweep = sweep::load_sweep(file, overrides);
        if (!cl.has("quiet"))
          std::cout << "ok: " << file << " (sweep, " << sweep.points.size() << " points)\n";
      } else {
        const auto experiment = config::load_experiment(file, overrides);
        if (!cl.has("schema-only")) {
          // The data is reachable: check that it fits the model too.
          config::require_paths_exist(experiment);
          run::check_devices(experiment);
          run::check_output_folder(experiment, run::RunOptions{});
          run::check_model(experiment);
          for (const auto& warning : run::check_run_starts(experiment, run::RunOptions{}))
            std::cerr << "warning: " << warning << "\n";
          // The trackers' services take the run (a tracker down is a warning: it may be up
          // when the run starts, and a run goes on without it).
          for (const auto& warning : run::check_trackers(experiment))
            std::cerr << "warning: " << warning << "\n";
        }
        if (!cl.has("quiet")) std::cout << "ok: " << file << "\n";
      }
    } catch (const config::ConfigValidationError& e) {
      ++failures;
      for (const auto& issue : e.issues()) std::cerr << issue.to_string() << "\n";
    } catch (const Error& e) {
      ++failures;
      std::cerr << e.what() << "\n";
    }
  }
  return failures == 0 ? kExitOk : kExitUsage;
}

}  // namespace runner::cli
