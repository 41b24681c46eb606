#pragma once
// Validation problems collected over a whole config, each naming where it is.

#include <string>
#include <vector>

#include "config/source_map.hpp"
#include "runner/error.hpp"

namespace runner::config {

/// One problem: "exp.yaml:12:3: optimizer.lrr: unknown key (did you mean 'lr'?)".
struct ConfigIssue {
  Mark mark;
  std::string path;  ///< dotted key path
  std::string message;
  std::string to_string() const;
};

/// A config with one or more problems. what() is the first problem on one line (plus how
/// many others there are); issues() lists them all.
class ConfigValidationError : public ConfigError {
 public:
  explicit ConfigValidationError(std::vector<ConfigIssue> issues);
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::vector<ConfigIssue> issues_;
};

}  // namespace runner::config
