#pragma once
// What the experiment's keys need of each other beyond the schema: feature sections on or off,
// the recipe's keys, the sampler's, task: multilabel's defaults and needs, and the names a key
// written in the wrong section has elsewhere. Each check adds ConfigIssues at the keys' marks.
// The checks read values from the typed options (read once, as the run reads them), and from
// the document only which keys were written and the plugin sections (JSON by design).

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_issue.hpp"
#include "config/experiment_options.hpp"
#include "config/source_map.hpp"

namespace runner::config {

/// The rule for feature sections (train.ema, train.ema.warmup): a section with an `enabled` key
/// that the user wrote settings into, without `enabled`, is on; `enabled: false` turns it off.
/// Run on the user's document, before the defaults fill `enabled` in.
void turn_on_written_sections(nlohmann::json& value, const nlohmann::json& schema);
/// Keys written into a feature that is off have no effect: refused, naming what turns it on.
void check_keys_of_features_off(const ExperimentOptions& options, const nlohmann::json& doc,
                                const SourceMap& marks, std::vector<ConfigIssue>& issues);
/// train.ema and train.mixup: what their keys need of each other and of the batch; what
/// train.unfreeze_at_epoch needs; data.sampler's keys.
void check_recipe_keys(const ExperimentOptions& options, const nlohmann::json& doc,
                       const SourceMap& marks, std::vector<ConfigIssue>& issues);
/// The keys task: multilabel gives defaults of its own, as pointers.
const std::vector<std::string>& task_default_keys();
/// task: multilabel's defaults for the keys `written` does not hold.
void apply_task_defaults(nlohmann::json& doc, const std::set<std::string>& written);
/// What task: multilabel needs of the other keys, and what only it takes.
void check_task_keys(const ExperimentOptions& options, const nlohmann::json& doc,
                     const SourceMap& marks, std::vector<ConfigIssue>& issues);
/// train.best.metric names a configured metric (or the loss).
void check_best_metric(const nlohmann::json& doc, const SourceMap& marks,
                       std::vector<ConfigIssue>& issues);
/// Unknown keys: runner's name for another tool's, or the sections where the key exists.
void suggest_other_sections(nlohmann::json& doc, std::vector<ConfigIssue>& issues);

}  // namespace runner::config
