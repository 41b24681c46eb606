#include "config/plugin_sections.hpp"

#include <filesystem>
#include <set>

#include "config/embedded_schemas.hpp"
#include "config/schema_validator.hpp"
#include "registry/plugin_loader.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<PluginSection>& plugin_sections() {
  static const std::vector<PluginSection> sections = {
      {"/data/dataset", "datasets", "name"},
      {"/data/train_transforms/*", "transforms", "name"},
      {"/data/eval_transforms/*", "transforms", "name"},
      {"/model", "models", "backbone"},
      {"/optimizer", "optimizers", "name"},
      {"/scheduler", "schedulers", "name"},
      {"/loss", "losses", "name"},
      {"/metrics/*", "metrics", "name"},
      {"/output/trackers/*", "trackers", "name"}};
  return sections;
}

const PluginSection* section_at(const std::string& pointer) {
  for (const auto& section : plugin_sections()) {
    const bool list = section.pointer.size() > 2 &&
                      section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
    if (!list && pointer == section.pointer) return &section;
    const std::string items = section.pointer.substr(0, section.pointer.size() - 1);  // ".../"
    if (list && pointer.size() > items.size() && pointer.compare(0, items.size(), items) == 0 &&
        pointer.find_first_not_of("0123456789", items.size()) == std::string::npos)
      return &section;
  }
  return nullptr;
}

// Calls fn(pointer, section) for every plugin-selecting section present in `doc`.
void for_each_plugin_section(
    json& doc, const std::function<void(const PluginSection&, const std::string&, json&)>& fn) {
  for (const auto& section : plugin_sections()) {
    const bool list = section.pointer.size() > 2 &&
                      section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
    const std::string base =
        list ? section.pointer.substr(0, section.pointer.size() - 2) : section.pointer;
    const json::json_pointer ptr(base);
    if (!doc.contains(ptr)) continue;
    json& node = doc.at(ptr);
    if (list) {
      if (!node.is_array()) continue;
      for (size_t i = 0; i < node.size(); ++i)
        if (node[i].is_object()) fn(section, base + "/" + std::to_string(i), node[i]);
    } else if (node.is_object()) {
      fn(section, base, node);
    }
  }
}

namespace {

template <class Factory>
KindView view_of(const Registry<Factory>& r) {
  return KindView{[&r](const std::string& name) -> const json* {
                    const auto* e = r.find(name);
                    return e ? &e->schema : nullptr;
                  },
                  [&r](const std::string& name, const std::string& noun) {
                    return r.unknown_message(name, noun);
                  },
                  [&r] { return r.names(); }};
}

}  // namespace

KindView kind_view(const std::string& kind) {
  Registries& r = registries();
  if (kind == "datasets") return view_of(r.datasets);
  if (kind == "transforms") return view_of(r.transforms);
  if (kind == "models") return view_of(r.models);
  if (kind == "optimizers") return view_of(r.optimizers);
  if (kind == "schedulers") return view_of(r.schedulers);
  if (kind == "losses") return view_of(r.losses);
  if (kind == "trackers") return view_of(r.trackers);
  return view_of(r.metrics);
}

namespace {

// The settings plugins `from` and `to` of `kind` both take the same way (one schema: type,
// default and meaning), as every backbone takes in_chans and num_classes.
std::set<std::string> keys_taken_alike(const std::string& kind, const std::string& from,
                                       const std::string& to) {
  const KindView view = kind_view(kind);
  const json* old_schema = view.schema_of(from);
  const json* new_schema = view.schema_of(to);
  std::set<std::string> alike;
  if (!old_schema || !new_schema || !old_schema->contains("properties") ||
      !new_schema->contains("properties"))
    return alike;
  const json& theirs = new_schema->at("properties");
  for (const auto& [key, property] : old_schema->at("properties").items())
    if (theirs.contains(key) && theirs.at(key) == property) alike.insert(key);
  return alike;
}

}  // namespace

