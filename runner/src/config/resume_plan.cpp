#include "config/resume_plan.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

#include "config/init_source.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Where a run folder's record lives: its config folder and its history of resumes.
constexpr const char* kRunRecord = "run.json";

json read_record(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / kRunRecord);
  if (!in) return json::object();  // a run from before run.json: no history
  json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return record.is_object() ? record : json::object();  // unreadable: no history either
}

bool may_change(const std::string& key) {
  for (const auto& allowed : keys_a_resume_may_change()) {
    if (allowed.back() == '.' ? key.rfind(allowed, 0) == 0 : key == allowed) return true;
  }
  return false;
}

std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(pointer.empty() ? 0 : 1);
  for (auto& c : out)
    if (c == '/') c = '.';
  return out;
}

// Leaf-level differences, in key order (a list counts as one value).
void collect_changes(const json& from, const json& to, const std::string& pointer,
                     std::vector<KeyChange>& out) {
  if (from.is_object() && to.is_object()) {
    std::set<std::string> keys;
    for (auto it = from.begin(); it != from.end(); ++it) keys.insert(it.key());
    for (auto it = to.begin(); it != to.end(); ++it) keys.insert(it.key());
    for (const auto& k : keys)
      collect_changes(from.contains(k) ? from.at(k) : json(), to.contains(k) ? to.at(k) : json(),
                      pointer + "/" + k, out);
    return;
  }
  if (from != to) out.push_back({dotted(pointer), from, to});
}

std::string timestamp_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream ss;
  ss << std::put_time(&tm, "%Y-%m-%dT%H:%M:%S");
  return ss.str();
}

}  // namespace

std::vector<KeyChange> differing_keys(const json& from, const json& to) {
  std::vector<KeyChange> out;
  collect_changes(from, to, "", out);
  return out;
}

const std::vector<std::string>& keys_a_resume_may_change() {
  static const std::vector<std::string> keys = {"train.epochs",
                                                "train.max_steps",
                                                "train.log_every_steps",
                                                "train.checkpoint_every_steps",
                                                "train.checkpoint_every_minutes",
                                                "train.checkpoints",
                                                "train.shard_optimizer",
                                                "train.early_stopping.",
                                                "launch.",
                                                "log_level",
                                                "predict.",
                                                "output.tensorboard",
                                                "output.root",
                                                "output.run_dir"};
  return keys;
}

std::string keys_a_resume_may_change_text() {
  std::string text;
  for (const auto& k : keys_a_resume_may_change())
    text += (text.empty() ? "" : ", ") + (k.back() == '.' ? k + "*" : k);
  return text;
}

std::string newest_run_with_checkpoint(const std::string& root, const std::string& name) {
  const fs::path dir = fs::path(root) / name;
  std::string best;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir))
      if (fs::exists(entry.path() / "checkpoints" / "last.pt") && entry.path().string() > best)
        best = entry.path().string();
  if (best.empty())
    throw ConfigError("--resume: no run of '" + name + "' with checkpoints/last.pt under " +
                      dir.string() + "; give the run directory: --resume runs/" + name +
                      "/<timestamp>");
  return best;
}

ResumePlan plan_resume(const std::string& file, const std::string& run_dir,
                       const std::vector<std::string>& overrides, const std::string& config_dir) {
  ResumePlan plan;
  std::optional<Experiment> wanted;
  if (!file.empty()) wanted = load_experiment(file, overrides, config_dir);
  plan.run_dir = run_dir;
  if (plan.run_dir.empty()) {
    if (!wanted) throw ConfigError("runner run --resume: give the run directory or the experiment");
    plan.run_dir = newest_run_with_checkpoint(wanted->options.output.root, wanted->options.name);
  }
  if (!fs::exists(fs::path(plan.run_dir) / "checkpoints" / "last.pt"))
    throw ConfigError("--resume " + plan.run_dir +
                      ": no checkpoints/last.pt there to continue from" +
                      removed_checkpoint_reason(plan.run_dir, "last.pt"));

  // The run's config as it last ran: config.yaml, then the changes of earlier resumes.
  const Experiment saved =
      load_run_experiment(plan.run_dir, {}, config_dir, wanted ? wanted->dir : "");
  const std::string dir = saved.dir;
  if (!wanted) wanted = load_run_experiment(plan.run_dir, overrides, dir);

  plan.changes = differing_keys(saved.doc, wanted->doc);
  for (const auto& change : plan.changes) {
    if (may_change(change.key)) continue;
    const std::string allowed = keys_a_resume_may_change_text();
    throw ConfigError("--resume " + plan.run_dir + ": " + change.key + " would change from " +
                      change.from.dump() +
                      " (what the run was trained with, in its config.yaml) "
                      "to " +
                      change.to.dump() + "; a resumed run keeps its config: only " + allowed +
                      " may change. Start a new run for this change");
  }
  // What continues: the run's own config (and its config folder), with the allowed changes.
  plan.experiment = std::move(*wanted);
  plan.experiment.dir = dir;
  plan.experiment.doc["output"]["run_dir"] = plan.run_dir;
  plan.experiment.options.output.run_dir = plan.run_dir;
  std::vector<KeyChange> recorded;
  for (const auto& c : plan.changes)
    if (c.key != "output.run_dir" && c.key != "output.root") recorded.push_back(c);
  plan.changes = recorded;
  return plan;
}

