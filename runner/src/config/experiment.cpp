#include "config/experiment.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "config/config_issue.hpp"
#include "config/embedded_schemas.hpp"
#include "config/foreign_names.hpp"
#include "config/key_rules.hpp"
#include "config/overrides.hpp"
#include "config/path_keys.hpp"
#include "config/plugin_sections.hpp"
#include "config/schema_validator.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json& experiment_schema() { return embedded_schema("experiment.schema.json"); }

bool user_set_below(const json& value, const json* schema, const SourceMap& marks,
                    const std::string& pointer) {
  if (!marks.written(pointer)) return false;
  if (schema && schema->contains("properties") && value.is_object()) {
    for (const auto& [key, sub] : schema->at("properties").items())
      if (value.contains(key) &&
          user_set_below(value.at(key), &sub, marks, pointer + "/" + escape_pointer_token(key)))
        return true;
    return false;
  }
  return !(schema && schema->contains("default") && value == schema->at("default"));
}

// The pointer of the mapping that holds the key `o` sets ("/optimizer" for optimizer.name).
std::string parent_pointer(const Override& o) {
  std::string pointer;
  for (size_t i = 0; i + 1 < o.path.size(); ++i) pointer += "/" + escape_pointer_token(o.path[i]);
  return pointer;
}

// Whether `o` sets the key that picks a plugin (optimizer.name, model.backbone, ...).
bool switches_plugin(const Override& o) {
  if (o.path.size() < 2) return false;
  const PluginSection* section = section_at(parent_pointer(o));
  return section && section->selector == o.path.back();
}

// `--set optimizer.name=sgd` (a sweep point's too) where the document named another plugin
// (`before`, the section as it was): the section starts from sgd's defaults, as an extending
// file's would. What it then lacks (a required key of the new plugin) is reported at the --set.
void restart_after_override(json& doc, SourceMap& marks, const Override& o, const json& before,
                            std::vector<std::string>& notes) {
  const std::string pointer = parent_pointer(o);
  json& now = doc.at(json::json_pointer(pointer));
  if (!now.is_object() || !now.at(o.path.back()).is_string()) return;
  json section = before;
  const std::string note =
      restart_plugin_section(section, now.at(o.path.back()).get<std::string>(), pointer, marks);
  if (note.empty()) return;
  now = section;
  const Mark origin{"--set " + o.text, 0, 0};
  marks.set(pointer, origin, origin);
  notes.push_back(note + " (--set " + o.text + ")");
}

}  // namespace

bool user_set(const json& doc, const SourceMap& marks, const std::string& pointer) {
  const json::json_pointer where(pointer);
  if (!doc.contains(where)) return false;
  const json* schema = &experiment_schema();
  std::vector<std::string> tokens;
  for (size_t at = 1; at <= pointer.size();) {
    const size_t slash = pointer.find('/', at);
    tokens.push_back(pointer.substr(at, slash == std::string::npos ? slash : slash - at));
    at = slash == std::string::npos ? pointer.size() + 1 : slash + 1;
  }
  for (const auto& token : tokens) {
    if (!schema->contains("properties") || !schema->at("properties").contains(token)) {
      schema = nullptr;
      break;
    }
    schema = &schema->at("properties").at(token);
  }
  return user_set_below(doc.at(where), schema, marks, pointer);
}

