#pragma once
// The configuration reference (docs/reference.md) generated from the schemas runner validates
// with: every core key of an experiment, every registered plugin's parameters and every key of
// a sweep file, with type, default and description. `runner schema --markdown` prints it; a
// test fails when the committed page differs, so the reference cannot go stale.

#include <string>

#include <nlohmann/json.hpp>

namespace runner::config {

/// "integer", "fp32|fp16|bf16", "number|null": what `schema` accepts, in one short text
/// ($refs resolved against `root`).
std::string schema_type_text(const nlohmann::json& schema, const nlohmann::json& root);

/// The Markdown page. `plugins`: kind -> name -> {"help", "schema"} (runner plugins --json).
std::string schema_reference_markdown(const nlohmann::json& experiment_schema,
                                      const nlohmann::json& plugins,
                                      const nlohmann::json& sweep_schema);

}  // namespace runner::config
