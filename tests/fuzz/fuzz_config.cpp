// libFuzzer target: arbitrary bytes as an experiment file -> YAML parsing, typing, env
// interpolation, schema validation, default filling and printing. Any exception other than
// runner::Error (a clean user-facing error) is a finding, as is any sanitizer report.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config_issue.hpp"
#include "config/embedded_schemas.hpp"
#include "config/overrides.hpp"
#include "config/schema_validator.hpp"
#include "config/yaml_emit.hpp"
#include "config/yaml_json.hpp"
#include "runner/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first line, when it looks like KEY=VALUE, is also tried as a --set override.
  const std::string first_line = text.substr(0, text.find('\n'));
  try {
    runner::config::SourceMap marks;
    nlohmann::json doc = runner::config::parse_yaml(text, "fuzz.yaml", marks);
    const auto& schema = runner::config::embedded_schema("experiment.schema.json");
    if (first_line.find('=') != std::string::npos && first_line.size() < 200) {
      try {
        const auto o = runner::config::parse_override(first_line);
        runner::config::apply_override(doc, o, marks, runner::config::schema_at(schema, o.path));
      } catch (const runner::Error&) {
      }
    }
    std::vector<runner::config::ConfigIssue> issues;
    runner::config::validate_against_schema(doc, schema, marks, "", issues);
    for (const auto& issue : issues) (void)issue.to_string();
    runner::config::apply_schema_defaults(doc, schema);
    // What `runner config` prints must read back to the same document.
    runner::config::SourceMap again;
    const std::string printed = runner::config::to_yaml(doc);
    const nlohmann::json round = runner::config::parse_yaml(printed, "printed.yaml", again);
    if (round != doc && round.dump() != doc.dump()) {
      // NaN never compares equal; anything else differing is a printing bug.
      if (printed.find(".nan") == std::string::npos) __builtin_trap();
    }
  } catch (const runner::Error&) {
  }
  return 0;
}
