#include "config/extends.hpp"

#include <filesystem>
#include <vector>

#include "config/plugin_sections.hpp"
#include "config/yaml_json.hpp"
#include "runner/error.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Mappings merge key by key (overlay wins); anything else is replaced. A plugin section whose
// plugin the overlay changes starts from the new plugin's defaults (restart_plugin_section),
// said in `notes`; `base_marks` loses the entries of the keys it drops. `pointer`: where `base`
// is in the document.
void deep_merge(json& base, const json& overlay, const std::string& pointer,
                std::vector<std::string>& notes, SourceMap& base_marks) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  if (const PluginSection* section = section_at(pointer);
      section && overlay.contains(section->selector) && overlay.at(section->selector).is_string()) {
    const std::string note = restart_plugin_section(
        base, overlay.at(section->selector).get<std::string>(), pointer, base_marks);
    if (!note.empty()) notes.push_back(note);
  }
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    if (base.contains(it.key()))
      deep_merge(base[it.key()], it.value(), pointer + "/" + escape_pointer_token(it.key()), notes,
                 base_marks);
    else
      base[it.key()] = it.value();
  }
}

json load_recursive(const std::string& path, SourceMap& marks, std::vector<std::string>& chain,
                    std::vector<std::string>& notes) {
  const std::string canonical = fs::weakly_canonical(path).string();
  for (const auto& p : chain) {
    if (p == canonical) throw ConfigError(path + ": 'extends' forms a cycle through this file");
  }
  chain.push_back(canonical);
  SourceMap own;
  json doc = load_yaml_file(path, own);
  json merged = json::object();
  SourceMap merged_marks;
  if (doc.contains("extends")) {
    std::vector<std::string> bases;
    const json& ext = doc.at("extends");
    if (ext.is_string())
      bases.push_back(ext.get<std::string>());
    else if (ext.is_array())
      for (const auto& e : ext)
        if (e.is_string()) bases.push_back(e.get<std::string>());
    if (bases.empty()) {
      throw ConfigError(own.value_mark("/extends").to_string() +
                        ": extends: expected a file name or a list of file names");
    }
    for (size_t i = 0; i < bases.size(); ++i) {
      fs::path base_path = fs::path(bases[i]);
      if (base_path.is_relative()) base_path = fs::path(path).parent_path() / base_path;
      const std::string at =
          own.value_mark(ext.is_array() ? "/extends/" + std::to_string(i) : "/extends").to_string();
      if (!fs::exists(base_path)) {
        throw ConfigError(at + ": extends: included file '" + base_path.string() +
                          "' does not exist (paths are relative to the including file)");
      }
      // Each base's marks join after the merge: a base that switches a plugin drops the marks
      // of the keys it drops from the bases before it, not its own.
      SourceMap base_marks;
      const json base = load_recursive(base_path.string(), base_marks, chain, notes);
      deep_merge(merged, base, "", notes, merged_marks);
      merged_marks.merge(base_marks);
    }
    doc.erase("extends");
  }
  // The plugin libraries this file names are loaded now: a plugin it switches to is known when
  // the merge asks which keys the old and the new plugin share. One that does not load is
  // reported once the whole document is read (load_experiment), against the run's folder.
  try {
    load_plugin_libraries(doc, own, fs::path(path).parent_path().string());
  } catch (const ConfigError&) {
  }
  deep_merge(merged, doc, "", notes, merged_marks);
  merged_marks.merge(own);
  marks.merge(merged_marks);
  chain.pop_back();
  return merged;
}

}  // namespace

json load_with_includes(const std::string& path, SourceMap& marks,
                        std::vector<std::string>* notes) {
  std::vector<std::string> chain, said;
  json doc = load_recursive(path, marks, chain, said);
  if (notes) notes->insert(notes->end(), said.begin(), said.end());
  return doc;
}

}  // namespace runner::config
