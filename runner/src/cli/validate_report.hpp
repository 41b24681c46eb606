#pragma once
// How `runner validate` says what it found: as text (one line per problem, for people), as JSON
// (an array of objects: file, line, column, key, message, hint, severity) or as GitHub Actions'
// workflow commands (::error file=...,line=...,col=...::...), which annotate the changed lines.

#include <ostream>
#include <string>
#include <vector>

#include "config/config_issue.hpp"

namespace runner::cli {

/// One problem (or warning) of one file, its place parsed out of the line runner says it in.
struct ValidateProblem {
  std::string file;  ///< the experiment file (or "" where a --set argument is the place)
  int line = 0, column = 0;
  std::string origin;  ///< where it was written: "exp.yaml:12:3", "--set KEY=VALUE" or the file
  std::string key;     ///< dotted key path, "" when the line names none
  std::string message, hint;
  bool warning = false;
  std::string text;  ///< the line as runner says it (text format)
};

/// From a validation issue (its mark and key path); `given` is the file validated.
ValidateProblem problem_of(const config::ConfigIssue& issue, const std::string& given);

/// From one error line, "[PLACE: ][KEY: ]MESSAGE" with PLACE "file:line:col" or "--set K=V".
ValidateProblem problem_of_line(const std::string& line, const std::string& given,
                                bool warning = false);

/// Prints `problems` as `format` (text, json or github) to `out`.
void print_problems(const std::vector<ValidateProblem>& problems, const std::string& format,
                    std::ostream& out);

}  // namespace runner::cli
