#include <boost/program_options.hpp>

#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/sweep_checks.hpp"
#include "cli/validate_report.hpp"
#include "config/config_issue.hpp"
#include "config/experiment.hpp"
#include "config/init_source.hpp"
#include "config/path_keys.hpp"
#include "config/pretrained_source.hpp"
#include "run/preflight.hpp"
#include "run/run_trackers.hpp"
#include "run/start_checks.hpp"
#include "runner/error.hpp"
#include "sweep/sweep_file.hpp"

namespace runner::cli {

int command_validate(const Args& args) {
  CommandLine cl(
      "validate", "FILE... [--set KEY=VALUE]... [--format text|json|github]",
      "Validates experiment and sweep files (a sweep: every point) against the schemas\n"
      "and every selected plugin's parameters, then what the run needs before a rank\n"
      "starts: the data folders and weight files exist, the data fits the model, one\n"
      "training step runs on the CPU, the keys fit each other and the trackers' servers\n"
      "take the run: --schema-only skips all that, for machines without the data. Prints\n"
      "one line per problem (--format json: an array of objects with file, line, column,\n"
      "key, message, hint; github: GitHub Actions annotations). Exit 2 on any problem.");
  cl.flag("set", po::value<std::vector<std::string>>()->composing(),
          "Override KEY=VALUE (dotted keys, list indices too) before validating")
      .flag("quiet,q", nullptr, "Print problems only")
      .flag("schema-only", nullptr,
            "Check against the schemas only, not whether data folders and weight files exist")
      .flag("format", po::value<std::string>()->default_value("text"),
            "text (one line per problem), json (an array of problem objects) or github (GitHub "
            "Actions' ::error annotations)")
      .positional("files");
  if (!cl.parse(args)) return 0;
  const std::string format = cl.get<std::string>("format");
  if (format != "text" && format != "json" && format != "github")
    throw ConfigError("runner validate --format " + format + ": expected text, json or github");
  const auto files = cl.list("files");
  if (files.empty())
    throw ConfigError("runner validate: give at least one file; see 'runner validate --help'");
  const auto overrides = cl.get_or("set", std::vector<std::string>{});
  const bool say_ok = !cl.has("quiet") && format == "text";
  std::vector<ValidateProblem> problems;
  int failures = 0;
  for (const auto& file : files) {
    const size_t before = problems.size();
    try {
      if (sweep::is_sweep_file(file)) {
        const auto sweep = sweep::load_sweep(file, overrides);
        if (!cl.has("schema-only")) check_sweep_starts(sweep, sweep.executor == "local");
        if (say_ok && sweep.search == "optuna")
          std::cout << "ok: " << file << " (sweep, search: optuna, " << sweep.doc.at("trials")
                    << " trials)\n";
        else if (say_ok)
          std::cout << "ok: " << file << " (sweep, " << sweep.points.size() << " points)\n";
      } else {
        auto experiment = config::load_experiment(file, overrides);
        if (!cl.has("schema-only")) {
          // The data and weights are reachable: check that they fit the model too.
          config::require_paths_exist(experiment);
          config::resolve_pretrained(experiment);
          config::check_init_from(experiment);
          run::check_devices(experiment);
          run::check_output_folder(experiment, run::RunOptions{});
          run::check_model(experiment);
          for (const auto& warning : run::check_run_starts(experiment, run::RunOptions{}))
            problems.push_back(problem_of_line(warning, file, true));
          // The trackers' services take the run (a tracker down is a warning: it may be up
          // when the run starts, and a run goes on without it).
          for (const auto& warning : run::check_trackers(experiment))
            problems.push_back(problem_of_line(warning, file, true));
        }
        if (say_ok) std::cout << "ok: " << file << "\n";
      }
    } catch (const config::ConfigValidationError& e) {
      ++failures;
      for (const auto& issue : e.issues()) problems.push_back(problem_of(issue, file));
    } catch (const Error& e) {
      ++failures;
      problems.push_back(problem_of_line(e.what(), file));
    }
    // Text goes as it is found, a file's problems under its ok line or in its place.
    if (format == "text") {
      print_problems({problems.begin() + static_cast<std::ptrdiff_t>(before), problems.end()},
                     format, std::cerr);
    }
  }
  if (format != "text") print_problems(problems, format, std::cout);
  return failures == 0 ? kExitOk : kExitUsage;
}

}  // namespace runner::cli
