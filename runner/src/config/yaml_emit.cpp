#include "config/yaml_emit.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <string>

#include "config/yaml_json.hpp"

namespace runner::config {
namespace {

/// The shortest text that reads back to the same double, laid out as Python's repr (plain for
/// exponents -4..15: 0.131, 0.0001; else scientific: 5e-05), always with a dot so that it stays
/// a float in YAML 1.1 readers too (PyYAML reads 5e-05 as a string): 1.0, 5.0e-05.
std::string number_text(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  char buffer[400];
  std::string s(
      buffer, std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific).ptr);
  const int exponent = std::stoi(s.substr(s.find('e') + 1));
  if (exponent >= -4 && exponent < 16) {
    s.assign(buffer,
             std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::fixed).ptr);
  }
  if (s.find('.') != std::string::npos) return s;
  const size_t e = s.find('e');
  return e == std::string::npos ? s + ".0" : s.insert(e, ".0");
}

/// Keys shown first in any mapping: the key that selects a plugin comes before its parameters.
constexpr const char* kLeadingKeys[] = {"name", "backbone"};

bool is_leading_key(const std::string& key) {
  return std::find(std::begin(kLeadingKeys), std::end(kLeadingKeys), key) != std::end(kLeadingKeys);
}

void emit(YAML::Emitter& out, const nlohmann::json& v) {
  if (v.is_null()) {
    out << YAML::Null;
  } else if (v.is_boolean()) {
    out << (v.get<bool>() ? "true" : "false");
  } else if (v.is_number_integer()) {
    out << v.get<long long>();
  } else if (v.is_number_unsigned()) {
    out << v.get<unsigned long long>();
  } else if (v.is_number_float()) {
    out << number_text(v.get<double>());
  } else if (v.is_string()) {
    const std::string s = escape_env(v.get<std::string>());  // read back, it is interpolated
    // Quote strings that would otherwise read back as another type or lose characters.
    const bool control = std::any_of(s.begin(), s.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    const bool edge_space = !s.empty() && (s.front() == ' ' || s.back() == ' ');
    if (!typed_plain_scalar(s).is_string() || s.empty() || control || edge_space)
      out << YAML::DoubleQuoted << s;
    else
      out << s;
  } else if (v.is_array()) {
    const bool flat = !v.empty() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) {
      return x.is_primitive();
    });
    out << (flat || v.empty() ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& x : v) emit(out, x);
    out << YAML::EndSeq;
  } else {
    out << (v.empty() ? YAML::Flow : YAML::Block) << YAML::BeginMap;
    for (const char* key : kLeadingKeys)
      if (v.contains(key)) {
        out << YAML::Key << key << YAML::Value;
        emit(out, v.at(key));
      }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (is_leading_key(it.key())) continue;
      out << YAML::Key << it.key() << YAML::Value;
      emit(out, it.value());
    }
    out << YAML::EndMap;
  }
}

}  // namespace

std::string to_yaml(const nlohmann::json& value, const std::vector<std::string>& key_order) {
  YAML::Emitter out;
  if (!value.is_object() || key_order.empty()) {
    emit(out, value);
    return std::string(out.c_str()) + "\n";
  }
  out << YAML::BeginMap;
  for (const auto& key : key_order) {
    if (!value.contains(key)) continue;
    out << YAML::Key << key << YAML::Value;
    emit(out, value.at(key));
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (std::find(key_order.begin(), key_order.end(), it.key()) != key_order.end()) continue;
    out << YAML::Key << it.key() << YAML::Value;
    emit(out, it.value());
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace runner::config
