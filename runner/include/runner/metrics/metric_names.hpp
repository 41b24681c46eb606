#pragma once
// The names a metric's values are reported under (metrics.jsonl's val_<name>, summary.json,
// train.best.metric): one rule for the metric plugins and the config check that
// train.best.metric names a configured metric. Torch-free.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace runner::metrics {

/// top_k's name: "top" + k ("top5").
inline std::string top_k_name(int64_t k) { return "top" + std::to_string(k); }

/// The name of a `metrics:` entry of plugin `plugin` with validated `params`: the plugin's own
/// name, except top_k, named after its k.
inline std::string reported_name(const std::string& plugin, const nlohmann::json& params) {
  if (plugin == "top_k") return top_k_name(params.value("k", int64_t{5}));
  return plugin;
}

}  // namespace runner::metrics
