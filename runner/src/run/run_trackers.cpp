#include "run/run_trackers.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "config/resume_plan.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "runner/trackers/tracker.hpp"

namespace runner::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// output.trackers as the run takes them: [(key path, name, parameters)], tensorboard first
// when output.tensorboard asks for it and the list does not name it.
struct TrackerChoice {
  std::string key_path, pointer, name;
  json params;
};

std::vector<TrackerChoice> tracker_choices(const json& doc) {
  std::vector<TrackerChoice> choices;
  const json output = doc.value("output", json::object());
  const json list = output.value("trackers", json::array());
  bool named_tensorboard = false;
  for (size_t i = 0; i < list.size(); ++i) {
    json params = list[i];
    const std::string name = params.at("name").get<std::string>();
    params.erase("name");
    named_tensorboard = named_tensorboard || name == "tensorboard";
    choices.push_back({"output.trackers." + std::to_string(i),
                       "/output/trackers/" + std::to_string(i), name, params});
  }
  if (output.value("tensorboard", true) && !named_tensorboard)
    choices.insert(choices.begin(),
                   {"output.tensorboard", "/output/tensorboard", "tensorboard", json::object()});
  return choices;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "";
}

std::string text_of(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void flatten(const json& node, const std::string& prefix, std::map<std::string, std::string>& out) {
  const auto key = [&](const std::string& part) {
    return prefix.empty() ? part : prefix + "." + part;
  };
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) flatten(it.value(), key(it.key()), out);
    return;
  }
  bool has_objects = false;
  if (node.is_array())
    for (const auto& item : node) has_objects = has_objects || item.is_object();
  if (has_objects) {
    for (size_t i = 0; i < node.size(); ++i) flatten(node[i], key(std::to_string(i)), out);
    return;
  }
  out[prefix] = text_of(node);
}

}  // namespace

std::map<std::string, std::string> flat_params(const json& doc) {
  std::map<std::string, std::string> out;
  flatten(doc, "", out);
  return out;
}

std::vector<output::TrackerEntry> make_trackers(const json& doc, const std::string& run_dir) {
  std::vector<output::TrackerEntry> entries;
  for (const TrackerChoice& choice : tracker_choices(doc)) {
    trackers::TrackerContext context;
    context.run_dir = run_dir;
    context.experiment = doc.value("name", "experiment");
    context.name = choice.name;
    context.key_path = choice.key_path;
    context.saved = config::tracker_state(run_dir, choice.name);
    context.save_state = [run_dir, name = choice.name](const json& state) {
      config::record_tracker_state(run_dir, name, state);
    };
    const auto& entry = registries().trackers.at(choice.name);
    entries.push_back({choice.name, choice.key_path, entry.factory(choice.params, context)});
  }
  return entries;
}

trackers::RunStart tracker_run_start(const json& doc, const std::string& run_dir,
                                     std::map<std::string, std::string> environment) {
  trackers::RunStart start;
  start.run_dir = fs::absolute(run_dir).lexically_normal().string();
  start.experiment = doc.value("name", "experiment");
  start.run_name = fs::path(start.run_dir).filename().string();
  start.params = flat_params(doc);
  start.tags = std::move(environment);
  start.tags["runner.version"] = RUNNER_VERSION;
  start.tags["runner.host"] = host_name();
  start.tags["runner.run_dir"] = start.run_dir;
  // A sweep's point: runner sweep names the sweep, the point and its settings.
  const char* sweep = std::getenv("RUNNER_SWEEP");
  if (sweep && *sweep) {
    start.tags["runner.sweep"] = sweep;
    if (const char* point = std::getenv("RUNNER_SWEEP_POINT"))
      start.tags["runner.sweep_point"] = point;
    const char* settings = std::getenv("RUNNER_SWEEP_SETTINGS");
    const json parsed = json::parse(settings ? settings : "{}", nullptr, false);
    if (parsed.is_object())
      for (auto it = parsed.begin(); it != parsed.end(); ++it)
        start.tags["sweep." + it.key()] = text_of(it.value());
  }
  return start;
}

std::vector<std::string> check_trackers(const config::Experiment& e) {
  std::vector<std::string> warnings;
  for (const TrackerChoice& choice : tracker_choices(e.doc)) {
    trackers::TrackerContext context;
    context.experiment = e.doc.value("name", "experiment");
    context.name = choice.name;
    context.key_path = choice.key_path;
    const std::string where =
        e.marks.value_mark(choice.pointer).to_string() + ": " + choice.key_path + ": ";
    try {
      const auto tracker = registries().trackers.at(choice.name).factory(choice.params, context);
      for (const auto& w : tracker->check()) warnings.push_back(where + w);
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& err) {
      throw ConfigError(where + err.what());
    }
  }
  return warnings;
}

}  // namespace runner::run
