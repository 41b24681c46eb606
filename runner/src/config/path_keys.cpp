#include "config/path_keys.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

namespace runner::config {
namespace fs = std::filesystem;

namespace {

// The folder a relative value at `pointer` is relative to.
fs::path base_folder(const Experiment& e, const std::string& pointer) {
  const Mark mark = e.marks.value_mark(pointer);
  std::error_code ec;
  if (e.dir_given) return fs::absolute(e.dir);
  // A file's value (line > 0) is relative to that file; one typed in a --set to the shell's
  // working folder, as any path on a command line.
  if (mark.line > 0 && fs::is_regular_file(mark.origin, ec))
    return fs::absolute(mark.origin).parent_path();
  return fs::current_path();
}

// Line `line` (1-based) of `file`, or "".
std::string source_line(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 0; i < line && std::getline(in, text); ++i) {
  }
  return in ? text : "";
}

// " (from ${env:VAR}, set to '...')" when the key's line takes its value from the environment.
std::string env_origin(const Mark& mark) {
  if (mark.line <= 0) return "";
  static const std::regex env_re("\\$\\{env:([A-Za-z_][A-Za-z0-9_]*)(:([^}]*))?\\}");
  const std::string line = source_line(mark.origin, mark.line);
  std::smatch m;
  if (!std::regex_search(line, m, env_re)) return "";
  const std::string var = m[1].str();
  const char* value = std::getenv(var.c_str());
  if (value != nullptr)
    return " (from ${env:" + var + "}, set to '" + value + "'): point " + var +
           " at the right folder";
  return " (from ${env:" + var + "}, which is not set, so its default applied): export " + var +
         " to where the data is";
}

}  // namespace

void resolve_relative_paths(Experiment& e) {
  for (const PathKey& key : path_keys(e.doc)) {
    const nlohmann::json::json_pointer pointer(key.pointer);
    const fs::path value(e.doc.at(pointer).get<std::string>());
    if (value.empty() || value.is_absolute()) continue;
    e.doc.at(pointer) = (base_folder(e, key.pointer) / value).lexically_normal().string();
  }
}

std::vector<ConfigIssue> missing_paths(const Experiment& e, bool initial_weights) {
  std::vector<ConfigIssue> issues;
  for (const PathKey& key : path_keys(e.doc)) {
    if (key.kind == "weights" && !initial_weights) continue;
    const std::string path = e.doc.at(nlohmann::json::json_pointer(key.pointer)).get<std::string>();
    if (path.empty()) continue;  // "" is "not set" (e.g. ${env:MNIST_ROOT:}): the default applies
    std::error_code ec;
    const bool there = key.kind == "folder" ? fs::is_directory(path, ec)
                       : key.kind == "file" ? fs::is_regular_file(path, ec)
                                            : fs::exists(path, ec);
    if (there) continue;
    const Mark mark = e.marks.value_mark(key.pointer);
    const std::string what = key.kind == "folder" ? "no such folder" : "no such file";
    std::string advice = env_origin(mark);
    if (advice.empty())
      advice = ": fix the path (a relative one is relative to " +
               base_folder(e, key.pointer).string() + ")";
    issues.push_back({mark, path_from_pointer(key.pointer), what + ": " + path + advice});
  }
  return issues;
}

void require_paths_exist(const Experiment& e, bool initial_weights) {
  auto issues = missing_paths(e, initial_weights);
  if (!issues.empty()) throw ConfigValidationError(std::move(issues));
}

}  // namespace runner::config
