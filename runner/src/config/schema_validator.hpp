#pragma once
// JSON Schema (draft-07) validation with messages a user can act on: every problem names its
// file:line:col and key path, and unknown keys come with a "did you mean".

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_issue.hpp"
#include "config/source_map.hpp"

namespace runner::config {

/// Appends to `issues` every problem of `value` against `schema`. `value` sits at JSON pointer
/// `base` of the document whose positions `marks` holds. `root_schema` resolves "$ref"s
/// (defaults to `schema`).
void validate_against_schema(const nlohmann::json& value, const nlohmann::json& schema,
                             const SourceMap& marks, const std::string& base,
                             std::vector<ConfigIssue>& issues,
                             const nlohmann::json* root_schema = nullptr);

/// Fills in, recursively, every missing property that has a "default" in `schema` (objects
/// that exist or that get a default are filled too).
void apply_schema_defaults(nlohmann::json& value, const nlohmann::json& schema,
                           const nlohmann::json* root_schema = nullptr);

/// The sub-schema describing dotted `path` below `schema` (through properties, items and
/// $ref), or nullptr when the path is not described.
const nlohmann::json* schema_at(const nlohmann::json& schema, const std::vector<std::string>& path,
                                const nlohmann::json* root_schema = nullptr);

/// The property names `schema` allows for an object (for suggestions).
std::vector<std::string> schema_property_names(const nlohmann::json& schema,
                                               const nlohmann::json* root_schema = nullptr);

}  // namespace runner::config
