#pragma once
// The schemas/*.schema.json files, compiled into the binary (see cmake/embed_schemas.cmake).

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace runner::config {

/// File name ("experiment.schema.json") -> text.
const std::map<std::string, std::string>& embedded_schemas();

/// The parsed schema `file_name`; throws Error when it is not embedded.
const nlohmann::json& embedded_schema(const std::string& file_name);

}  // namespace runner::config
