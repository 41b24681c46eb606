#pragma once
// YAML -> JSON with YAML 1.2 core-schema typing of plain scalars (quoted scalars stay strings),
// ${env:VAR} / ${env:VAR:default} interpolation, and a source map for error positions.

#include <string>

#include <nlohmann/json.hpp>

#include "config/source_map.hpp"

namespace runner::config {

/// Parses YAML text. `origin` names the source in errors (a file path). Requires a mapping or
/// empty document when `require_mapping`. Throws ConfigError "origin:line:col: message" on a
/// syntax error, a duplicate key, a non-string key, or an unset ${env:VAR} without default.
nlohmann::json parse_yaml(const std::string& text, const std::string& origin, SourceMap& marks,
                          bool require_mapping = true);

/// Reads and parses a YAML file (errors name the file).
nlohmann::json load_yaml_file(const std::string& path, SourceMap& marks);

/// Position of the first byte of `text` that is not well-formed UTF-8, or npos.
size_t invalid_utf8_at(const std::string& text);

/// The core-schema value of a plain scalar: null, bool, int, float, else the string itself.
nlohmann::json typed_plain_scalar(const std::string& text);

/// Replaces ${env:VAR} and ${env:VAR:default} in `text`, and $${env:...} by the text ${env:...}
/// itself. Throws ConfigError naming `where` when VAR is unset and there is no default.
std::string interpolate_env(const std::string& text, const std::string& where);

/// `text` with every ${env: written $${env:, so that interpolate_env gives `text` back: how a
/// printed config keeps a value that holds such text.
std::string escape_env(const std::string& text);

}  // namespace runner::config
