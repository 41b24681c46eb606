#include "config/experiment.hpp"
#include "config/foreign_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include "config/config_issue.hpp"
#include "config/embedded_schemas.hpp"
#include "config/overrides.hpp"
#include "config/path_keys.hpp"
#include "config/schema_validator.hpp"
#include "config/yaml_json.hpp"
#include "registry/plugin_loader.hpp"
#include "runner/metrics/metric_names.hpp"
#include "runner/registries.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json& experiment_schema() { return embedded_schema("experiment.schema.json"); }

// Mappings merge key by key (overlay wins); anything else is replaced.
void deep_merge(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    if (base.contains(it.key()))
      deep_merge(base[it.key()], it.value());
    else
      base[it.key()] = it.value();
  }
}

json load_recursive(const std::string& path, SourceMap& marks, std::vector<std::string>& chain) {
  const std::string canonical = fs::weakly_canonical(path).string();
  for (const auto& p : chain) {
    if (p == canonical) throw ConfigError(path + ": 'extends' forms a cycle through this file");
  }
  chain.push_back(canonical);
  SourceMap own;
  json doc = load_yaml_file(path, own);
  json merged = json::object();
  SourceMap merged_marks;
  if (doc.contains("extends")) {
    std::vector<std::string> bases;
    const json& ext = doc.at("extends");
    if (ext.is_string())
      bases.push_back(ext.get<std::string>());
    else if (ext.is_array())
      for (const auto& e : ext)
        if (e.is_string()) bases.push_back(e.get<std::string>());
    if (bases.empty()) {
      throw ConfigError(own.value_mark("/extends").to_string() +
                        ": extends: expected a file name or a list of file names");
    }
    for (size_t i = 0; i < bases.size(); ++i) {
      fs::path base_path = fs::path(bases[i]);
      if (base_path.is_relative()) base_path = fs::path(path).parent_path() / base_path;
      const std::string at =
          own.value_mark(ext.is_array() ? "/extends/" + std::to_string(i) : "/extends").to_string();
      if (!fs::exists(base_path)) {
        throw ConfigError(at + ": extends: included file '" + base_path.string() +
                          "' does not exist (paths are relative to the including file)");
      }
      deep_merge(merged, load_recursive(base_path.string(), merged_marks, chain));
    }
    doc.erase("extends");
  }
  deep_merge(merged, doc);
  merged_marks.merge(own);
  marks.merge(merged_marks);
  chain.pop_back();
  return merged;
}

// Calls fn(pointer, section) for every plugin-selecting section present in `doc`.
void for_each_plugin_section(
    json& doc, const std::function<void(const PluginSection&, const std::string&, json&)>& fn) {
  for (const auto& section : plugin_sections()) {
    const bool list = section.pointer.size() > 2 &&
                      section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
    const std::string base =
        list ? section.pointer.substr(0, section.pointer.size() - 2) : section.pointer;
    const json::json_pointer ptr(base);
    if (!doc.contains(ptr)) continue;
    json& node = doc.at(ptr);
    if (list) {
      if (!node.is_array()) continue;
      for (size_t i = 0; i < node.size(); ++i)
        if (node[i].is_object()) fn(section, base + "/" + std::to_string(i), node[i]);
    } else if (node.is_object()) {
      fn(section, base, node);
    }
  }
}

// Registry access by kind name, without caring about each registry's factory type.
struct KindView {
  std::function<const json*(const std::string&)> schema_of;
  std::function<std::string(const std::string&, const std::string&)> unknown_message;
  std::function<std::vector<std::string>()> names;
};

template <class Factory>
KindView view_of(const Registry<Factory>& r) {
  return KindView{[&r](const std::string& name) -> const json* {
                    const auto* e = r.find(name);
                    return e ? &e->schema : nullptr;
                  },
                  [&r](const std::string& name, const std::string& noun) {
                    return r.unknown_message(name, noun);
                  },
                  [&r] { return r.names(); }};
}

KindView kind_view(const std::string& kind) {
  Registries& r = registries();
  if (kind == "datasets") return view_of(r.datasets);
  if (kind == "transforms") return view_of(r.transforms);
  if (kind == "models") return view_of(r.models);
  if (kind == "optimizers") return view_of(r.optimizers);
  if (kind == "schedulers") return view_of(r.schedulers);
  if (kind == "losses") return view_of(r.losses);
  if (kind == "trackers") return view_of(r.trackers);
  return view_of(r.metrics);
}

