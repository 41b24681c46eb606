#include "cli/validate_report.hpp"

#include <regex>

#include <nlohmann/json.hpp>

namespace runner::cli {
namespace {

// The hint: what the line says to do, after its last "; " (or, failing that, its last ": ").
std::string hint_of(const std::string& message) {
  size_t at = message.rfind("; ");
  if (at == std::string::npos) at = message.rfind(": ");
  return at == std::string::npos ? "" : message.substr(at + 2);
}

// "key.path: rest" -> key.path, when the line starts with a dotted key.
std::string leading_key(std::string& rest) {
  static const std::regex key(R"(^([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+): )");
  std::smatch m;
  if (!std::regex_search(rest, m, key)) return "";
  const std::string found = m[1];
  rest = m.suffix();
  return found;
}

// GitHub's workflow-command escaping: the message, and a property value (also ':' and ',').
std::string github_escaped(const std::string& text, bool property) {
  std::string out;
  for (const char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

std::string text_line(const ValidateProblem& p) {
  if (!p.text.empty()) return (p.warning ? "warning: " : "") + p.text;
  std::string line = p.warning ? "warning: " : "";
  if (!p.origin.empty()) line += p.origin + ": ";
  if (!p.key.empty()) line += p.key + ": ";
  return line + p.message;
}

}  // namespace

ValidateProblem problem_of(const config::ConfigIssue& issue, const std::string& given) {
  ValidateProblem p;
  p.origin = issue.mark.to_string();
  if (issue.mark.line > 0) {
    p.file = issue.mark.origin;
    p.line = issue.mark.line;
    p.column = issue.mark.column;
  } else if (issue.mark.origin.rfind("--set ", 0) != 0) {
    p.file = issue.mark.origin.empty() ? given : issue.mark.origin;
  }
  p.key = issue.path;
  p.message = issue.message;
  p.hint = hint_of(issue.message);
  p.text = issue.to_string();
  return p;
}

ValidateProblem problem_of_line(const std::string& line, const std::string& given, bool warning) {
  ValidateProblem p;
  p.warning = warning;
  std::string rest = line;
  static const std::regex file_place(R"(^(.+?):(\d+):(\d+): )");
  static const std::regex set_place(R"(^(--set [^ ]+): )");
  std::smatch m;
  if (std::regex_search(rest, m, file_place)) {
    p.file = m[1];
    p.line = std::stoi(m[2]);
    p.column = std::stoi(m[3]);
    p.origin = p.file + ":" + std::string(m[2]) + ":" + std::string(m[3]);
    rest = m.suffix();
  } else if (std::regex_search(rest, m, set_place)) {
    p.origin = m[1];
    rest = m.suffix();
  } else {
    p.file = given;
  }
  p.key = leading_key(rest);
  p.message = rest;
  p.hint = hint_of(rest);
  p.text = line;
  return p;
}

void print_problems(const std::vector<ValidateProblem>& problems, const std::string& format,
                    std::ostream& out) {
  if (format == "json") {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& p : problems)
      all.push_back({{"file", p.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.file)},
                     {"line", p.line},
                     {"column", p.column},
                     {"origin", p.origin},
                     {"key", p.key},
                     {"message", p.message},
                     {"hint", p.hint},
                     {"severity", p.warning ? "warning" : "error"}});
    out << all.dump(1) << "\n";
    return;
  }
  for (const auto& p : problems) {
    if (format != "github") {
      out << text_line(p) << "\n";
      continue;
    }
    std::string properties;
    if (!p.file.empty()) properties += "file=" + github_escaped(p.file, true);
    if (p.line > 0) properties += ",line=" + std::to_string(p.line);
    if (p.column > 0) properties += ",col=" + std::to_string(p.column);
    if (!p.key.empty())
      properties +=
          std::string(properties.empty() ? "" : ",") + "title=" + github_escaped(p.key, true);
    out << (p.warning ? "::warning" : "::error") << (properties.empty() ? "" : " " + properties)
        << "::" << github_escaped(text_line(p), false) << "\n";
  }
}

}  // namespace runner::cli
