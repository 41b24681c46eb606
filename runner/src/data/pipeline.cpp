#include "data/pipeline.hpp"

#include "runner/error.hpp"

namespace runner::data {

Pipeline build_pipeline(const nlohmann::json& entries, const Registry<TransformFactory>& registry) {
  Pipeline pipeline;
  if (entries.is_null()) return pipeline;
  if (!entries.is_array()) throw ConfigError("transforms must be a list of {name: ..., ...}");
  for (const nlohmann::json& entry : entries) {
    if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string())
      throw ConfigError("each transform must be a mapping with a 'name' (got " + entry.dump() +
                        ")");
    const std::string name = entry.at("name").get<std::string>();
    const auto& plugin = registry.at(name);
    nlohmann::json params = entry;
    params.erase("name");
    // Defaults again (idempotent after the core's validation) so direct callers get them too.
    if (plugin.schema.contains("properties"))
      for (const auto& [key, property] : plugin.schema.at("properties").items())
        if (!params.contains(key) && property.contains("default"))
          params[key] = property.at("default");
    pipeline.add(plugin.factory(params), name);
  }
  return pipeline;
}

}  // namespace runner::data