void validate_experiment(json& doc, const SourceMap& marks) {
  std::vector<ConfigIssue> issues;
  const json& schema = experiment_schema();
  validate_against_schema(doc, schema, marks, "", issues);
  if (issues.empty()) {
    std::set<std::string> written;
    for (const std::string& key : task_default_keys())
      if (doc.contains(json::json_pointer(key))) written.insert(key);
    turn_on_written_sections(doc, schema);
    apply_schema_defaults(doc, schema);
    apply_task_defaults(doc, written);
  }

  for_each_plugin_section(doc, [&](const PluginSection& section, const std::string& pointer,
                                   json& node) {
    if (!node.contains(section.selector) || !node.at(section.selector).is_string()) return;
    const std::string name = node.at(section.selector).get<std::string>();
    const KindView view = kind_view(section.kind);
    const json* schema_of_plugin = view.schema_of(name);
    const std::string selector_ptr = pointer + "/" + section.selector;
    if (!schema_of_plugin) {
      const std::string noun = section.kind == "models" ? "backbone" : "";
      std::string message = view.unknown_message(name, noun);
      if (const auto ours = runner_plugin_for(section.kind, name)) {
        const auto see = message.find(" (");
        message = message.substr(0, see == std::string::npos ? message.size() : see) +
                  "; runner calls it " + *ours + " (see 'runner plugins " + section.kind + "')";
      }
      // A backbone runner has no native form of may well be a timm model.
      const auto see = message.find(" (see 'runner plugins");
      if (section.kind == "models" && name.find('/') == std::string::npos &&
          see != std::string::npos)
        message.insert(see + 2, "timm/" + name + " builds timm's model of that name; ");
      issues.push_back({marks.value_mark(selector_ptr), path_from_pointer(selector_ptr), message});
      return;
    }
    json params = node;
    params.erase(section.selector);
    const size_t before = issues.size();
    validate_against_schema(params, *schema_of_plugin, marks, pointer, issues);
    if (issues.size() != before) return;
    apply_schema_defaults(params, *schema_of_plugin);
    params[section.selector] = name;
    node = params;
  });

  // What the task takes comes first: a wrong metric for it is said as such, not as best's.
  // The keys' needs of each other, on the options as the run reads them (the schema passed).
  if (issues.empty()) {
    const ExperimentOptions options = read_experiment_options(doc);
    check_task_keys(options, doc, marks, issues);
    if (issues.empty()) check_best_metric(doc, marks, issues);  // cross-field: no schema says it
    if (issues.empty()) check_recipe_keys(options, doc, marks, issues);
    if (issues.empty()) check_keys_of_features_off(options, doc, marks, issues);
  }
  suggest_other_sections(doc, issues);
  if (!issues.empty()) throw ConfigValidationError(issues);
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const std::string& config_dir) {
  if (!fs::exists(path)) throw ConfigError(path + ": no such experiment file");
  if (!config_dir.empty() && !fs::is_directory(config_dir))
    throw ConfigError("--config-dir " + config_dir + ": no such folder");
  Experiment e;
  e.path = path;
  e.dir = config_dir.empty() ? fs::path(path).parent_path().string() : config_dir;
  if (e.dir.empty()) e.dir = ".";
  e.doc = load_with_includes(path, e.marks, &e.notes);
  e.marks.set_fallback(path);
  // A run folder's config.yaml and a resolved copy run elsewhere (--config-dir: a sweep's
  // point file) spell every key out: only their --set keys are the user's.
  const fs::path folder = fs::path(path).parent_path();
  const bool run_folder_config =
      fs::path(path).filename() == "config.yaml" &&
      (fs::exists(folder / "run.json") || fs::exists(folder / "summary.json") ||
       fs::exists(folder / "checkpoints"));
  if (!config_dir.empty() || run_folder_config) e.marks.set_resolved_copy();
  // Outer keys first, and at one depth the key that picks a plugin first: `--set
  // optimizer.momentum=0.9` beside `--set optimizer.name=sgd` or `--set optimizer={...}` (a
  // sweep point's keys come sorted by name) keeps the momentum, whatever the order written.
  std::vector<Override> parsed;
  for (const auto& text : overrides) parsed.push_back(parse_override(text));
  try {
    load_plugin_libraries(e.doc, e.marks, e.dir);  // the plugins a --set may switch to
  } catch (const ConfigError&) {
    // reported below, unless a --set changes the list
  }
  std::stable_sort(parsed.begin(), parsed.end(), [](const Override& a, const Override& b) {
    if (a.path.size() != b.path.size()) return a.path.size() < b.path.size();
    return switches_plugin(a) && !switches_plugin(b);
  });
  for (const Override& o : parsed) {
    const json::json_pointer section(parent_pointer(o));
    const json before = switches_plugin(o) && e.doc.contains(section) ? e.doc.at(section) : json();
    apply_override(e.doc, o, e.marks, value_schema_for(e.doc, o.path));
    if (before.is_object()) restart_after_override(e.doc, e.marks, o, before, e.notes);
  }
  load_plugin_libraries(e.doc, e.marks, e.dir);
  validate_experiment(e.doc, e.marks);
  e.dir_given = !config_dir.empty();
  resolve_relative_paths(e);
  e.options = read_experiment_options(e.doc);
  return e;
}

}  // namespace runner::config