// The schema for dotted `path` of `doc`, looking into the selected plugin's schema inside
// plugin sections (for typing --set values).
const json* value_schema_for(const json& doc, const std::vector<std::string>& path) {
  std::string pointer;
  for (size_t depth = 0; depth < path.size(); ++depth) {
    pointer += "/" + path[depth];
    for (const auto& section : plugin_sections()) {
      const bool list = section.pointer.size() > 2 &&
                        section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
      std::string expected = section.pointer;
      if (list) {
        if (depth == 0) continue;
        expected = section.pointer.substr(0, section.pointer.size() - 1) + path[depth];
      }
      if (expected != pointer) continue;
      const json::json_pointer ptr(pointer);
      if (!doc.contains(ptr) || !doc.at(ptr).is_object()) return nullptr;
      const json& node = doc.at(ptr);
      if (!node.contains(section.selector) || !node.at(section.selector).is_string())
        return nullptr;
      const json* s =
          kind_view(section.kind).schema_of(node.at(section.selector).get<std::string>());
      if (!s) return nullptr;
      return schema_at(*s, std::vector<std::string>(path.begin() + depth + 1, path.end()));
    }
  }
  return schema_at(experiment_schema(), path);
}

void load_plugin_libraries(const json& doc, const SourceMap& marks, const std::string& dir) {
  if (!doc.contains("plugins") || !doc.at("plugins").is_array()) return;
  const json& list = doc.at("plugins");
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) continue;
    fs::path p = list[i].get<std::string>();
    if (p.is_relative()) p = fs::path(dir) / p;
    try {
      load_plugin(p.string());
    } catch (const Error& e) {
      throw ConfigError(marks.value_mark("/plugins/" + std::to_string(i)).to_string() +
                        ": plugins." + std::to_string(i) + ": " + e.what());
    }
  }
}

}  // namespace

const std::vector<PluginSection>& plugin_sections() {
  static const std::vector<PluginSection> sections = {
      {"/data/dataset", "datasets", "name"},
      {"/data/train_transforms/*", "transforms", "name"},
      {"/data/eval_transforms/*", "transforms", "name"},
      {"/model", "models", "backbone"},
      {"/optimizer", "optimizers", "name"},
      {"/scheduler", "schedulers", "name"},
      {"/loss", "losses", "name"},
      {"/metrics/*", "metrics", "name"},
      {"/output/trackers/*", "trackers", "name"}};
  return sections;
}

json load_with_includes(const std::string& path, SourceMap& marks) {
  std::vector<std::string> chain;
  return load_recursive(path, marks, chain);
}

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
    core_paths_with_key(experiment_schema(), experiment_schema(), "", key, 4, homes);
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

