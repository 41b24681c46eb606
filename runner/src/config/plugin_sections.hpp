#pragma once
// The sections of an experiment that select a plugin (data.dataset, model, optimizer, ...): where
// they are, the registry each names, the schema of a value inside one, the plugin libraries a
// config loads, and the keys that hold paths on disk.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/source_map.hpp"

namespace runner::config {

/// Where each plugin-selecting section is: {JSON pointer, registry kind, selecting key}. A
/// pointer ending in "/*" stands for every item of a list.
struct PluginSection {
  std::string pointer;
  std::string kind;
  std::string selector;
};
const std::vector<PluginSection>& plugin_sections();

/// The plugin section at JSON pointer `pointer` ("/optimizer", "/data/train_transforms/2"), or
/// null where none is.
const PluginSection* section_at(const std::string& pointer);

/// The rule for a plugin section whose plugin another file, a --set or a sweep point changes:
/// it starts from the new plugin's own defaults. `section` (the base's, at `pointer`) names a
/// plugin and `name` is another: the base's keys for its plugin are dropped from `section`,
/// but for those both plugins take the same way (one schema: model.in_chans, num_classes across
/// backbones), and the note saying so is returned ("data.dataset: webdataset replaces the base's
/// mnist; its keys root, val_split dropped"). "" and `section` untouched where the plugin stays:
/// then the two merge key by key. The dropped keys' entries in `marks` go with them.
std::string restart_plugin_section(nlohmann::json& section, const std::string& name,
                                   const std::string& pointer, SourceMap& marks);

/// Calls fn(section, pointer, node) for every plugin-selecting section present in `doc`.
void for_each_plugin_section(
    nlohmann::json& doc,
    const std::function<void(const PluginSection&, const std::string&, nlohmann::json&)>& fn);

/// A registry seen by its kind's name ("models"), whatever its factory type.
struct KindView {
  std::function<const nlohmann::json*(const std::string&)> schema_of;
  std::function<std::string(const std::string&, const std::string&)> unknown_message;
  std::function<std::vector<std::string>()> names;
};
KindView kind_view(const std::string& kind);

/// The schema for dotted `path` of `doc`, looking into the selected plugin's schema inside
/// plugin sections (for typing --set values); null where none is known.
const nlohmann::json* value_schema_for(const nlohmann::json& doc,
                                       const std::vector<std::string>& path);

/// dlopens the libraries `doc`'s plugins key lists (relative to `dir`); ConfigError at the item.
void load_plugin_libraries(const nlohmann::json& doc, const SourceMap& marks,
                           const std::string& dir);

/// A key whose value is a path on disk: a plugin parameter marked "x-runner-path" in its schema
/// ("folder" or "file"), or model.pretrained when it names a file or folder ("weights").
struct PathKey {
  std::string pointer;
  std::string kind;  ///< "folder", "file" or "weights"
};

/// The path keys `doc` sets to a string.
std::vector<PathKey> path_keys(const nlohmann::json& doc);

}  // namespace runner::config
