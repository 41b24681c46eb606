#include "config/key_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "config/embedded_schemas.hpp"
#include "config/experiment_options.hpp"
#include "config/foreign_names.hpp"
#include "config/path_keys.hpp"
#include "config/plugin_sections.hpp"
#include "config/schema_validator.hpp"
#include "runner/metrics/metric_names.hpp"
#include "runner/suggest.hpp"

namespace runner::config {
using nlohmann::json;

namespace {

// Dotted paths under `pointer` where the core schema has a key `key` (sections and their
// sub-sections; $refs followed).
void core_paths_with_key(const json& schema, const json& root, const std::string& pointer,
                         const std::string& key, int depth, std::vector<std::string>& out) {
  const json* s = &schema;
  if (s->contains("$ref") && s->at("$ref").is_string()) {
    const std::string ref = s->at("$ref").get<std::string>();
    if (ref.rfind("#", 0) != 0 || !root.contains(json::json_pointer(ref.substr(1)))) return;
    s = &root.at(json::json_pointer(ref.substr(1)));
  }
  if (depth == 0 || !s->contains("properties")) return;
  for (const auto& [name, property] : s->at("properties").items()) {
    const std::string child = pointer + "/" + escape_pointer_token(name);
    if (name == key) out.push_back(path_from_pointer(child));
    core_paths_with_key(property, root, child, key, depth - 1, out);
  }
}

}  // namespace

// An unknown key with no close sibling may belong to another section: train.lr is the
// optimizer's (optimizer.lr), epochs is train's. Adds "did you mean 'optimizer.lr'?" naming
// where the key exists: the core sections, and the parameters of the plugins this config uses.
void suggest_other_sections(json& doc, std::vector<ConfigIssue>& issues) {
  for (auto& issue : issues) {
    if (issue.message.rfind("unknown key", 0) != 0) continue;
    // A name from Lightning, Accelerate, Hydra or timm's train.py: runner's name for it.
    const std::string leaf = issue.path.substr(issue.path.rfind('.') + 1);
    if (const auto ours = runner_key_for(leaf);
        ours && ours->substr(0, ours->find(' ')) != issue.path) {
      issue.message = "unknown key; runner calls it " + *ours;
      continue;
    }
    if (issue.path == "model.kwargs") {
      issue.message = "unknown key for backbone " + doc["model"].value("backbone", "") +
                      ": model.kwargs passes timm.create_model's arguments to timm/<name> models "
                      "only; a native backbone takes the keys 'runner plugins models' lists";
      continue;
    }
    if (issue.message != "unknown key") continue;  // a close sibling was suggested already
    const std::string key = issue.path.substr(issue.path.rfind('.') + 1);
    std::vector<std::string> homes;
    core_paths_with_key(embedded_schema("experiment.schema.json"),
                        embedded_schema("experiment.schema.json"), "", key, 4, homes);
    for_each_plugin_section(
        doc, [&](const PluginSection& section, const std::string& pointer, json& node) {
          if (!node.contains(section.selector) || !node.at(section.selector).is_string()) return;
          const json* schema =
              kind_view(section.kind).schema_of(node.at(section.selector).get<std::string>());
          if (schema && schema->contains("properties") && schema->at("properties").contains(key))
            homes.push_back(path_from_pointer(pointer + "/" + escape_pointer_token(key)));
        });
    homes.erase(std::remove(homes.begin(), homes.end(), issue.path), homes.end());
    if (homes.empty() || homes.size() > 3) continue;  // many homes: no one move to suggest
    issue.message += " (did you mean '" + fmt::format("{}", fmt::join(homes, "' or '")) + "'?)";
  }
}

// The rule for feature sections (train.ema, train.ema.warmup): a section with an `enabled` key
// that the user wrote settings into, without `enabled`, is on; `enabled: false` turns it off.
// Run on the user's document, before the defaults fill `enabled` in.
void turn_on_written_sections(json& value, const json& schema) {
  if (!value.is_object() || !schema.is_object() || !schema.contains("properties")) return;
  const json& props = schema.at("properties");
  if (props.contains("enabled") && props.at("enabled").value("type", "") == "boolean" &&
      !value.contains("enabled") && !value.empty())
    value["enabled"] = true;
  for (auto it = value.begin(); it != value.end(); ++it)
    if (props.contains(it.key())) turn_on_written_sections(it.value(), props.at(it.key()));
}

// Keys written into a feature that is off have no effect: refused, naming what turns it on.
void check_keys_of_features_off(const ExperimentOptions& o, const json& doc, const SourceMap& marks,
                                std::vector<ConfigIssue>& issues) {
  const bool mixes = o.train.mixup.enabled();
  for (const char* key :
       {"prob", "switch_prob", "mode", "label_smoothing", "correct_lam", "off_epoch"}) {
    const std::string pointer = std::string("/train/mixup/") + key;
    if (mixes || !user_set(doc, marks, pointer)) continue;
    issues.push_back({marks.key_mark(pointer), "train.mixup." + std::string(key),
                      "has no effect while mixup is off (mixup_alpha and cutmix_alpha 0, "
                      "cutmix_minmax null): set an alpha (timm's recipe: mixup_alpha: 0.8, "
                      "cutmix_alpha: 1.0) or drop it"});
  }
  if (o.train.early_stopping.patience == 0 &&
      user_set(doc, marks, "/train/early_stopping/min_delta"))
    issues.push_back({marks.key_mark("/train/early_stopping/min_delta"),
                      "train.early_stopping.min_delta",
                      "has no effect while train.early_stopping.patience is 0 (never stop "
                      "early): set patience (epochs without improvement) or drop it"});
}

namespace {

// data.sampler_weights goes with data.sampler: weighted, and only with it.
void check_sampler_keys(const DataOptions& data, const SourceMap& marks,
                        std::vector<ConfigIssue>& issues) {
  const std::string& sampler = data.sampler;
  const bool weights = !data.sampler_weights.empty();
  if (sampler == "weighted" && !weights)
    issues.push_back({marks.value_mark("/data/sampler"), "data.sampler",
                      "weighted draws each class by its data.sampler_weights entry, which is not "
                      "set: give one weight per class, or use data.sampler: balanced"});
  if (sampler != "weighted" && weights)
    issues.push_back({marks.value_mark("/data/sampler_weights"), "data.sampler_weights",
                      "is read by data.sampler: weighted only, but data.sampler is " + sampler +
                          ": set data.sampler: weighted or drop data.sampler_weights"});
}

}  // namespace

// train.ema and train.mixup: what their keys need of each other and of the batch; what
// train.unfreeze_at_epoch needs.
void check_recipe_keys(const ExperimentOptions& o, const json& doc, const SourceMap& marks,
                       std::vector<ConfigIssue>& issues) {
  check_sampler_keys(o.data, marks, issues);
  const TrainOptions& train = o.train;
  if (train.eval_tta && o.predict.tta.empty())
    issues.push_back({marks.value_mark("/train/eval_tta"), "train.eval_tta",
                      "averages predict.tta's views in validation, but predict.tta lists none: "
                      "list views (predict.tta: [hflip]) or drop train.eval_tta"});
  if (train.unfreeze_at_epoch) {
    const int64_t at = *train.unfreeze_at_epoch, epochs = train.epochs;
    if (doc.at("model").value("freeze", json()).is_null())
      issues.push_back({marks.value_mark("/train/unfreeze_at_epoch"), "train.unfreeze_at_epoch",
                        "thaws model.freeze's part, but model.freeze is not set: freeze a part "
                        "(model.freeze: backbone) or drop it"});
    else if (at >= epochs)
      issues.push_back({marks.value_mark("/train/unfreeze_at_epoch"), "train.unfreeze_at_epoch",
                        fmt::format("{} keeps model.freeze's part frozen for all of train.epochs "
                                    "{}: the part would never train; set it below {} (or drop "
                                    "it to keep the part frozen)",
                                    at, epochs, epochs)});
  }
  if (train.best.weights == "ema" && !train.ema.enabled)
    issues.push_back({marks.value_mark("/train/best/weights"), "train.best.weights",
                      "'ema' judges and predicts with train.ema's average, which is off: set "
                      "train.ema.enabled: true or train.best.weights: model"});
  const auto& minmax = train.mixup.cutmix_minmax;
  if (minmax && minmax->first >= minmax->second)
    issues.push_back({marks.value_mark("/train/mixup/cutmix_minmax"), "train.mixup.cutmix_minmax",
                      fmt::format("[{}, {}] is no range: write [min, max] with min < max, "
                                  "e.g. [0.2, 0.8]",
                                  minmax->first, minmax->second)});
  const std::optional<int64_t>& batch = train.batch_size;
  if (train.mixup.enabled() && batch && *batch % 2 != 0)
    issues.push_back({marks.value_mark("/train/batch_size"), "train.batch_size",
                      fmt::format("{} is odd, and train.mixup pairs image i with image N-1-i of "
                                  "each batch (timm's rule): use an even per-process batch, "
                                  "e.g. {}",
                                  *batch, *batch + 1)});
}

// The keys task: multilabel gives defaults of its own, as pointers.
const std::vector<std::string>& task_default_keys() {
  static const std::vector<std::string> keys = {"/loss", "/metrics", "/train/best/metric",
                                                "/predict/format"};
  return keys;
}

// task: multilabel's defaults for the keys `written` (before the schema's defaults were filled
// in: in the file, an included file or a --set; a run folder's config.yaml has them all) does
// not hold: the bce loss, the multi-label metrics with best.pt by map, csv predictions.
void apply_task_defaults(json& doc, const std::set<std::string>& written) {
  if (doc.value("task", "") != "multilabel") return;
  const auto unset = [&](const std::string& key) { return written.count(key) == 0; };
  if (unset("/loss")) doc["loss"] = {{"name", "bce"}};
  if (unset("/metrics"))
    doc["metrics"] =
        json::array({{{"name", "map"}}, {{"name", "micro_f1"}}, {{"name", "macro_f1"}}});
  if (unset("/train/best/metric")) doc["train"]["best"]["metric"] = "map";
  if (unset("/predict/format")) doc["predict"]["format"] = "csv";
}

// What task: multilabel needs of the other keys, and what only it takes.
void check_task_keys(const ExperimentOptions& o, const json& doc, const SourceMap& marks,
                     std::vector<ConfigIssue>& issues) {
  const bool multilabel = o.multilabel;
  static const std::set<std::string> multilabel_metrics = {"map", "micro_f1", "macro_f1", "loss"};
  for (size_t i = 0; i < doc.at("metrics").size(); ++i) {
    const json& m = doc.at("metrics").at(i);
    const std::string name = m.value("name", "");
    const std::string at = "/metrics/" + std::to_string(i);
    if (multilabel && multilabel_metrics.count(name) == 0)
      issues.push_back({marks.value_mark(at + "/name"), "metrics",
                        name + " is a single-label metric; task: multilabel takes map, micro_f1, "
                               "macro_f1 and loss"});
    if (!multilabel && (name == "map" || name == "micro_f1"))
      issues.push_back({marks.value_mark(at + "/name"), "metrics",
                        name + " scores multi-label predictions: set task: multilabel, or use "
                               "accuracy or macro_f1"});
    // (A resolved config spells the default out: only another value is refused.)
    if (!multilabel && marks.written(at + "/threshold") && m.value("threshold", 0.5) != 0.5)
      issues.push_back({marks.value_mark(at + "/threshold"), "metrics",
                        name + "'s threshold applies to task: multilabel (a single-label run "
                               "predicts the argmax): drop it"});
  }
  if (!multilabel) return;
  const auto refuse = [&](const std::string& pointer, const std::string& key,
                          const std::string& why) {
    issues.push_back({marks.value_mark(pointer), key, why});
  };
  if (doc.at("loss").value("name", "") != "bce")
    refuse("/loss/name", "loss",
           "task: multilabel trains each class as its own yes/no: set loss: {name: bce}");
  if (o.train.mixup.enabled())
    refuse("/train/mixup", "train.mixup", "is not built for task: multilabel: switch it off");
  if (o.data.sampler != "shuffle")
    refuse("/data/sampler", "data.sampler",
           "balances single-label classes; with task: multilabel use shuffle (and loss.pos_weight "
           "for rare classes)");
  if (o.predict.format == "kaggle")
    refuse("/predict/format", "predict.format",
           "kaggle writes one label per image; task: multilabel writes csv");
  if (o.data.device == "cpu" || o.data.device == "cuda")
    refuse("/data/device", "data.device",
           "task: multilabel's multi-hot targets are made by the loader: set data.device: loader "
           "or auto");
}

void check_best_metric(const json& doc, const SourceMap& marks, std::vector<ConfigIssue>& issues) {
  const json& best = doc.at("train").at("best");
  std::set<std::string> metric_names;
  for (const auto& m : doc.at("metrics")) {
    metric_names.insert(metrics::reported_name(m.value("name", ""), m));
  }
  metric_names.insert("loss");  // the validation loss is always computed
  const std::string wanted = best.value("metric", "accuracy");
  if (metric_names.count(wanted) == 0) {
    std::vector<std::string> names(metric_names.begin(), metric_names.end());
    issues.push_back({marks.value_mark("/train/best/metric"), "train.best.metric",
                      "'" + wanted + "' is not a configured metric" + did_you_mean(wanted, names) +
                          " (configured: " + fmt::format("{}", fmt::join(names, ", ")) +
                          "); add it under metrics: or pick one of those"});
  }
}

}  // namespace runner::config
