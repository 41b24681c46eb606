#include "runner/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace runner {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance: a typo that swaps two letters costs 1.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::vector<std::string> closest_matches(const std::string& word,
                                         const std::vector<std::string>& candidates,
                                         size_t max_results) {
  // Plausible: within a third of the word's length (at least 1, at most 3 edits), or one is a
  // prefix of the other ("lr" vs "lr_min").
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    if (c == word) continue;
    size_t dist = edit_distance(word, c);
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    if (dist <= limit || prefix) scored.emplace_back(prefix ? std::min(dist, limit) : dist, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == max_results) break;
    out.push_back(s.second);
  }
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto matches = closest_matches(word, candidates, 2);
  if (matches.empty()) return "";
  std::string out = " (did you mean '" + matches[0] + "'";
  if (matches.size() > 1) out += " or '" + matches[1] + "'";
  return out + "?)";
}

}  // namespace runner
