#include "config/schema_validator.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <algorithm>
#include <set>

#include "runner/suggest.hpp"

namespace runner::config {
namespace {

using nlohmann::json;

const json* resolve(const json* schema, const json& root) {
  // Follows local "$ref"s ("#/definitions/x"); a cycle ends after a bounded number of hops.
  for (int hops = 0; schema && schema->is_object() && schema->contains("$ref") && hops < 16;
       ++hops) {
    const std::string ref = schema->at("$ref").get<std::string>();
    if (ref.rfind("#", 0) != 0) return nullptr;
    const json::json_pointer ptr(ref.substr(1));
    if (!root.contains(ptr)) return nullptr;
    schema = &root.at(ptr);
  }
  return schema;
}

std::string json_type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  return "mapping";
}

std::string short_value(const json& v) {
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  if (v.is_object()) return "a mapping";
  if (v.is_array()) return "a list";
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

std::string number_text(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  std::string s = v.dump();
  return s;
}

std::string type_word(const std::string& t) {
  if (t == "object") return "a mapping";
  if (t == "array") return "a list";
  if (t == "integer") return "an integer";
  if (t == "number") return "a number";
  if (t == "string") return "a string";
  if (t == "boolean") return "true or false";
  if (t == "null") return "null";
  return t;
}

// "an integer >= 1", "'auto'", "one of fp32, fp16, bf16": what a schema accepts, for messages.
std::string describe(const json& s, const json& root) {
  const json* r = resolve(&s, root);
  if (!r || !r->is_object()) return "a valid value";
  if (r->contains("const")) return short_value(r->at("const"));
  if (r->contains("enum")) {
    std::string out = "one of ";
    bool first = true;
    for (const auto& e : r->at("enum")) {
      out += (first ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
      first = false;
    }
    return out;
  }
  for (const char* key : {"oneOf", "anyOf"}) {
    if (r->contains(key)) {
      std::string out;
      for (const auto& alt : r->at(key)) out += (out.empty() ? "" : " or ") + describe(alt, root);
      return out;
    }
  }
  std::string out;
  if (r->contains("type")) {
    const json& t = r->at("type");
    if (t.is_string()) {
      out = type_word(t.get<std::string>());
    } else {
      for (const auto& x : t) out += (out.empty() ? "" : " or ") + type_word(x.get<std::string>());
    }
  }
  if (r->contains("minimum")) out += " >= " + number_text(r->at("minimum"));
  if (r->contains("exclusiveMinimum")) out += " > " + number_text(r->at("exclusiveMinimum"));
  if (r->contains("maximum"))
    out += (r->contains("minimum") ? " and <= " : " <= ") + number_text(r->at("maximum"));
  if (r->contains("exclusiveMaximum")) out += " and < " + number_text(r->at("exclusiveMaximum"));
  return out.empty() ? "a valid value" : out;
}

std::vector<std::string> enum_strings(const json& s) {
  std::vector<std::string> out;
  if (s.contains("enum"))
    for (const auto& e : s.at("enum"))
      if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

// Unknown keys, found before valijson so that each one gets a position and a suggestion.
void find_unknown_keys(const json& value, const json& schema, const json& root,
                       const std::string& pointer, const SourceMap& marks,
                       std::vector<ConfigIssue>& issues) {
  const json* s = resolve(&schema, root);
  if (!s || !s->is_object()) return;
  if (value.is_object() && s->contains("properties")) {
    const json& props = s->at("properties");
    const bool closed = s->contains("additionalProperties") &&
                        s->at("additionalProperties").is_boolean() &&
                        !s->at("additionalProperties").get<bool>();
    std::vector<std::string> known;
    for (auto it = props.begin(); it != props.end(); ++it) known.push_back(it.key());
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string child = pointer + "/" + escape_pointer_token(it.key());
      if (props.contains(it.key())) {
        find_unknown_keys(it.value(), props.at(it.key()), root, child, marks, issues);
      } else if (closed) {
        issues.push_back({marks.written_key_mark(child), path_from_pointer(child),
                          "unknown key" + did_you_mean(it.key(), known)});
      }
    }
  }
  if (value.is_array() && s->contains("items") && s->at("items").is_object()) {
    for (size_t i = 0; i < value.size(); ++i)
      find_unknown_keys(value[i], s->at("items"), root, pointer + "/" + std::to_string(i), marks,
                        issues);
  }
}

// x-runner-covers on a property: {sibling: the prefix the property writes it with}. With the
// property set (not null), a covered sibling beside it would be overridden or ignored: refused,
// saying how to write it into the property (magnitude_std: 0.3 -> mstd0.3).
void find_covered_keys(const json& value, const json& schema, const json& root,
                       const std::string& pointer, const SourceMap& marks,
                       std::vector<ConfigIssue>& issues) {
  const json* s = resolve(&schema, root);
  if (!s || !s->is_object()) return;
  if (value.is_array() && s->contains("items") && s->at("items").is_object())
    for (size_t i = 0; i < value.size(); ++i)
      find_covered_keys(value[i], s->at("items"), root, pointer + "/" + std::to_string(i), marks,
                        issues);
  if (!value.is_object() || !s->contains("properties")) return;
  const json& props = s->at("properties");
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!props.contains(it.key())) continue;
    const json* p = resolve(&props.at(it.key()), root);
    const std::string child = pointer + "/" + escape_pointer_token(it.key());
    if (p && p->is_object() && p->contains("x-runner-covers") && !it.value().is_null()) {
      for (auto c = p->at("x-runner-covers").begin(); c != p->at("x-runner-covers").end(); ++c) {
        if (!value.contains(c.key())) continue;
        const std::string covered = pointer + "/" + escape_pointer_token(c.key());
        const json& v = value.at(c.key());
        const std::string written = v.is_boolean() ? (v.get<bool>() ? "1" : "0") : v.dump();
        issues.push_back({marks.key_mark(covered), path_from_pointer(covered),
                          "set beside " + it.key() + " " + short_value(it.value()) +
                              ", which covers it: write it into " + it.key() + " as " +
                              c.value().get<std::string>() + written + " or drop one of the two"});
      }
    }
    find_covered_keys(it.value(), props.at(it.key()), root, child, marks, issues);
  }
}

// valijson's context ["<root>", "[data]", "[0]"] -> the JSON pointer into `value`.
std::string pointer_of(const std::vector<std::string>& context, const json& value,
                       const std::string& base) {
  std::string pointer = base;
  const json* cur = &value;
  for (const auto& c : context) {
    if (c.size() < 2 || c.front() != '[' || c.back() != ']') continue;
    const std::string token = c.substr(1, c.size() - 2);
    pointer += "/" + escape_pointer_token(token);
    if (cur && cur->is_object() && cur->contains(token)) {
      cur = &cur->at(token);
    } else if (cur && cur->is_array()) {
      const size_t i = std::stoul(token);
      cur = i < cur->size() ? &(*cur)[i] : nullptr;
    } else {
      cur = nullptr;
    }
  }
  return pointer;
}

const json* value_at(const json& value, const std::string& base, const std::string& pointer) {
  const std::string rel = pointer.substr(base.size());
  const json::json_pointer p(rel);
  return value.contains(p) ? &value.at(p) : nullptr;
}

// "/data/0/p" -> {"data", "0", "p"} (tokens unescaped).
std::vector<std::string> split_pointer(const std::string& pointer) {
  std::vector<std::string> out;
  json::json_pointer p(pointer);
  while (!p.empty()) {
    out.insert(out.begin(), p.back());
    p.pop_back();
  }
  return out;
}

bool is_wrapper_message(const std::string& d) {
  static const char* prefixes[] = {"Failed to validate against schema associated with property",
                                   "Failed to validate item #",
                                   "Failed to validate against child schema",
                                   "Failed to validate against additional properties",
                                   "Object contains a property that could not be validated",
                                   "Failed to validate against dependent schema",
                                   "Failed to validate against schema associated with pattern",
                                   "Failed to validate against a conditional schema"};
  for (const char* p : prefixes)
    if (d.rfind(p, 0) == 0) return true;
  return false;
}

std::string rewrite(const std::string& d, const json* v, const json* s, const json& root) {
  const json* r = s ? resolve(s, root) : nullptr;
  const std::string got = v ? " (got " + short_value(*v) + ")" : "";
  if (r && r->is_object()) {
    if (d.rfind("Value type not permitted", 0) == 0 ||
        d.rfind("Failed to validate against any", 0) == 0 ||
        d.rfind("Failed to validate against exactly one", 0) == 0) {
      return "expected " + describe(*r, root) +
             (v ? ", got " + json_type_name(*v) +
                      (v->is_object() || v->is_array() ? "" : " " + short_value(*v))
                : "");
    }
    if (d.rfind("Failed to match against any enum", 0) == 0) {
      std::string out = "must be " + describe(*r, root) + got;
      if (v && v->is_string()) out += did_you_mean(v->get<std::string>(), enum_strings(*r));
      if (r->contains("x-runner-hint")) out += ": " + r->at("x-runner-hint").get<std::string>();
      return out;
    }
    if (d.rfind("Failed to match expected value set by 'const'", 0) == 0)
      return "must be " + describe(*r, root) + got;
    if (d.rfind("Expected number", 0) == 0)
      return "must be " + describe(*r, root) + got +
             (r->contains("x-runner-hint") ? ": " + r->at("x-runner-hint").get<std::string>() : "");
    if (d.rfind("Failed to match regex", 0) == 0 && r->contains("pattern")) {
      // x-runner-hint: what to write, in the words of the key's own world (timm's strings).
      if (r->contains("x-runner-hint"))
        return "not valid" + got + ": " + r->at("x-runner-hint").get<std::string>();
      return "must match the pattern " + r->at("pattern").get<std::string>() + got;
    }
  }
  if (d.rfind("Missing required property", 0) == 0) {
    std::string key = d.substr(d.find('\'') + 1);
    key = key.substr(0, key.find('\''));
    return "missing required key '" + key + "'";
  }
  std::string out = d;
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out + got;
}

}  // namespace

