#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/embedded_schemas.hpp"
#include "config/experiment.hpp"
#include "config/schema_reference.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"

namespace runner::cli {

int command_schema(const Args& args) {
  CommandLine cl("schema", "[--sweep | --static | --markdown]",
                 "Prints the experiment JSON Schema (draft-07) with every registered plugin's\n"
                 "parameters included (for editors and independent validators), or with\n"
                 "--markdown the configuration reference (docs/reference.md) made from it.");
  cl.flag("sweep", nullptr, "Print the sweep schema instead")
      .flag("static", nullptr, "Print schemas/experiment.schema.json as shipped (no plugins)")
      .flag(
          "markdown", nullptr,
          "Print the reference of every key and plugin parameter as Markdown (docs/reference.md)");
  if (!cl.parse(args)) return 0;
  if (cl.has("markdown")) {
    nlohmann::json plugins = nlohmann::json::object();
    const Registries& r = registries();
    const auto add = [&](const auto& registry) {
      for (const auto& [name, entry] : registry.entries())
        plugins[registry.kind()][name] = {{"help", entry.help}, {"schema", entry.schema}};
    };
    add(r.datasets);
    add(r.transforms);
    add(r.models);
    add(r.optimizers);
    add(r.schedulers);
    add(r.losses);
    add(r.metrics);
    add(r.trackers);
    std::cout << config::schema_reference_markdown(
        config::embedded_schema("experiment.schema.json"), plugins,
        config::embedded_schema("sweep.schema.json"));
    return 0;
  }
  if (cl.has("sweep"))
    std::cout << config::embedded_schema("sweep.schema.json").dump(2) << "\n";
  else if (cl.has("static"))
    std::cout << config::embedded_schema("experiment.schema.json").dump(2) << "\n";
  else
    std::cout << config::experiment_schema_with_plugins().dump(2) << "\n";
  return 0;
}

}  // namespace runner::cli
