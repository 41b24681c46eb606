#include "output/run_files.hpp"

#include <fstream>
#include <functional>
#include <sstream>

#include "config/source_map.hpp"
#include "config/yaml_json.hpp"

namespace runner::output {
namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_json_or_empty(const fs::path& path) {
  const std::string text = read_text(path);
  try {
    return text.empty() ? json::object() : json::parse(text);
  } catch (const std::exception&) {
    return json::object();
  }
}

std::vector<json> read_records(const fs::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    try {
      if (!line.empty()) out.push_back(json::parse(line));
    } catch (const std::exception&) {  // a line cut by a crash: keep the rest
    }
  }
  return out;
}

std::string experiment_name(const fs::path& run_dir) {
  std::istringstream config(read_text(run_dir / "config.yaml"));
  for (std::string line; std::getline(config, line);)
    if (line.rfind("name: ", 0) == 0) return line.substr(6);
  return run_dir.filename().string();
}

std::map<std::string, std::string> flat_config(const fs::path& run_dir) {
  std::map<std::string, std::string> flat;
  json doc;
  try {
    config::SourceMap marks;
    doc = config::parse_yaml(read_text(run_dir / "config.yaml"), "config.yaml", marks);
  } catch (const std::exception&) {
    return flat;
  }
  std::function<void(const json&, const std::string&)> walk = [&](const json& v,
                                                                  const std::string& key) {
    if (v.is_object() && !v.empty()) {
      for (auto it = v.begin(); it != v.end(); ++it)
        walk(*it, key.empty() ? it.key() : key + "." + it.key());
    } else {
      flat[key] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  };
  walk(doc, "");
  return flat;
}

}  // namespace runner::output
