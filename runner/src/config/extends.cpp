#include "config/extends.hpp"

#include <filesystem>
#include <vector>

#include "config/yaml_json.hpp"
#include "runner/error.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Mappings merge key by key (overlay wins); anything else is replaced.
void deep_merge(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    if (base.contains(it.key()))
      deep_merge(base[it.key()], it.value());
    else
      base[it.key()] = it.value();
  }
}

json load_recursive(const std::string& path, SourceMap& marks, std::vector<std::string>& chain) {
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
      deep_merge(merged, load_recursive(base_path.string(), merged_marks, chain));
    }
    doc.erase("extends");
  }
  deep_merge(merged, doc);
  merged_marks.merge(own);
  marks.merge(merged_marks);
  chain.pop_back();
  return merged;
}

}  // namespace

json load_with_includes(const std::string& path, SourceMap& marks) {
  std::vector<std::string> chain;
  return load_recursive(path, marks, chain);
}

}  // namespace runner::config
