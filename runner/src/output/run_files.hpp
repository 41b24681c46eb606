#pragma once
// Reading a run folder's files for its pages (report.html, compare.html): forgiving, since a
// failed or stopped run lacks some and a crash can cut metrics.jsonl's last line. Torch-free.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::output {

/// The file's bytes; empty when it is missing.
std::string read_text(const std::filesystem::path& path);

/// The file's JSON; an empty object when it is missing or unreadable.
nlohmann::json read_json_or_empty(const std::filesystem::path& path);

/// One JSON object a line (metrics.jsonl); lines that do not parse are left out.
std::vector<nlohmann::json> read_records(const std::filesystem::path& path);

/// config.yaml's `name`, else the folder's name.
std::string experiment_name(const std::filesystem::path& run_dir);

/// config.yaml as dotted keys -> value text (lists whole); empty when it cannot be read.
std::map<std::string, std::string> flat_config(const std::filesystem::path& run_dir);

}  // namespace runner::output
