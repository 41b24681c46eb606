#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/embedded_schemas.hpp"
#include "config/experiment.hpp"
#include "runner/error.hpp"

namespace runner::cli {

int command_schema(const Args& args) {
  CommandLine cl("schema", "[--sweep | --static]",
                 "Prints the experiment JSON Schema (draft-07) with every registered plugin's\n"
                 "parameters included (for editors and independent validators).");
  cl.flag("sweep", nullptr, "Print the sweep schema instead")
      .flag("static", nullptr, "Print schemas/experiment.schema.json as shipped (no plugins)");
  if (!cl.parse(args)) return 0;
  if (cl.has("sweep"))
    std::cout << config::embedded_schema("sweep.schema.json").dump(2) << "\n";
  else if (cl.has("static"))
    std::cout << config::embedded_schema("experiment.schema.json").dump(2) << "\n";
  else
    std::cout << config::experiment_schema_with_plugins().dump(2) << "\n";
  return 0;
}

}  // namespace runner::cli