std::string restart_plugin_section(json& section, const std::string& name,
                                   const std::string& pointer, SourceMap& marks) {
  const PluginSection* at = section_at(pointer);
  if (!at || !section.is_object() || !section.contains(at->selector) ||
      !section.at(at->selector).is_string())
    return "";
  const std::string old = section.at(at->selector).get<std::string>();
  if (old == name) return "";
  const std::set<std::string> kept = keys_taken_alike(at->kind, old, name);
  std::vector<std::string> dropped;
  json restarted = json::object();
  for (const auto& [key, value] : section.items()) {
    if (key == at->selector) continue;
    if (kept.count(key))
      restarted[key] = value;
    else
      dropped.push_back(key);
  }
  for (const auto& key : dropped) marks.erase_below(pointer + "/" + escape_pointer_token(key));
  restarted[at->selector] = name;
  section = restarted;
  std::string keys;
  for (const auto& key : dropped) keys += (keys.empty() ? "" : ", ") + key;
  return path_from_pointer(pointer) + ": " + name + " replaces the base's " + old +
         (dropped.empty() ? "" : "; its keys " + keys + " dropped");
}

// The schema for dotted `path` of `doc`, looking into the selected plugin's schema inside
// plugin sections (for typing --set values).
const json* value_schema_for(const json& doc, const std::vector<std::string>& path) {
  std::string pointer;
  for (size_t depth = 0; depth < path.size(); ++depth) {
    pointer += "/" + path[depth];
    for (const auto& section : plugin_sections()) {
      const bool list = section.pointer.size() > 2 &&
                        section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
      std::string expected = section.pointer;
      if (list) {
        if (depth == 0) continue;
        expected = section.pointer.substr(0, section.pointer.size() - 1) + path[depth];
      }
      if (expected != pointer) continue;
      const json::json_pointer ptr(pointer);
      if (!doc.contains(ptr) || !doc.at(ptr).is_object()) return nullptr;
      const json& node = doc.at(ptr);
      if (!node.contains(section.selector) || !node.at(section.selector).is_string())
        return nullptr;
      const json* s =
          kind_view(section.kind).schema_of(node.at(section.selector).get<std::string>());
      if (!s) return nullptr;
      return schema_at(*s, std::vector<std::string>(path.begin() + depth + 1, path.end()));
    }
  }
  return schema_at(embedded_schema("experiment.schema.json"), path);
}

void load_plugin_libraries(const json& doc, const SourceMap& marks, const std::string& dir) {
  if (!doc.contains("plugins") || !doc.at("plugins").is_array()) return;
  const json& list = doc.at("plugins");
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) continue;
    fs::path p = list[i].get<std::string>();
    if (p.is_relative()) p = fs::path(dir) / p;
    try {
      load_plugin(p.string());
    } catch (const Error& e) {
      throw ConfigError(marks.value_mark("/plugins/" + std::to_string(i)).to_string() +
                        ": plugins." + std::to_string(i) + ": " + e.what());
    }
  }
}

std::vector<PathKey> path_keys(const json& doc) {
  std::vector<PathKey> keys;
  json& mutable_doc = const_cast<json&>(doc);  // for_each_plugin_section only reads here
  for_each_plugin_section(mutable_doc, [&](const PluginSection& section, const std::string& pointer,
                                           json& node) {
    if (!node.contains(section.selector) || !node.at(section.selector).is_string()) return;
    const json* schema =
        kind_view(section.kind).schema_of(node.at(section.selector).get<std::string>());
    if (!schema || !schema->contains("properties")) return;
    for (const auto& [name, property] : schema->at("properties").items())
      if (property.contains("x-runner-path") && node.contains(name) && node.at(name).is_string())
        keys.push_back({pointer + "/" + escape_pointer_token(name),
                        property.at("x-runner-path").get<std::string>()});
  });
  // model.pretrained: a file or folder unless it names the hub (or is true/false).
  const json::json_pointer pretrained("/model/pretrained");
  if (doc.contains(pretrained) && doc.at(pretrained).is_string() &&
      doc.at(pretrained).get<std::string>().rfind("hf-hub:", 0) != 0)
    keys.push_back({"/model/pretrained", "weights"});
  // model.init_from: a run folder, a checkpoint or a .safetensors file.
  const json::json_pointer init_from("/model/init_from");
  if (doc.contains(init_from) && doc.at(init_from).is_string())
    keys.push_back({"/model/init_from", "weights"});
  return keys;
}

}  // namespace runner::config
