#include "config/yaml_json.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <vector>

#include "runner/error.hpp"

namespace runner::config {
namespace {

Mark mark_of(const YAML::Mark& m, const std::string& origin) {
  if (m.line < 0) return Mark{origin, 0, 0};
  return Mark{origin, m.line + 1, m.column + 1};
}

[[noreturn]] void fail(const Mark& at, const std::string& message) {
  throw ConfigError(at.to_string() + ": " + message);
}

bool is_plain(const YAML::Node& node) { return node.Tag() == "?"; }

// YAML allows no raw C0 control characters but tab and line breaks, nor DEL (escapes can still
// make them, and nothing in a config needs them).
bool has_control_character(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f;
  });
}

nlohmann::json scalar_value(const YAML::Node& node, const std::string& origin,
                            const std::string& path) {
  const Mark at = mark_of(node.Mark(), origin);
  const std::string where = at.to_string() + ": " + path;
  const std::string tag = node.Tag();
  std::string text = interpolate_env(node.Scalar(), where);
  if (has_control_character(text)) {
    fail(at, path +
                 ": the value contains a control character (only tab and line breaks may appear "
                 "in a config's text)");
  }
  if (is_plain(node)) return typed_plain_scalar(text);
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return text;
  if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
      tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
    nlohmann::json v = typed_plain_scalar(text);
    const bool ok = (tag.back() == 't' && tag.find("int") != std::string::npos)
                        ? v.is_number_integer()
                    : tag.find("float") != std::string::npos ? v.is_number()
                    : tag.find("bool") != std::string::npos  ? v.is_boolean()
                                                             : v.is_null();
    if (!ok) fail(at, path + ": '" + text + "' does not match its tag " + tag);
    if (tag.find("float") != std::string::npos) return v.get<double>();
    return v;
  }
  fail(at, path + ": unsupported YAML tag '" + tag + "'");
}

nlohmann::json convert(const YAML::Node& node, const std::string& origin,
                       const std::string& pointer, SourceMap& marks) {
  const std::string path = path_from_pointer(pointer);
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar_value(node, origin, path);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      size_t i = 0;
      for (const auto& item : node) {
        const std::string child = pointer + "/" + std::to_string(i++);
        const Mark m = mark_of(item.Mark(), origin);
        marks.set(child, m, m);
        out.push_back(convert(item, origin, child, marks));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        const Mark key_at = mark_of(kv.first.Mark(), origin);
        if (!kv.first.IsScalar()) fail(key_at, path + ": keys must be plain strings");
        const std::string key = kv.first.Scalar();
        // Keys name settings: control characters there are typos at best, and unprintable.
        if (has_control_character(key) || key.find_first_of("\t\r\n") != std::string::npos) {
          fail(key_at, (pointer.empty() ? std::string("") : path + ": ") +
                           "a key contains a control character: keys must be printable text");
        }
        if (out.contains(key)) {
          fail(key_at, (pointer.empty() ? key : path + "." + key) +
                           ": duplicate key (each key may appear once in a mapping)");
        }
        const std::string child = pointer + "/" + escape_pointer_token(key);
        Mark value_at = mark_of(kv.second.Mark(), origin);
        if (value_at.line == 0) value_at = key_at;  // null values carry no mark
        marks.set(child, key_at, value_at);
        out[key] = convert(kv.second, origin, child, marks);
      }
      return out;
    }
  }
  return nullptr;
}

// The flow collection ({...} or [...]) still open where yaml-cpp stopped, when it opened on an
// earlier line: yaml-cpp reports a missing '}' or ']' lines later ("illegal block entry", "end
// of map flow not found"), where the mistake is not. Quotes and comments are skipped; a bracket
// counts as an opener only where a flow collection can start (after ':', '-', ',', an opener, or
// at the start of a line).
struct OpenFlow {
  char bracket = 0;
  int line = 0, column = 0;
};
std::optional<OpenFlow> unclosed_flow_before(const std::string& text, int stop_line,
                                             int stop_column) {
  std::vector<OpenFlow> open;
  int line = 1, column = 0;
  char quote = 0, previous = '\n';  // the last character that is not a space
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = 0;
      previous = '\n';
      continue;
    }
    ++column;
    if (line > stop_line || (line == stop_line && column >= stop_column)) break;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;  // a comment, to the line's end
      continue;
    }
    if ((c == '"' || c == '\'') && (previous == ':' || previous == '-' || previous == ',' ||
                                    previous == '[' || previous == '{' || previous == '\n'))
      quote = c;
    else if ((c == '{' || c == '[') && (previous == ':' || previous == '-' || previous == ',' ||
                                        previous == '[' || previous == '{' || previous == '\n'))
      open.push_back({c, line, column});
    else if ((c == '}' || c == ']') && !open.empty())
      open.pop_back();
    if (c != ' ' && c != '\t') previous = c;
  }
  if (open.empty() || open.back().line >= stop_line) return std::nullopt;
  return open.back();
}

}  // namespace

