// Example out-of-tree tracker plugin: registers the tracker `event_log`, which writes one line
// of JSON per event of the run (start, each record, each file offered, finish) to a file of the
// run folder. A starting point for a team's own tracking service: replace the file with a
// request. Built as a shared library against the installed headers (find_package(runner)) and
// listed in an experiment's `plugins:` or RUNNER_PLUGIN_PATH:
//   output:
//     trackers: [{name: event_log, file: events.jsonl}]
#include <filesystem>
#include <fstream>

#include <runner/error.hpp>
#include <runner/plugin_api.hpp>
#include <runner/plugin_schemas.hpp>
#include <runner/trackers/tracker.hpp>

namespace {

using nlohmann::json;

class EventLog : public runner::trackers::Tracker {
 public:
  explicit EventLog(std::filesystem::path path) : path_(std::move(path)) {}

  void start(const runner::trackers::RunStart& run) override {
    out_.open(path_, std::ios::app);  // a resumed run goes on in the same file
    if (!out_) throw runner::Error("cannot write " + path_.string());
    write({{"event", "start"},
           {"experiment", run.experiment},
           {"run_name", run.run_name},
           {"params", run.params.size()},
           {"resumed_at", run.resumed_at ? json(*run.resumed_at) : json(nullptr)}});
  }
  void log(const runner::trackers::Record& r) override {
    write({{"event", "log"}, {"kind", r.kind}, {"step", r.step}, {"values", r.values}});
  }
  void artifact(const std::string& relative_path) override {
    write({{"event", "artifact"}, {"path", relative_path}});
  }
  void finish(const runner::trackers::RunEnd& end) override {
    write({{"event", "finish"}, {"status", end.status}, {"reason", end.reason}});
  }

 private:
  void write(const json& event) {
    out_ << event.dump() << "\n" << std::flush;
    if (!out_) throw runner::Error("cannot write " + path_.string());
  }

  std::filesystem::path path_;
  std::ofstream out_;
};

void register_event_log(runner::Registries& r) {
  r.trackers.add(
      "event_log",
      [](const json& p, const runner::trackers::TrackerContext& context)
          -> std::unique_ptr<runner::trackers::Tracker> {
        return std::make_unique<EventLog>(std::filesystem::path(context.run_dir) /
                                          p.at("file").get<std::string>());
      },
      runner::schemas::closed_object({{"file",
                                       {{"type", "string"},
                                        {"default", "events.jsonl"},
                                        {"description", "File in the run folder"}}}}),
      "One line of JSON per run event in a file of the run folder (an example plugin)");
}

}  // namespace

RUNNER_PLUGIN(register_event_log)
