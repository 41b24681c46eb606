#include "config/schema_export.hpp"

#include <cstring>
#include <string>

#include "config/embedded_schemas.hpp"
#include "config/plugin_sections.hpp"

namespace runner::config {
using nlohmann::json;

json experiment_schema_with_plugins() {
  json schema = embedded_schema("experiment.schema.json");
  // Each plugin section becomes: its selector must name a registered plugin, and the plugin's
  // parameters are checked by an if/then on that name.
  auto plugin_schema = [](const std::string& kind, const std::string& selector) {
    const KindView view = kind_view(kind);
    json names = json::array();
    json choices = json::array();  // the names, and a pattern per family entry (timm/*)
    json all_of = json::array();
    for (const auto& name : view.names()) {
      json match = {{"const", name}};
      const bool family = name.size() > 2 && name.compare(name.size() - 2, 2, "/*") == 0;
      if (family) {
        std::string prefix;  // a JSON Schema pattern: the prefix's regex characters escaped
        for (const char c : name.substr(0, name.size() - 1))
          prefix += std::string(std::strchr("\\^$.|?*+()[]{}", c) ? "\\" : "") + c;
        match = {{"type", "string"}, {"pattern", "^" + prefix + "[^*]+$"}};
        choices.push_back(match);
      } else {
        names.push_back(name);
      }
      json params = *view.schema_of(name);
      if (!params.contains("properties")) params["properties"] = json::object();
      params["properties"][selector] = match;
      all_of.push_back({{"if", {{"properties", {{selector, match}}}, {"required", {selector}}}},
                        {"then", params}});
    }
    choices.push_back({{"enum", names}});
    json s = {
        {"type", "object"},
        {"required", {selector}},
        {"properties", {{selector, choices.size() == 1 ? choices[0] : json{{"anyOf", choices}}}}},
        {"allOf", all_of}};
    return s;
  };
  for (const auto& section : plugin_sections()) {
    const bool list = section.pointer.size() > 2 &&
                      section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
    const std::string base =
        list ? section.pointer.substr(0, section.pointer.size() - 2) : section.pointer;
    std::string schema_ptr;
    size_t start = 1;
    while (start <= base.size()) {
      const size_t slash = base.find('/', start);
      schema_ptr += "/properties/" + base.substr(start, slash - start);
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    json& target = schema[json::json_pointer(schema_ptr)];
    json replacement = plugin_schema(section.kind, section.selector);
    if (target.contains("description")) replacement["description"] = target["description"];
    if (target.contains("default")) replacement["default"] = target["default"];
    if (list)
      target["items"] = replacement;
    else
      target = replacement;
  }
  return schema;
}

}  // namespace runner::config