nlohmann::json typed_plain_scalar(const std::string& s) {
  static const std::regex null_re("^(~|null|Null|NULL|)$");
  static const std::regex true_re("^(true|True|TRUE)$");
  static const std::regex false_re("^(false|False|FALSE)$");
  static const std::regex int_re("^[-+]?[0-9]+$");
  static const std::regex oct_re("^0o[0-7]+$");
  static const std::regex hex_re("^0x[0-9a-fA-F]+$");
  static const std::regex float_re("^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$");
  static const std::regex inf_re("^[-+]?\\.(inf|Inf|INF)$");
  static const std::regex nan_re("^\\.(nan|NaN|NAN)$");
  if (std::regex_match(s, null_re)) return nullptr;
  if (std::regex_match(s, true_re)) return true;
  if (std::regex_match(s, false_re)) return false;
  try {
    if (std::regex_match(s, int_re)) return std::stoll(s);
    if (std::regex_match(s, oct_re)) return std::stoll(s.substr(2), nullptr, 8);
    if (std::regex_match(s, hex_re)) return std::stoll(s.substr(2), nullptr, 16);
  } catch (const std::out_of_range&) {
    return std::strtod(s.c_str(), nullptr);  // beyond int64: keep it as a number
  }
  // strtod, not stod: out-of-range values become inf or 0 instead of throwing.
  if (std::regex_match(s, float_re)) return std::strtod(s.c_str(), nullptr);
  if (std::regex_match(s, inf_re))
    return s[0] == '-' ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  if (std::regex_match(s, nan_re)) return std::numeric_limits<double>::quiet_NaN();
  return s;
}

// ${env:VAR} or ${env:VAR:default}: groups VAR, ":default", default.
constexpr const char* kEnvReference = "\\$\\{env:([A-Za-z_][A-Za-z0-9_]*)(:([^}]*))?\\}";

std::string interpolate_env(const std::string& text, const std::string& where) {
  if (text.find("${") == std::string::npos) return text;
  // $${env:...} is the text ${env:...} itself (how printed configs keep such text).
  static const std::regex env_re(std::string("(\\$)?") + kEnvReference);
  std::string out;
  auto begin = text.cbegin();
  std::smatch m;
  while (std::regex_search(begin, text.cend(), m, env_re)) {
    out.append(begin, m[0].first);
    begin = m[0].second;
    if (m[1].matched) {
      out.append(m[0].first + 1, m[0].second);
      continue;
    }
    const std::string var = m[2].str();
    const char* value = std::getenv(var.c_str());
    if (value != nullptr)
      out += value;
    else if (m[3].matched)
      out += m[4].str();
    else
      throw ConfigError(where + ": environment variable '" + var +
                        "' is not set and has no default: export it or write ${env:" + var +
                        ":default}");
  }
  out.append(begin, text.cend());
  return out;
}

std::string escape_env(const std::string& text) {
  if (text.find("${env:") == std::string::npos) return text;
  // What interpolate_env would replace (a reference with its closing brace), and nothing else.
  static const std::regex reference_re(kEnvReference);
  std::string out;
  auto begin = text.cbegin();
  std::smatch m;
  while (std::regex_search(begin, text.cend(), m, reference_re)) {
    out.append(begin, m[0].first).append("$").append(m[0].first, m[0].second);
    begin = m[0].second;
  }
  return out.append(begin, text.cend());
}

// Position of the first byte that is not well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF, as JSON writers check), or npos.
size_t invalid_utf8_at(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the byte after the lead
    if (c < 0x80) {
      length = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // overlong below
      if (c == 0xED) high = 0x9F;  // surrogates above
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // overlong below
      if (c == 0xF4) high = 0x8F;  // past U+10FFFF above
    } else {
      return i;
    }
    if (i + length > s.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < low || b > high) : (b & 0xC0) != 0x80) return i;
    }
    i += length;
  }
  return std::string::npos;
}

nlohmann::json parse_yaml(const std::string& text, const std::string& origin, SourceMap& marks,
                          bool require_mapping) {
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + bad, '\n'));
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const int column =
        static_cast<int>(bad - (line_start == std::string::npos || bad == 0 ? 0 : line_start + 1)) +
        1;
    fail(Mark{origin, line, column}, "the file is not valid UTF-8 text (save it as UTF-8)");
  }
  // A raw control character (a NUL in a plain scalar) makes yaml-cpp return bytes that are
  // not the text: YAML's stream forbids them, so say where it is instead.
  if (const auto bad =
          std::find_if(text.begin(), text.end(),
                       [](char c) { return has_control_character(std::string(1, c)); });
      bad != text.end()) {
    const size_t at = static_cast<size_t>(bad - text.begin());
    const int line = 1 + static_cast<int>(std::count(text.begin(), bad, '\n'));
    const size_t line_start = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const int column =
        static_cast<int>(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    fail(Mark{origin, line, column},
         fmt::format("the file contains the control character 0x{:02x} (only tab and line "
                     "breaks may appear in YAML text)",
                     static_cast<unsigned char>(*bad)));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const Mark at = mark_of(e.mark, origin);
    if (const auto opener = unclosed_flow_before(text, at.line, at.column))
      fail(Mark{origin, opener->line, opener->column},
           std::string("YAML syntax error: this '") + opener->bracket + "' is not closed (add '" +
               (opener->bracket == '{' ? '}' : ']') + "' where it ends; the parser stopped at " +
               std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + e.msg + ")");
    fail(at, "YAML syntax error: " + e.msg);
  }
  marks.set_fallback(origin);
  marks.set("", Mark{origin, 1, 1}, Mark{origin, 1, 1});
  nlohmann::json out = convert(root, origin, "", marks);
  if (out.is_null() && require_mapping) out = nlohmann::json::object();
  if (require_mapping && !out.is_object()) {
    fail(Mark{origin, 1, 1}, "the document must be a mapping of keys (name:, model:, ...)");
  }
  return out;
}

nlohmann::json load_yaml_file(const std::string& path, SourceMap& marks) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the file (does it exist?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_yaml(ss.str(), path, marks);
}

}  // namespace runner::config
