#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/experiment.hpp"
#include "config/experiment_keys.hpp"
#include "config/yaml_emit.hpp"
#include "runner/error.hpp"

namespace runner::cli {

int command_config(const Args& args) {
  CommandLine cl("config", "EXPERIMENT.yaml [--set KEY=VALUE]... [--json]",
                 "Prints the fully resolved config: includes merged, ${env:...} substituted,\n"
                 "overrides applied, every default filled in. This is exactly what `run` runs.");
  cl.flag("set", po::value<std::vector<std::string>>()->composing(), "Override KEY=VALUE")
      .flag("json", nullptr, "Print JSON instead of YAML")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const auto e = config::load_experiment(cl.only("file", "experiment file"),
                                         cl.get_or("set", std::vector<std::string>{}));
  for (const std::string& note : e.notes) std::cerr << "note: " << note << "\n";
  if (cl.has("json"))
    std::cout << e.doc.dump(2) << "\n";
  else
    std::cout << config::to_yaml(e.doc, config::experiment_key_order());
  return 0;
}

}  // namespace runner::cli
