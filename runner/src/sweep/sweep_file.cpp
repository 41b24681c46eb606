#include "sweep/sweep_file.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "config/config_issue.hpp"
#include "config/embedded_schemas.hpp"
#include "config/schema_validator.hpp"
#include "config/yaml_json.hpp"
#include "runner/error.hpp"
#include "sweep/random_search.hpp"

namespace runner::sweep {
// The experiment loading and schema checking a sweep file builds on.
using config::apply_schema_defaults;
using config::ConfigIssue;
using config::ConfigValidationError;
using config::embedded_schema;
using config::escape_pointer_token;
using config::Experiment;
using config::load_experiment;
using config::load_yaml_file;
using config::path_from_pointer;
using config::SourceMap;
using config::validate_against_schema;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string id_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "key=<JSON>": JSON is YAML, so the value reads back with its type (a string stays a string).

std::string last_segment(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::string safe_id(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '=' && c != '-' && c != '_' &&
        c != '.')
      c = '_';
  return s;
}

// The keys of the mapping `section` in the order the file writes them.
std::vector<std::string> yaml_key_order(const std::string& path, const char* section) {
  std::vector<std::string> keys;
  const YAML::Node node = YAML::LoadFile(path)[section];
  if (node && node.IsMap())
    for (const auto& kv : node) keys.push_back(kv.first.Scalar());
  return keys;
}

SlurmOptions slurm_options(const json& section) {
  SlurmOptions o;
  const auto text = [&](const char* key) -> std::optional<std::string> {
    if (!section.contains(key)) return std::nullopt;
    return section.at(key).get<std::string>();
  };
  const auto number = [&](const char* key) -> std::optional<int> {
    if (!section.contains(key)) return std::nullopt;
    return section.at(key).get<int>();
  };
  o.partition = text("partition");
  o.time = text("time");
  o.account = text("account");
  o.cpus_per_task = number("cpus_per_task");
  o.gpus_per_task = number("gpus_per_task");
  o.extra_args = section.at("extra_args").get<std::vector<std::string>>();
  o.requeue_signal_s = section.at("requeue_signal_s").get<int>();
  return o;
}

}  // namespace

bool is_sweep_file(const std::string& path) {
  SourceMap marks;
  try {
    const json doc = load_yaml_file(path, marks);
    return doc.contains("base");
  } catch (const Error&) {
    return false;
  }
}

namespace {

// The sweep places every point in <output>/<name>/<point-id>: a point key that would move its
// run folder would be overridden unseen, so it is refused where it is written.
void refuse_point_folder_keys(const json& doc, const SourceMap& marks,
                              std::vector<ConfigIssue>& issues) {
  auto check = [&](const std::string& pointer, const std::string& key, const json& value) {
    const bool moves = key == "output.root" || key == "output.run_dir" ||
                       (key == "output" && value.is_object() &&
                        (value.contains("root") || value.contains("run_dir")));
    if (moves)
      issues.push_back({marks.key_mark(pointer), path_from_pointer(pointer),
                        "the sweep puts each point's run folder in <output>/<name>/<point-id>: "
                        "set the sweep's `output` key instead"});
  };
  for (const char* section : {"set", "grid", "distributions"})
    if (doc.contains(section) && doc.at(section).is_object())
      for (const auto& [key, value] : doc.at(section).items())
        check(std::string("/") + section + "/" + escape_pointer_token(key), key, value);
  if (doc.contains("points") && doc.at("points").is_array())
    for (size_t i = 0; i < doc.at("points").size(); ++i)
      if (doc.at("points").at(i).is_object())
        for (const auto& [key, value] : doc.at("points").at(i).items())
          check("/points/" + std::to_string(i) + "/" + escape_pointer_token(key), key, value);
}

// The values of `distribution` a trial may take at its ends (a choice: each value).
std::vector<json> ends_of(const json& distribution) {
  for (const char* kind : {"uniform", "loguniform", "int"})
    if (distribution.contains(kind))
      return {distribution.at(kind).at(0), distribution.at(kind).at(1)};
  std::vector<json> all;
  for (const auto& v : distribution.at("choice")) all.push_back(v);
  return all;
}

void check_search_space(const Sweep& sweep, const std::string& path) {
  for (const auto& [key, distribution] : sweep.doc.at("distributions").items())
    for (const json& value : ends_of(distribution)) {
      std::vector<std::string> overrides = sweep.set_overrides;
      overrides.push_back(override_text(key, value));
      try {
        load_experiment(sweep.base_path, overrides);
      } catch (const ConfigError& err) {
        throw ConfigError(path + ": distributions." + key + " at " + value.dump() + ": " +
                          err.what());
      }
    }
}

}  // namespace

