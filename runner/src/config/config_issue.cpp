#include "config/config_issue.hpp"

namespace runner::config {

std::string ConfigIssue::to_string() const {
  std::string where = mark.to_string();
  const std::string key = path.empty() || path == "<root>" ? "" : path + ": ";
  return (where.empty() ? "" : where + ": ") + key + message;
}

namespace {
std::string issues_summary(const std::vector<ConfigIssue>& issues) {
  if (issues.empty()) return "invalid config";
  std::string out = issues.front().to_string();
  if (issues.size() > 1) {
    out += " (and " + std::to_string(issues.size() - 1) + " more problem" +
           (issues.size() > 2 ? "s" : "") + "; 'runner validate FILE' lists them all)";
  }
  return out;
}
}  // namespace

ConfigValidationError::ConfigValidationError(std::vector<ConfigIssue> issues)
    : ConfigError(issues_summary(issues)), issues_(std::move(issues)) {}

}  // namespace runner::config
