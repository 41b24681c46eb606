#pragma once
// "did you mean ...?" for misspelled keys and plugin names.

#include <string>
#include <vector>

namespace runner {

/// Edit distance (insertions, deletions, substitutions, adjacent swaps) between a and b.
size_t edit_distance(const std::string& a, const std::string& b);

/// Candidates close to `word`, best first; empty when none is plausibly meant.
std::vector<std::string> closest_matches(const std::string& word,
                                         const std::vector<std::string>& candidates,
                                         size_t max_results = 3);

/// " (did you mean 'x'?)" or " (did you mean 'x' or 'y'?)", or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace runner
