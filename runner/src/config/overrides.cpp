#include "config/overrides.hpp"

#include <algorithm>

#include "config/yaml_json.hpp"
#include "runner/error.hpp"

namespace runner::config {
namespace {

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit);
}

bool schema_wants_string(const nlohmann::json* s) {
  if (!s || !s->is_object() || !s->contains("type")) return false;
  const auto& t = s->at("type");
  return t.is_string() && t.get<std::string>() == "string";
}

}  // namespace

Override parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + text + ": expected KEY=VALUE, e.g. --set optimizer.lr=1e-4");
  }
  // Not echoed: a byte that is not UTF-8 in a message would break the JSON it is written to.
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    throw ConfigError("--set: the override is not valid UTF-8 text (byte " +
                      std::to_string(bad + 1) + " of its KEY=VALUE): write it in UTF-8");
  Override o{text, {}, text.substr(eq + 1)};
  const std::string key = text.substr(0, eq);
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) {
      throw ConfigError("--set " + text + ": empty key in '" + key +
                        "' (write dotted keys like train.batch_size or data.train_transforms.0.p)");
    }
    o.path.push_back(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return o;
}

void apply_override(nlohmann::json& doc, const Override& o, SourceMap& marks,
                    const nlohmann::json* value_schema) {
  const std::string origin = "--set " + o.text;
  nlohmann::json value;
  const bool quoted = o.value.size() >= 2 && (o.value.front() == '"' || o.value.front() == '\'') &&
                      o.value.back() == o.value.front();
  if (schema_wants_string(value_schema) && !quoted) {
    value = interpolate_env(o.value, origin);  // as in a file (parse_yaml does it for the rest)
  } else {  // a quoted string ("loss", as a sweep's settings write strings) is YAML's string
    SourceMap scratch;
    value = parse_yaml(o.value, origin, scratch, /*require_mapping=*/false);
    if (o.value.empty()) value = nullptr;
  }

  nlohmann::json* cur = &doc;
  std::string pointer;
  std::string walked;
  for (size_t i = 0; i < o.path.size(); ++i) {
    const std::string& part = o.path[i];
    const bool last = i + 1 == o.path.size();
    walked += (walked.empty() ? "" : ".") + part;
    if (cur->is_null()) *cur = is_index(part) ? nlohmann::json::array() : nlohmann::json::object();
    if (cur->is_array()) {
      if (!is_index(part)) {
        throw ConfigError(origin + ": " + walked + ": '" + part +
                          "' is not a list index (the value there is a list)");
      }
      const size_t index = std::stoul(part);
      if (index > cur->size()) {
        throw ConfigError(origin + ": " + walked + ": index " + part +
                          " is past the end of a list of " + std::to_string(cur->size()) +
                          " (use " + std::to_string(cur->size()) + " to append)");
      }
      if (index == cur->size()) cur->push_back(nullptr);
      cur = &(*cur)[index];
    } else if (cur->is_object()) {
      cur = &(*cur)[part];
    } else {
      throw ConfigError(origin + ": " + walked + ": cannot set a key inside a " +
                        std::string(cur->type_name()) + " value");
    }
    pointer += "/" + escape_pointer_token(part);
    // Keys that only this override creates are reported at the override.
    if (marks.value_mark(pointer).origin != origin && marks.key_mark(pointer).line == 0)
      marks.set(pointer, Mark{origin, 0, 0}, Mark{origin, 0, 0});
    if (!last) continue;
    *cur = value;
    marks.erase_below(pointer);
    marks.set(pointer, Mark{origin, 0, 0}, Mark{origin, 0, 0});
  }
}

}  // namespace runner::config