const json* schema_at(const json& schema, const std::vector<std::string>& path,
                      const json* root_schema) {
  const json& root = root_schema ? *root_schema : schema;
  const json* s = resolve(&schema, root);
  for (const auto& key : path) {
    if (!s || !s->is_object()) return nullptr;
    if (s->contains("properties") && s->at("properties").contains(key)) {
      s = resolve(&s->at("properties").at(key), root);
    } else if (s->contains("items") && s->at("items").is_object() && !key.empty() &&
               std::all_of(key.begin(), key.end(), ::isdigit)) {
      s = resolve(&s->at("items"), root);
    } else if (s->contains("additionalProperties") && s->at("additionalProperties").is_object()) {
      s = resolve(&s->at("additionalProperties"), root);
    } else {
      return nullptr;
    }
  }
  return s;
}

std::vector<std::string> schema_property_names(const json& schema, const json* root_schema) {
  const json& root = root_schema ? *root_schema : schema;
  std::vector<std::string> out;
  const json* s = resolve(&schema, root);
  if (s && s->is_object() && s->contains("properties"))
    for (auto it = s->at("properties").begin(); it != s->at("properties").end(); ++it)
      out.push_back(it.key());
  return out;
}

void validate_against_schema(const json& value, const json& schema, const SourceMap& marks,
                             const std::string& base, std::vector<ConfigIssue>& issues,
                             const json* root_schema) {
  const json& root = root_schema ? *root_schema : schema;
  const size_t before = issues.size();
  find_unknown_keys(value, schema, root, base, marks, issues);
  find_covered_keys(value, schema, root, base, marks, issues);

  // valijson resolves "$ref"s against the document it parses: give it the root with `schema`.
  json parse_root = root;
  if (&schema != &root) {
    parse_root = schema;
    if (root.contains("definitions")) parse_root["definitions"] = root.at("definitions");
  }
  valijson::Schema compiled;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(parse_root);
  parser.populateSchema(schema_adapter, compiled);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter value_adapter(value);
  if (validator.validate(compiled, value_adapter, &results)) return;

  std::vector<ConfigIssue> found;
  std::vector<ConfigIssue> wrappers;
  std::set<std::string> seen;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    const std::string pointer = pointer_of(e.context, value, base);
    const bool wrapper = is_wrapper_message(e.description);
    // Unknown keys were reported above, with suggestions.
    if (e.description.rfind("Object contains a property that could not be validated", 0) == 0 &&
        issues.size() > before)
      continue;
    std::vector<std::string> path = split_pointer(pointer.substr(base.size()));
    const json* v = value_at(value, base, pointer);
    const json* s = schema_at(parse_root, path, &parse_root);
    ConfigIssue issue{v ? marks.value_mark(pointer) : marks.key_mark(pointer),
                      path_from_pointer(pointer), rewrite(e.description, v, s, parse_root)};
    if (e.description.rfind("Missing required property", 0) == 0)
      issue.mark = marks.key_mark(pointer);
    if (!seen.insert(issue.to_string()).second) continue;
    (wrapper ? wrappers : found).push_back(issue);
  }
  // A problem inside an alternative (oneOf) shows up only as a wrapper message: keep those
  // when nothing more specific was found.
  const auto& chosen = found.empty() && issues.size() == before ? wrappers : found;
  // One mistake, one line: a value that fails a oneOf also fails each alternative; keep the
  // line that names every alternative ("expected ..., got ...").
  auto names_alternatives = [](const ConfigIssue& i) {
    return i.message.rfind("expected ", 0) == 0;
  };
  std::set<std::string> explained;  // key paths with an "expected ..." line
  for (const ConfigIssue& issue : chosen)
    if (names_alternatives(issue)) explained.insert(issue.path);
  for (const ConfigIssue& issue : chosen)
    if (names_alternatives(issue) || !explained.count(issue.path)) issues.push_back(issue);
}

void apply_schema_defaults(json& value, const json& schema, const json* root_schema) {
  const json& root = root_schema ? *root_schema : schema;
  const json* s = resolve(&schema, root);
  if (!s || !s->is_object()) return;
  if (value.is_object() && s->contains("properties")) {
    const json& props = s->at("properties");
    for (auto it = props.begin(); it != props.end(); ++it) {
      // A "default" beside a "$ref" counts too (draft-07 ignores it for validation only).
      const json* ps = it.value().contains("default") ? &it.value() : resolve(&it.value(), root);
      if (!value.contains(it.key()) && ps && ps->is_object() && ps->contains("default"))
        value[it.key()] = ps->at("default");
      if (value.contains(it.key())) apply_schema_defaults(value[it.key()], it.value(), &root);
    }
  }
  if (value.is_array() && s->contains("items") && s->at("items").is_object()) {
    for (auto& item : value) apply_schema_defaults(item, s->at("items"), &root);
  }
}

}  // namespace runner::config