std::string override_text(const std::string& key, const json& value) {
  return key + "=" + value.dump();
}

Sweep load_sweep(const std::string& path, const std::vector<std::string>& extra_overrides) {
  Sweep sweep;
  sweep.path = path;
  SourceMap& marks = sweep.marks;
  sweep.doc = load_yaml_file(path, marks);
  std::vector<ConfigIssue> issues;
  const json& schema = embedded_schema("sweep.schema.json");
  validate_against_schema(sweep.doc, schema, marks, "", issues);
  // Keys of the other searches: the schema could only say "should not validate" here.
  const std::string search = sweep.doc.value("search", "grid");
  const bool random = search == "random", optuna = search == "optuna";
  const auto refuse = [&](const char* key, const std::string& why) {
    if (sweep.doc.contains(key))
      issues.push_back({marks.key_mark(std::string("/") + key), key, why});
  };
  for (const char* key : {"trials", "distributions"})
    if (!random && !optuna)
      refuse(key, "only search: random and search: optuna read it: add one or remove it");
  if (!random)
    refuse("seed", optuna ? "search: optuna seeds its sampler: sampler: {seed: N}"
                          : "only search: random reads it: add `search: random` or "
                            "remove it");
  for (const char* key : {"sampler", "pruner", "storage"})
    if (!optuna) refuse(key, "only search: optuna reads it: add `search: optuna` or remove it");
  if (random || optuna)
    refuse("grid", "search: " + search +
                       " draws its points from distributions: move the grid's keys there as "
                       "{choice: [...]}, or remove `search: " +
                       search + "`");
  if (optuna) {
    for (const char* key : {"points", "repeat", "keep_global_batch"})
      refuse(key, "search: optuna's trials take their settings from distributions and set only");
    // A sampler's or pruner's key that the one named does not read is refused, not ignored.
    const auto refuse_unread = [&](const char* section, const std::string& key,
                                   const std::vector<std::string>& readers) {
      if (!sweep.doc.contains(section) || !sweep.doc.at(section).is_object() ||
          !sweep.doc.at(section).contains(key))
        return;
      const std::string name = sweep.doc.at(section).value("name", "");
      if (std::find(readers.begin(), readers.end(), name) != readers.end()) return;
      std::string names;
      for (const auto& r : readers) names += (names.empty() ? "" : " or ") + r;
      const std::string pointer = std::string("/") + section + "/" + key;
      issues.push_back({marks.key_mark(pointer), std::string(section) + "." + key,
                        "only " + std::string(section) + " " + names + " reads it (this is " +
                            name + "): remove it"});
    };
    refuse_unread("sampler", "startup_trials", {"tpe"});
    refuse_unread("pruner", "min_resource", {"successive_halving", "hyperband"});
    refuse_unread("pruner", "reduction_factor", {"successive_halving", "hyperband"});
    refuse_unread("pruner", "startup_trials", {"median"});
    refuse_unread("pruner", "warmup_epochs", {"median"});
  }
  refuse_point_folder_keys(sweep.doc, marks, issues);
  if (!issues.empty()) throw ConfigValidationError(issues);
  apply_schema_defaults(sweep.doc, schema);

  sweep.name = sweep.doc.value("name", fs::path(path).stem().string());
  sweep.output = sweep.doc.at("output").get<std::string>();
  fs::path base = sweep.doc.at("base").get<std::string>();
  if (base.is_relative()) base = fs::path(path).parent_path() / base;
  if (!fs::exists(base)) {
    throw ConfigError(marks.value_mark("/base").to_string() + ": base: experiment file '" +
                      base.string() + "' does not exist (relative to the sweep file)");
  }
  sweep.base_path = base.string();
  sweep.search = sweep.doc.at("search").get<std::string>();
  sweep.executor = sweep.doc.at("executor").get<std::string>();
  sweep.parallel = sweep.doc.value("parallel", 0);
  sweep.slurm = slurm_options(sweep.doc.at("slurm"));

  // Grid combinations in the order the file writes the keys (first key slowest), or random
  // draws, crossed with explicit points. JSON objects are sorted, so the order comes from the
  // YAML itself.
  std::vector<std::string> key_order;
  std::vector<json> combos = {json::object()};
  for (auto it = sweep.doc.at("set").begin(); it != sweep.doc.at("set").end(); ++it)
    sweep.set_overrides.push_back(override_text(it.key(), it.value()));
  sweep.set_overrides.insert(sweep.set_overrides.end(), extra_overrides.begin(),
                             extra_overrides.end());
  if (sweep.search == "optuna") {
    // The trials are asked as the study goes; each distribution's ends are tried now, so that
    // a key the base does not have, or a value it refuses, is one line before any trial.
    check_search_space(sweep, path);
    return sweep;
  }
  if (sweep.search == "random") {
    key_order = yaml_key_order(path, "distributions");
    combos =
        draw_random_points(sweep.doc.at("distributions"), key_order,
                           sweep.doc.at("trials").get<int>(), sweep.doc.at("seed").get<uint64_t>());
  } else {
    const json& grid = sweep.doc.at("grid");
    key_order = yaml_key_order(path, "grid");
    for (const auto& key : key_order) {
      std::vector<json> next;
      for (const auto& c : combos)
        for (const auto& v : grid.at(key)) {
          json n = c;
          n[key] = v;
          next.push_back(n);
        }
      combos = next;
    }
  }
  std::vector<json> points;
  const json& explicit_points = sweep.doc.at("points");
  if (explicit_points.empty()) {
    points = combos;
  } else {
    for (const auto& p : explicit_points)
      for (const auto& c : combos) {
        json n = c;
        for (auto it = p.begin(); it != p.end(); ++it) n[it.key()] = it.value();
        points.push_back(n);
      }
  }

  const int repeat = sweep.doc.at("repeat").get<int>();
  const bool keep_global = sweep.doc.at("keep_global_batch").get<bool>();
  size_t counter = 0;
  for (const auto& values : points) {
    for (int r = 0; r < repeat; ++r) {
      SweepPoint point;
      point.values = values;
      std::ostringstream id;
      id << std::setw(3) << std::setfill('0') << counter++;
      point.overrides = sweep.set_overrides;  // the sweep's set, then the command line's --set
      std::vector<std::string> keys;
      for (const auto& k : key_order)
        if (values.contains(k)) keys.push_back(k);
      for (auto it = values.begin(); it != values.end(); ++it)
        if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
      for (const auto& k : keys) {
        id << "-" << last_segment(k) << "=" << id_text(values.at(k));
        point.overrides.push_back(override_text(k, values.at(k)));
      }
      if (keep_global) {
        // batch_size is global here: divide it by the point's processes.
        Experiment e;
        try {
          e = load_experiment(sweep.base_path, point.overrides);
        } catch (const ConfigError& err) {
          throw ConfigError(path + ": sweep point " + id.str() + ": " + err.what());
        }
        const std::optional<int64_t>& bs = e.options.train.batch_size;
        const int procs = config::world_processes(e.options.launch);
        if (bs) {
          const int64_t global = *bs;
          if (global % procs != 0) {
            throw ConfigError("sweep point " + id.str() + ": keep_global_batch: global batch " +
                              std::to_string(global) + " is not divisible by " +
                              std::to_string(procs) + " processes");
          }
          point.overrides.push_back("train.batch_size=" + std::to_string(global / procs));
        }
      }
      if (repeat > 1) {
        // The point's own seed (the base's, or what set, the grid or --set make it), plus r.
        uint64_t own_seed = 0;
        try {
          own_seed = load_experiment(sweep.base_path, point.overrides).options.seed;
        } catch (const ConfigError& err) {
          throw ConfigError(path + ": sweep point " + id.str() + ": " + err.what());
        }
        const uint64_t seed = own_seed + static_cast<uint64_t>(r);
        id << "-seed=" << seed;
        point.overrides.push_back("seed=" + std::to_string(seed));
      }
      point.id = safe_id(id.str());
      sweep.points.push_back(point);
    }
  }
  // Validate every point before anything runs; executors read the result.
  for (auto& point : sweep.points) {
    try {
      point.experiment = load_experiment(sweep.base_path, point.overrides);
    } catch (const ConfigError& e) {
      throw ConfigError(path + ": sweep point " + point.id + ": " + e.what());
    }
  }
  return sweep;
}

}  // namespace runner::sweep