bool is_run_folder(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "config.yaml");
}

Experiment load_run_experiment(const std::string& run_dir,
                               const std::vector<std::string>& overrides,
                               const std::string& config_dir, const std::string& fallback_dir) {
  const fs::path saved_config = fs::path(run_dir) / "config.yaml";
  if (!fs::exists(saved_config))
    throw ConfigError(run_dir +
                      ": no config.yaml there (is it a run folder?); runs keep the config they "
                      "ran with in it");
  const json record = read_record(run_dir);
  std::string dir = config_dir;
  if (dir.empty() && record.contains("config_dir"))
    dir = record.at("config_dir").get<std::string>();
  if (dir.empty()) dir = fallback_dir;
  if (dir.empty()) dir = fs::current_path().string();
  // The changes earlier resumes recorded (what the run last ran with), then these overrides.
  std::vector<std::string> texts;
  for (const auto& resume : record.value("resumes", json::array())) {
    const json changes = resume.value("changes", json::object());
    for (auto it = changes.begin(); it != changes.end(); ++it)
      texts.push_back(it.key() + "=" + it.value().at(1).dump());
  }
  texts.insert(texts.end(), overrides.begin(), overrides.end());
  return load_experiment(saved_config.string(), texts, dir);
}

void write_new_run_record(const std::string& run_dir, const Experiment& e) {
  json record = {{"config_dir", fs::absolute(e.dir).lexically_normal().string()},
                 {"experiment", fs::absolute(e.path).lexically_normal().string()},
                 {"resumes", json::array()}};
  // Where the run's weights came from (model.init_from), as the run started.
  if (const auto source = init_source(e.doc.at("model")))
    record["init_from"] = {{"source", source->source},
                           {"file", source->file},
                           {"weights", source->weights},
                           {"run", source->run_dir}};
  util::write_file_atomically((fs::path(run_dir) / kRunRecord).string(), record.dump(2) + "\n");
}

void record_resume(const std::string& run_dir, const std::string& command,
                   const std::vector<KeyChange>& changes) {
  json record = read_record(run_dir);
  json recorded = json::object();
  for (const auto& c : changes) recorded[c.key] = json::array({c.from, c.to});
  if (!record.contains("resumes")) record["resumes"] = json::array();
  record["resumes"].push_back(
      {{"time", timestamp_now()}, {"command", command}, {"changes", recorded}});
  util::write_file_atomically((fs::path(run_dir) / kRunRecord).string(), record.dump(2) + "\n");
}

void record_in_run(const std::string& run_dir, const json& fields) {
  json record = read_record(run_dir);
  record.update(fields);
  util::write_file_atomically((fs::path(run_dir) / kRunRecord).string(), record.dump(2) + "\n");
}

json tracker_state(const std::string& run_dir, const std::string& name) {
  const json record = read_record(run_dir);
  const auto trackers = record.find("trackers");
  if (trackers == record.end() || !trackers->is_object()) return json::object();
  const auto state = trackers->find(name);
  return state != trackers->end() && state->is_object() ? *state : json::object();
}

void record_tracker_state(const std::string& run_dir, const std::string& name, const json& state) {
  json record = read_record(run_dir);
  if (!record.contains("trackers") || !record.at("trackers").is_object())
    record["trackers"] = json::object();
  record["trackers"][name] = state;
  util::write_file_atomically((fs::path(run_dir) / kRunRecord).string(), record.dump(2) + "\n");
}

void record_restarts(const std::string& run_dir, const json& restarts) {
  if (!restarts.is_array() || restarts.empty()) return;
  json record = read_record(run_dir);
  record["restarts"] = restarts;
  util::write_file_atomically((fs::path(run_dir) / kRunRecord).string(), record.dump(2) + "\n");
}

std::string removed_checkpoint_reason(const std::string& run_dir, const std::string& name) {
  std::ifstream in(fs::path(run_dir) / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object() || !summary.contains("checkpoints")) return "";
  const nlohmann::json& checkpoints = summary.at("checkpoints");
  const std::string policy = checkpoints.value("policy", std::string());
  const nlohmann::json files = checkpoints.value("kept", nlohmann::json::object());
  if (policy.empty() || files.contains(name)) return "";
  std::string kept;
  for (const auto& [file, bytes] : files.items()) kept += (kept.empty() ? "" : " and ") + file;
  return " (the finished run kept " +
         (kept.empty() ? std::string("no checkpoint") : kept + " only") + ": train.checkpoints " +
         policy + ")";
}

}  // namespace runner::config