namespace {

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
void check_keys_of_features_off(const json& doc, const SourceMap& marks,
                                std::vector<ConfigIssue>& issues) {
  const json& train = doc.at("train");
  const json& mixup = train.at("mixup");
  const bool mixes = mixup_section_enabled(mixup);
  for (const char* key :
       {"prob", "switch_prob", "mode", "label_smoothing", "correct_lam", "off_epoch"}) {
    const std::string pointer = std::string("/train/mixup/") + key;
    if (mixes || !user_set(doc, marks, pointer)) continue;
    issues.push_back({marks.key_mark(pointer), "train.mixup." + std::string(key),
                      "has no effect while mixup is off (mixup_alpha and cutmix_alpha 0, "
                      "cutmix_minmax null): set an alpha (timm's recipe: mixup_alpha: 0.8, "
                      "cutmix_alpha: 1.0) or drop it"});
  }
  if (train.at("early_stopping").at("patience").get<int64_t>() == 0 &&
      user_set(doc, marks, "/train/early_stopping/min_delta"))
    issues.push_back({marks.key_mark("/train/early_stopping/min_delta"),
                      "train.early_stopping.min_delta",
                      "has no effect while train.early_stopping.patience is 0 (never stop "
                      "early): set patience (epochs without improvement) or drop it"});
}

// data.sampler_weights goes with data.sampler: weighted, and only with it.
void check_sampler_keys(const json& doc, const SourceMap& marks, std::vector<ConfigIssue>& issues) {
  const json& data = doc.at("data");
  const std::string sampler = data.at("sampler").get<std::string>();
  const bool weights = data.at("sampler_weights").is_array();
  if (sampler == "weighted" && !weights)
    issues.push_back({marks.value_mark("/data/sampler"), "data.sampler",
                      "weighted draws each class by its data.sampler_weights entry, which is not "
                      "set: give one weight per class, or use data.sampler: balanced"});
  if (sampler != "weighted" && weights)
    issues.push_back({marks.value_mark("/data/sampler_weights"), "data.sampler_weights",
                      "is read by data.sampler: weighted only, but data.sampler is " + sampler +
                          ": set data.sampler: weighted or drop data.sampler_weights"});
}

// train.ema and train.mixup: what their keys need of each other and of the batch; what
// train.unfreeze_at_epoch needs.
void check_recipe_keys(const json& doc, const SourceMap& marks, std::vector<ConfigIssue>& issues) {
  check_sampler_keys(doc, marks, issues);
  const json& train = doc.at("train");
  if (train.at("eval_tta").get<bool>() && doc.at("predict").at("tta").empty())
    issues.push_back({marks.value_mark("/train/eval_tta"), "train.eval_tta",
                      "averages predict.tta's views in validation, but predict.tta lists none: "
                      "list views (predict.tta: [hflip]) or drop train.eval_tta"});
  if (const json& unfreeze = train.at("unfreeze_at_epoch"); unfreeze.is_number_integer()) {
    const int64_t at = unfreeze.get<int64_t>(), epochs = train.at("epochs").get<int64_t>();
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
  if (train.at("best").at("weights") == "ema" && !train.at("ema").at("enabled").get<bool>())
    issues.push_back({marks.value_mark("/train/best/weights"), "train.best.weights",
                      "'ema' judges and predicts with train.ema's average, which is off: set "
                      "train.ema.enabled: true or train.best.weights: model"});
  const json& mixup = train.at("mixup");
  const json& minmax = mixup.at("cutmix_minmax");
  if (minmax.is_array() && minmax.at(0).get<double>() >= minmax.at(1).get<double>())
    issues.push_back({marks.value_mark("/train/mixup/cutmix_minmax"), "train.mixup.cutmix_minmax",
                      fmt::format("[{}, {}] is no range: write [min, max] with min < max, "
                                  "e.g. [0.2, 0.8]",
                                  minmax.at(0).get<double>(), minmax.at(1).get<double>())});
  const bool mixes = mixup_section_enabled(mixup);
  const json& batch = train.at("batch_size");
  if (mixes && batch.is_number_integer() && batch.get<int64_t>() % 2 != 0)
    issues.push_back({marks.value_mark("/train/batch_size"), "train.batch_size",
                      fmt::format("{} is odd, and train.mixup pairs image i with image N-1-i of "
                                  "each batch (timm's rule): use an even per-process batch, "
                                  "e.g. {}",
                                  batch.get<int64_t>(), batch.get<int64_t>() + 1)});
}

}  // namespace

namespace {

bool user_set_below(const json& value, const json* schema, const SourceMap& marks,
                    const std::string& pointer) {
  if (!marks.written(pointer)) return false;
  if (schema && schema->contains("properties") && value.is_object()) {
    for (const auto& [key, sub] : schema->at("properties").items())
      if (value.contains(key) &&
          user_set_below(value.at(key), &sub, marks, pointer + "/" + escape_pointer_token(key)))
        return true;
    return false;
  }
  return !(schema && schema->contains("default") && value == schema->at("default"));
}

}  // namespace

bool user_set(const json& doc, const SourceMap& marks, const std::string& pointer) {
  const json::json_pointer where(pointer);
  if (!doc.contains(where)) return false;
  const json* schema = &experiment_schema();
  std::vector<std::string> tokens;
  for (size_t at = 1; at <= pointer.size();) {
    const size_t slash = pointer.find('/', at);
    tokens.push_back(pointer.substr(at, slash == std::string::npos ? slash : slash - at));
    at = slash == std::string::npos ? pointer.size() + 1 : slash + 1;
  }
  for (const auto& token : tokens) {
    if (!schema->contains("properties") || !schema->at("properties").contains(token)) {
      schema = nullptr;
      break;
    }
    schema = &schema->at("properties").at(token);
  }
  return user_set_below(doc.at(where), schema, marks, pointer);
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
void check_task_keys(const json& doc, const SourceMap& marks, std::vector<ConfigIssue>& issues) {
  const bool multilabel = doc.value("task", "") == "multilabel";
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
  const json& mixup = doc.at("train").at("mixup");
  if (mixup_section_enabled(mixup))
    refuse("/train/mixup", "train.mixup", "is not built for task: multilabel: switch it off");
  if (doc.at("data").at("sampler") != "shuffle")
    refuse("/data/sampler", "data.sampler",
           "balances single-label classes; with task: multilabel use shuffle (and loss.pos_weight "
           "for rare classes)");
  if (doc.at("predict").at("format") == "kaggle")
    refuse("/predict/format", "predict.format",
           "kaggle writes one label per image; task: multilabel writes csv");
  const std::string device = doc.at("data").at("device").get<std::string>();
  if (device == "cpu" || device == "cuda")
    refuse("/data/device", "data.device",
           "task: multilabel's multi-hot targets are made by the loader: set data.device: loader "
           "or auto");
}

void validate_experiment(json& doc, const SourceMap& marks) {
  std::vector<ConfigIssue> issues;
  const json& schema = experiment_schema();
  validate_against_schema(doc, schema, marks, "", issues);
  if (issues.empty()) {
    std::set<std::string> written;
    for (const std::string& key : task_default_keys())
      if (doc.contains(json::json_pointer(key))) written.insert(key);
    turn_on_written_sections(doc, schema);
    apply_schema_defaults(doc, schema);
    apply_task_defaults(doc, written);
  }

  for_each_plugin_section(doc, [&](const PluginSection& section, const std::string& pointer,
                                   json& node) {
    if (!node.contains(section.selector) || !node.at(section.selector).is_string()) return;
    const std::string name = node.at(section.selector).get<std::string>();
    const KindView view = kind_view(section.kind);
    const json* schema_of_plugin = view.schema_of(name);
    const std::string selector_ptr = pointer + "/" + section.selector;
    if (!schema_of_plugin) {
      const std::string noun = section.kind == "models" ? "backbone" : "";
      std::string message = view.unknown_message(name, noun);
      if (const auto ours = runner_plugin_for(section.kind, name)) {
        const auto see = message.find(" (");
        message = message.substr(0, see == std::string::npos ? message.size() : see) +
                  "; runner calls it " + *ours + " (see 'runner plugins " + section.kind + "')";
      }
      // A backbone runner has no native form of may well be a timm model.
      const auto see = message.find(" (see 'runner plugins");
      if (section.kind == "models" && name.find('/') == std::string::npos &&
          see != std::string::npos)
        message.insert(see + 2, "timm/" + name + " builds timm's model of that name; ");
      issues.push_back({marks.value_mark(selector_ptr), path_from_pointer(selector_ptr), message});
      return;
    }
    json params = node;
    params.erase(section.selector);
    const size_t before = issues.size();
    validate_against_schema(params, *schema_of_plugin, marks, pointer, issues);
    if (issues.size() != before) return;
    apply_schema_defaults(params, *schema_of_plugin);
    params[section.selector] = name;
    node = params;
  });

  // What the task takes comes first: a wrong metric for it is said as such, not as best's.
  if (issues.empty()) check_task_keys(doc, marks, issues);
  if (issues.empty()) {
    // Cross-field checks that a schema cannot express.
    const json& best = doc["train"]["best"];
    std::set<std::string> metric_names;
    for (const auto& m : doc["metrics"]) {
      metric_names.insert(metrics::reported_name(m.value("name", ""), m));
    }
    metric_names.insert("loss");  // the validation loss is always computed
    const std::string wanted = best.value("metric", "accuracy");
    if (metric_names.count(wanted) == 0) {
      std::vector<std::string> names(metric_names.begin(), metric_names.end());
      issues.push_back({marks.value_mark("/train/best/metric"), "train.best.metric",
                        "'" + wanted + "' is not a configured metric" +
                            did_you_mean(wanted, names) +
                            " (configured: " + fmt::format("{}", fmt::join(names, ", ")) +
                            "); add it under metrics: or pick one of those"});
    }
  }
  if (issues.empty()) check_recipe_keys(doc, marks, issues);
  if (issues.empty()) check_keys_of_features_off(doc, marks, issues);
  suggest_other_sections(doc, issues);
  if (!issues.empty()) throw ConfigValidationError(issues);
}

std::vector<PathKey> path_keys(const json& doc) {
  std::vector<PathKey> keys;
  json& mutable_doc = const_cast<json&>(doc);  // for_each_plugin_section only reads here
  for_each_plugin_section(mutable_doc, [&](const PluginSection& section, const std::string& pointer,
                                           json& node) {
    if (!node.contains(section.selector) || !node.at(section.selector).is_string()) return;
    const json* schema =
        kind_view(section.kind).schema_of(node.at(section.selector).get<std::string>());
    if (!schema || !schema->contains("properties")) return;
    for (const auto& [name, property] : schema->at("properties").items())
      if (property.contains("x-runner-path") && node.contains(name) && node.at(name).is_string())
        keys.push_back({pointer + "/" + escape_pointer_token(name),
                        property.at("x-runner-path").get<std::string>()});
  });
  // model.pretrained: a file or folder unless it names the hub (or is true/false).
  const json::json_pointer pretrained("/model/pretrained");
  if (doc.contains(pretrained) && doc.at(pretrained).is_string() &&
      doc.at(pretrained).get<std::string>().rfind("hf-hub:", 0) != 0)
    keys.push_back({"/model/pretrained", "weights"});
  // model.init_from: a run folder, a checkpoint or a .safetensors file.
  const json::json_pointer init_from("/model/init_from");
  if (doc.contains(init_from) && doc.at(init_from).is_string())
    keys.push_back({"/model/init_from", "weights"});
  return keys;
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const std::string& config_dir) {
  if (!fs::exists(path)) throw ConfigError(path + ": no such experiment file");
  if (!config_dir.empty() && !fs::is_directory(config_dir))
    throw ConfigError("--config-dir " + config_dir + ": no such folder");
  Experiment e;
  e.path = path;
  e.dir = config_dir.empty() ? fs::path(path).parent_path().string() : config_dir;
  if (e.dir.empty()) e.dir = ".";
  e.doc = load_with_includes(path, e.marks);
  e.marks.set_fallback(path);
  // A run folder's config.yaml and a resolved copy run elsewhere (--config-dir: a sweep's
  // point file) spell every key out: only their --set keys are the user's.
  const fs::path folder = fs::path(path).parent_path();
  const bool run_folder_config =
      fs::path(path).filename() == "config.yaml" &&
      (fs::exists(folder / "run.json") || fs::exists(folder / "summary.json") ||
       fs::exists(folder / "checkpoints"));
  if (!config_dir.empty() || run_folder_config) e.marks.set_resolved_copy();
  for (const auto& text : overrides) {
    const Override o = parse_override(text);
    apply_override(e.doc, o, e.marks, value_schema_for(e.doc, o.path));
  }
  load_plugin_libraries(e.doc, e.marks, e.dir);
  validate_experiment(e.doc, e.marks);
  e.dir_given = !config_dir.empty();
  resolve_relative_paths(e);
  e.options = read_experiment_options(e.doc);
  return e;
}

json experiment_schema_with_plugins() {
  json schema = experiment_schema();
  // Each plugin section becomes: its selector must name a registered plugin, and the plugin's
  // parameters are checked by an if/then on that name.
  auto plugin_schema = [](const std::string& kind, const std::string& selector) {
    const KindView view = kind_view(kind);
    json names = json::array();
    json choices = json::array();  // the names, and a pattern per family entry (timm/*)
    json all_of = json::array();
    for (const auto& name : view.names()) {
      json match = {{"const", name}};
      const bool family = name.size() > 2 && name.compare(name.size() - 2, 2, "/*") == 0;
      if (family) {
        std::string prefix;  // a JSON Schema pattern: the prefix's regex characters escaped
        for (const char c : name.substr(0, name.size() - 1))
          prefix += std::string(std::strchr("\\^$.|?*+()[]{}", c) ? "\\" : "") + c;
        match = {{"type", "string"}, {"pattern", "^" + prefix + "[^*]+$"}};
        choices.push_back(match);
      } else {
        names.push_back(name);
      }
      json params = *view.schema_of(name);
      if (!params.contains("properties")) params["properties"] = json::object();
      params["properties"][selector] = match;
      all_of.push_back({{"if", {{"properties", {{selector, match}}}, {"required", {selector}}}},
                        {"then", params}});
    }
    choices.push_back({{"enum", names}});
    json s = {
        {"type", "object"},
        {"required", {selector}},
        {"properties", {{selector, choices.size() == 1 ? choices[0] : json{{"anyOf", choices}}}}},
        {"allOf", all_of}};
    return s;
  };
  for (const auto& section : plugin_sections()) {
    const bool list = section.pointer.size() > 2 &&
                      section.pointer.compare(section.pointer.size() - 2, 2, "/*") == 0;
    const std::string base =
        list ? section.pointer.substr(0, section.pointer.size() - 2) : section.pointer;
    std::string schema_ptr;
    size_t start = 1;
    while (start <= base.size()) {
      const size_t slash = base.find('/', start);
      schema_ptr += "/properties/" + base.substr(start, slash - start);
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    json& target = schema[json::json_pointer(schema_ptr)];
    json replacement = plugin_schema(section.kind, section.selector);
    if (target.contains("description")) replacement["description"] = target["description"];
    if (target.contains("default")) replacement["default"] = target["default"];
    if (list)
      target["items"] = replacement;
    else
      target = replacement;
  }
  return schema;
}

}  // namespace runner::config
