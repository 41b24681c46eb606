#pragma once
// Names for runs shown side by side (compare.html, a sweep's report.html): each run by the
// settings that make it differ, short ("lr=0.003 seed=2": a key by its last part, more parts
// only where two keys would read alike), and runs that differ only by their seed gathered into
// one group ("lr=0.003 (3 seeds)") whose curves the page draws as a mean with a band. Torch-free.

#include <map>
#include <string>
#include <vector>

namespace runner::output {

struct RunNaming {
  std::vector<std::string> differing;            ///< full dotted keys whose values differ, sorted
  std::vector<std::string> shared;               ///< full keys every run has with the same value
  std::map<std::string, std::string> short_key;  ///< full key -> what labels call it
  std::vector<std::string> labels;               ///< per run, unique
  std::vector<std::string> groups;  ///< per run, its seed group's name; empty: no grouping
};

/// `configs`: each run's config as dotted keys (flat_config); `names`: each run's fallback name
/// (its folder), used when the configs do not tell runs apart. output.* keys (where a run was
/// written) never name a run.
RunNaming name_runs(const std::vector<std::map<std::string, std::string>>& configs,
                    const std::vector<std::string>& names);

}  // namespace runner::output
