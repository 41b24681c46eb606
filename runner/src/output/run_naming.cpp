#include "output/run_naming.hpp"

#include <algorithm>
#include <set>

namespace runner::output {

namespace {

constexpr const char* kSeedKey = "seed";
constexpr size_t kLongestValue = 24;  // longer values are cut in labels (whole in the table)

std::string value_of(const std::map<std::string, std::string>& config, const std::string& key) {
  const auto it = config.find(key);
  return it == config.end() ? std::string("(unset)") : it->second;
}

// The last `parts` dot-separated parts of `key`.
std::string tail(const std::string& key, int parts) {
  size_t at = key.size();
  for (int i = 0; i < parts; ++i) {
    const size_t dot = at == 0 ? std::string::npos : key.rfind('.', at - 1);
    if (dot == std::string::npos) return key;
    at = dot;
  }
  return key.substr(at + 1);
}

// Each key by its last part, taking one more part for every key whose short form another shares.
std::map<std::string, std::string> abbreviate(const std::vector<std::string>& keys) {
  std::map<std::string, int> parts;
  for (const auto& key : keys) parts[key] = 1;
  for (bool clash = true; clash;) {
    clash = false;
    std::map<std::string, std::vector<std::string>> by_short;
    for (const auto& key : keys) by_short[tail(key, parts[key])].push_back(key);
    for (const auto& [name, same] : by_short)
      if (same.size() > 1)
        for (const auto& key : same)
          if (tail(key, parts[key]) != key) ++parts[key], clash = true;
  }
  std::map<std::string, std::string> out;
  for (const auto& key : keys) out[key] = tail(key, parts[key]);
  return out;
}

std::string shown_value(const std::string& value) {
  return value.size() <= kLongestValue ? value : value.substr(0, kLongestValue - 3) + "...";
}

}  // namespace

RunNaming name_runs(const std::vector<std::map<std::string, std::string>>& configs,
                    const std::vector<std::string>& names) {
  RunNaming out;
  std::set<std::string> keys;
  for (const auto& config : configs)
    for (const auto& [key, value] : config) keys.insert(key);
  for (const auto& key : keys) {
    if (key.rfind("output.", 0) == 0) continue;
    bool same = true;
    for (const auto& config : configs)
      same = same && value_of(config, key) == value_of(configs.front(), key);
    (same ? out.shared : out.differing).push_back(key);
  }
  out.short_key = abbreviate(out.differing);
  const auto label_without = [&](size_t run, const std::string& skipped) {
    std::string label;
    for (const auto& key : out.differing)
      if (key != skipped)
        label += (label.empty() ? "" : " ") + out.short_key[key] + "=" +
                 shown_value(value_of(configs[run], key));
    return label;
  };
  std::map<std::string, int> seen;
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string label = label_without(i, "");
    if (label.empty()) label = i < names.size() ? names[i] : "run " + std::to_string(i + 1);
    out.labels.push_back(label);
    ++seen[label];
  }
  // The same settings twice (one config run again): the folder tells them apart.
  for (size_t i = 0; i < out.labels.size(); ++i)
    if (seen[out.labels[i]] > 1 && i < names.size()) out.labels[i] += " (" + names[i] + ")";

  const bool seeds_differ =
      std::find(out.differing.begin(), out.differing.end(), kSeedKey) != out.differing.end();
  if (!seeds_differ) return out;
  std::map<std::string, int> members;
  std::vector<std::string> rest;
  for (size_t i = 0; i < configs.size(); ++i) {
    rest.push_back(label_without(i, kSeedKey));
    ++members[rest.back()];
  }
  bool any_group = false;
  for (const auto& [label, count] : members) any_group = any_group || count > 1;
  if (!any_group) return out;
  for (const auto& label : rest) {
    const int count = members[label];
    out.groups.push_back((label.empty() ? std::string("all runs") : label) + " (" +
                         std::to_string(count) + (count == 1 ? " seed)" : " seeds)"));
  }
  return out;
}

}  // namespace runner::output
