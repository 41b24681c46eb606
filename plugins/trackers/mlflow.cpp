// The `mlflow` tracker: a run as one MLflow run on a tracking server, over its REST API. The
// experiment by name (created when absent), the resolved config as params, the records as
// metrics (one log-batch per log window), the run folder's files as artifacts through the
// server's artifact proxy, and the run's status at the end. A resumed run continues the same
// MLflow run (its id kept in run.json). Requests go from a thread of their own, so the step
// never waits on the server; one that fails is retried with backoff, then the tracker is off for
// the run (one warning) and what it could not send goes to RUN/trackers/mlflow.pending.jsonl,
// which `runner track RUN` sends later.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "runner/error.hpp"
#include "runner/trackers/metric_tags.hpp"
#include "runner/trackers/tracker.hpp"
#include "trackers/mlflow_client.hpp"
#include "trackers/trackers.hpp"

namespace runner::trackers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct MlflowOptions {
  std::optional<std::string> tracking_uri, experiment, run_name;
  std::map<std::string, std::string> tags;
  std::vector<std::string> artifacts;
  bool log_params = true;
  double timeout_s = 10;
  int retries = 4;
};

std::optional<std::string> optional_text(const json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end() || it->is_null()) return std::nullopt;
  return it->get<std::string>();
}

MlflowOptions mlflow_options(const json& p) {
  MlflowOptions o;
  o.tracking_uri = optional_text(p, "tracking_uri");
  o.experiment = optional_text(p, "experiment");
  o.run_name = optional_text(p, "run_name");
  for (auto it = p.at("tags").begin(); it != p.at("tags").end(); ++it)
    o.tags[it.key()] = it.value().get<std::string>();
  o.artifacts = p.at("artifacts").get<std::vector<std::string>>();
  o.log_params = p.at("log_params").get<bool>();
  o.timeout_s = p.at("timeout_s").get<double>();
  o.retries = p.at("retries").get<int>();
  return o;
}

// The events as the pending file keeps them, one JSON object per line.
json start_event(const RunStart& run) {
  return {{"event", "start"},
          {"run_dir", run.run_dir},
          {"experiment", run.experiment},
          {"run_name", run.run_name},
          {"params", run.params},
          {"tags", run.tags},
          {"resumed_at", run.resumed_at ? json(*run.resumed_at) : json(nullptr)}};
}

RunStart run_start_of(const json& e) {
  RunStart run;
  run.run_dir = e.value("run_dir", "");
  run.experiment = e.value("experiment", "");
  run.run_name = e.value("run_name", "");
  run.params = e.value("params", std::map<std::string, std::string>{});
  run.tags = e.value("tags", std::map<std::string, std::string>{});
  if (e.contains("resumed_at") && e.at("resumed_at").is_number_integer())
    run.resumed_at = e.at("resumed_at").get<int64_t>();
  return run;
}

json log_event(const Record& r) {
  return {{"event", "log"},   {"kind", r.kind},       {"step", r.step},
          {"epoch", r.epoch}, {"unix_ms", r.unix_ms}, {"values", r.values}};
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string mlflow_status(const std::string& status) {
  if (status == "finished") return "FINISHED";
  if (status == "failed") return "FAILED";
  return "KILLED";  // interrupted, requeued (the requeued job sets it RUNNING again)
}

class MlflowTracker : public Tracker {
 public:
  MlflowTracker(MlflowOptions options, TrackerContext context)
      : options_(std::move(options)), context_(std::move(context)) {}

  ~MlflowTracker() override { close_and_join(); }

  void start(const RunStart& run) override {
    run_ = run;
    push(start_event(run));
    worker_ = std::thread([this] { work(); });
  }

  void log(const Record& record) override { push(log_event(record)); }

  void artifact(const std::string& relative_path) override {
    for (const auto& wanted : options_.artifacts)
      if (fs::path(wanted).lexically_normal() == fs::path(relative_path).lexically_normal())
        push({{"event", "artifact"}, {"path", relative_path}});
  }

  // Waits for what is queued to be sent (or written to the pending file): bounded by the
  // requests' timeouts, with no backoff once the run is ending.
  void finish(const RunEnd& end) override {
    push({{"event", "finish"},
          {"status", end.status},
          {"reason", end.reason},
          {"unix_ms", unix_ms_now()}});
    close_and_join();
  }

  std::vector<std::string> check() override {
    const MlflowClient client(options_.tracking_uri, std::min(options_.timeout_s, 5.0));
    const std::string name = options_.experiment.value_or(context_.experiment);
    try {
      const auto found = client.experiment_by_name(name);
      if (found && found->second == "deleted")
        throw Error("the MLflow experiment '" + name + "' on " + client.uri() +
                    " is deleted, and the server keeps its name: restore it (`mlflow "
                    "experiments restore --experiment-id " +
                    found->first + "`) or set " + context_.key_path +
                    ".experiment to another name");
    } catch (const MlflowError& e) {
      if (!e.retryable()) throw Error(e.what());
      return {std::string(e.what()) +
              "; the run will try it when it starts and go on without it if it still fails"};
    }
    return {};
  }

  std::string send_pending() override {
    const fs::path path = pending_path();
    if (!fs::exists(path)) return "";
    std::vector<json> events;
    {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (e.is_object()) events.push_back(std::move(e));
      }
    }
    if (events.empty() || events.front().value("event", "") != "start") {
      fs::remove(path);
      return "";
    }
    // What fails now goes to a new pending file; this one goes once it is all sent.
    const fs::path sending = path.string() + ".sending";
    fs::rename(path, sending);
    replaying_ = true;
    run_ = run_start_of(events.front());
    for (const auto& e : events) push(e);
    worker_ = std::thread([this] { work(); });
    close_and_join();
    fs::remove(sending);
    if (off_) return "not all sent (" + off_reason_ + "): still in " + pending_path().string();
    return "";
  }

 private:
  // --- the queue between the run's thread and the sender ---
  void push(json event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(event));
    }
    wake_.notify_all();
  }

  void close_and_join() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  void work() {
    for (;;) {
      std::deque<json> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !queue_.empty() || closing_; });
        if (queue_.empty()) return;
        batch.swap(queue_);
      }
      while (!batch.empty()) {
        if (off_) {
          keep_pending(batch);
          break;
        }
        // Consecutive records go as one log-batch: at most one request per log window.
        std::vector<json> records;
        while (!batch.empty() && batch.front().value("event", "") == "log") {
          records.push_back(batch.front());
          batch.pop_front();
        }
        try {
          if (!records.empty()) {
            with_retries([&] { send_records(records); });
            continue;
          }
          with_retries([&] { handle(batch.front()); });
          batch.pop_front();
        } catch (const std::exception& e) {
          switch_off(e.what());
          for (auto it = records.rbegin(); it != records.rend(); ++it) batch.push_front(*it);
          keep_pending(batch);
          break;
        }
      }
    }
  }

  // Retries what may go through later (no answer, 5xx, 429) with backoff 0.5, 1, 2, 4 s; not
  // once the run is ending (it would hold the run's exit), nor the server's refusals (4xx).
  template <class Send>
  void with_retries(Send&& send) {
    double wait_s = 0.5;
    for (int attempt = 1;; ++attempt) {
      try {
        send();
        return;
      } catch (const MlflowError& e) {
        if (!e.retryable()) throw;
        bool last = attempt > options_.retries;
        if (!last) {
          std::unique_lock<std::mutex> lock(mutex_);
          last =
              wake_.wait_for(lock, std::chrono::duration<double>(wait_s), [&] { return closing_; });
        }
        if (last)
          throw MlflowError(std::string(e.what()) + " (after " + std::to_string(attempt) +
                                (attempt == 1 ? " try)" : " tries)"),
                            true, e.status(), e.code());
      }
      wait_s *= 2;
    }
  }

  void switch_off(const std::string& why) {
    off_ = true;
    off_reason_ = why;
    if (replaying_) return;  // `runner track` says what is still pending itself
    spdlog::warn(
        "tracker '{}' ({}) is off for the rest of this run: {}; what it could not send is kept "
        "in {}: send it with `runner track {}`",
        context_.name, context_.key_path, why, pending_path().string(), run_.run_dir);
  }

  fs::path pending_path() const {
    return fs::path(context_.run_dir) / "trackers" / (context_.name + ".pending.jsonl");
  }

  // The pending file starts with the run's start, so `runner track` knows the run it sends to.
  void keep_pending(const std::deque<json>& events) {
    const fs::path path = pending_path();
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    const bool fresh = !fs::exists(path);
    std::ofstream out(path, std::ios::app);
    if (fresh) out << start_event(run_).dump() << "\n";
    for (const auto& e : events)
      if (e.value("event", "") != "start") out << e.dump() << "\n";
    out.flush();
    if (!out)
      spdlog::warn("tracker '{}': cannot write {}: what it could not send is lost", context_.name,
                   path.string());
  }

  // --- MLflow requests ---
  const MlflowClient& client() {
    if (!client_) client_.emplace(options_.tracking_uri, options_.timeout_s);
    return *client_;
  }

  void handle(const json& event) {
    const std::string kind = event.value("event", "");
    if (kind == "start") return begin_run();
    if (kind == "artifact") return upload(event.at("path").get<std::string>());
    if (kind == "finish") return end_run(event);
  }

  void save_state() {
    if (!context_.save_state) return;
    context_.save_state({{"tracking_uri", client().uri()},
                         {"experiment_id", experiment_id_},
                         {"run_id", run_id_},
                         {"artifact_uri", artifact_uri_},
                         {"params_sent", params_sent_}});
  }

  std::string experiment_id() {
    const std::string name = options_.experiment.value_or(run_.experiment);
    const auto found = client().experiment_by_name(name);
    if (found) {
      if (found->second == "deleted")
        throw MlflowError("the experiment '" + name + "' is deleted on " + client().uri() +
                              ": restore it or set " + context_.key_path + ".experiment",
                          false);
      return found->first;
    }
    try {
      return client().post("experiments/create", {{"name", name}}).at("experiment_id");
    } catch (const MlflowError& e) {
      // Another run (a sweep's point beside this one) created it first.
      if (e.code() != "RESOURCE_ALREADY_EXISTS") throw;
      return client().experiment_by_name(name).value().first;
    }
  }

  // The run: the one run.json names (a resume, `runner track`), else a new one.
  void begin_run() {
    const json& saved = context_.saved;
    const bool continues =
        saved.value("tracking_uri", "") == client().uri() && !saved.value("run_id", "").empty();
    if (continues) {
      experiment_id_ = saved.value("experiment_id", "");
      run_id_ = saved.value("run_id", "");
      params_sent_ = saved.value("params_sent", false);
      artifact_uri_ = client()
                          .get("runs/get", {{"run_id", run_id_}})
                          .at("run")
                          .at("info")
                          .value("artifact_uri", saved.value("artifact_uri", ""));
      if (!replaying_) client().post("runs/update", {{"run_id", run_id_}, {"status", "RUNNING"}});
    } else {
      experiment_id_ = experiment_id();
      json tags = json::array();
      const json created =
          client().post("runs/create", {{"experiment_id", experiment_id_},
                                        {"run_name", options_.run_name.value_or(run_.run_name)},
                                        {"start_time", unix_ms_now()},
                                        {"tags", tags}});
      run_id_ = created.at("run").at("info").at("run_id").get<std::string>();
      artifact_uri_ = created.at("run").at("info").value("artifact_uri", "");
      save_state();
    }
    send_tags();
    if (!params_sent_ && options_.log_params) {
      send_params();
      params_sent_ = true;
      save_state();
    }
    // A resume trains again the steps after its checkpoint: the ones this run already has
    // stay as they are (the same values), so MLflow shows each step once.
    if (run_.resumed_at && continues && !replaying_) {
      logged_through_["step"] = last_logged_step("train/loss");
      logged_through_["epoch"] = last_logged_step("train/epoch_loss");
    }
  }

  int64_t last_logged_step(const std::string& key) {
    const json history =
        client().get("metrics/get-history", {{"run_id", run_id_}, {"metric_key", key}});
    int64_t last = -1;
    for (const auto& m : history.value("metrics", json::array()))
      last = std::max(last, m.value("step", int64_t{-1}));
    return last;
  }

  void send_tags() {
    std::map<std::string, std::string> tags = run_.tags;
    for (const auto& [k, v] : options_.tags) tags[k] = v;
    tags["mlflow.source.name"] = "runner";
    tags["mlflow.source.type"] = "JOB";
    if (const char* user = std::getenv("USER")) tags["mlflow.user"] = user;
    if (!replaying_) tags["runner.status"] = "running";
    json batch = json::array();
    for (const auto& [k, v] : tags) {
      batch.push_back({{"key", truncated(k, kMlflowKeyLength)},
                       {"value", truncated(v, kMlflowTagValueLength)}});
      if (batch.size() == kMlflowTagsPerBatch) {
        client().post("runs/log-batch", {{"run_id", run_id_}, {"tags", batch}});
        batch = json::array();
      }
    }
    if (!batch.empty()) client().post("runs/log-batch", {{"run_id", run_id_}, {"tags", batch}});
  }

  // The resolved config, 100 params a request; a value over MLflow's limit is cut and marked,
  // and the run's tag runner.truncated_params names the keys.
  void send_params() {
    std::vector<std::string> cut;
    json batch = json::array();
    const auto flush = [&] {
      if (batch.empty()) return;
      client().post("runs/log-batch", {{"run_id", run_id_}, {"params", batch}});
      batch = json::array();
    };
    for (const auto& [k, v] : run_.params) {
      if (k.size() > kMlflowKeyLength || v.size() > kMlflowParamValueLength) cut.push_back(k);
      batch.push_back({{"key", truncated(k, kMlflowKeyLength)},
                       {"value", truncated(v, kMlflowParamValueLength)}});
      if (batch.size() == kMlflowParamsPerBatch) flush();
    }
    flush();
    if (!cut.empty()) {
      std::string names;
      for (const auto& k : cut) names += (names.empty() ? "" : ",") + k;
      client().post("runs/log-batch", {{"run_id", run_id_},
                                       {"tags",
                                        {{{"key", "runner.truncated_params"},
                                          {"value", truncated(names, kMlflowTagValueLength)}}}}});
    }
  }

  void send_records(const std::vector<json>& records) {
    json metrics = json::array();
    const auto flush = [&] {
      if (metrics.empty()) return;
      client().post("runs/log-batch", {{"run_id", run_id_}, {"metrics", metrics}});
      metrics = json::array();
    };
    for (const auto& r : records) {
      const std::string kind = r.value("kind", "");
      const int64_t step = r.value("step", int64_t{0});
      const auto through = logged_through_.find(kind);
      if (through != logged_through_.end() && step <= through->second) continue;
      const json& values = r.at("values");
      const auto add = [&](const std::string& key, double value) {
        if (key.empty() || !std::isfinite(value)) return;  // JSON has no NaN
        metrics.push_back({{"key", key},
                           {"value", value},
                           {"timestamp", r.value("unix_ms", int64_t{0})},
                           {"step", step}});
        if (metrics.size() == kMlflowMetricsPerBatch) flush();
      };
      if (kind == "best") {
        add("best/" + values.value("metric", "metric"), values.value("value", NAN));
        continue;
      }
      for (auto it = values.begin(); it != values.end(); ++it)
        if (it.value().is_number()) add(metric_tag(kind, it.key()), it.value().get<double>());
    }
    flush();
  }

  void upload(const std::string& relative_path) {
    const auto root = proxied_artifact_root(artifact_uri_);
    if (!root) {
      if (!warned_store_)
        spdlog::warn(
            "tracker '{}': the run's artifacts live at {}, which runner does not write "
            "to; start the server with --serve-artifacts (the default of `mlflow "
            "server`) for it to take them",
            context_.name, artifact_uri_);
      warned_store_ = true;
      return;
    }
    const fs::path file = fs::path(context_.run_dir) / relative_path;
    if (!fs::exists(file)) return;  // removed since (train.checkpoints)
    client().upload(*root, relative_path, file.string());
  }

  void end_run(const json& event) {
    const std::string status = event.value("status", "finished");
    json tags = json::array({{{"key", "runner.status"}, {"value", status}}});
    const std::string reason = event.value("reason", "");
    if (!reason.empty())
      tags.push_back(
          {{"key", "runner.end_reason"}, {"value", truncated(reason, kMlflowTagValueLength)}});
    client().post("runs/log-batch", {{"run_id", run_id_}, {"tags", tags}});
    client().post("runs/update", {{"run_id", run_id_},
                                  {"status", mlflow_status(status)},
                                  {"end_time", event.value("unix_ms", unix_ms_now())}});
  }

  MlflowOptions options_;
  TrackerContext context_;
  RunStart run_;
  std::optional<MlflowClient> client_;  // made on the sender thread: its errors are the run's
  std::string experiment_id_, run_id_, artifact_uri_;
  bool params_sent_ = false;
  std::map<std::string, int64_t> logged_through_;  // record kind -> last step the run has
  bool replaying_ = false;                         // `runner track`
  bool warned_store_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<json> queue_;
  bool closing_ = false;
  std::thread worker_;
  bool off_ = false;  // the sender's own: set and read on its thread
  std::string off_reason_;
};

json mlflow_schema() {
  const json optional_text = {{"oneOf", {{{"type", "string"}}, {{"type", "null"}}}}};
  json uri = optional_text, experiment = optional_text, run_name = optional_text;
  uri["default"] = nullptr;
  uri["description"] =
      "The tracking server's URL (http://host:5000); null: the environment variable "
      "MLFLOW_TRACKING_URI. Credentials come from MLFLOW_TRACKING_TOKEN or "
      "MLFLOW_TRACKING_USERNAME/PASSWORD.";
  experiment["default"] = nullptr;
  experiment["description"] =
      "The MLflow experiment, created when absent; null: the "
      "experiment's name.";
  run_name["default"] = nullptr;
  run_name["description"] =
      "The MLflow run's name; null: the run folder's name (a sweep "
      "point's id).";
  return {{"type", "object"},
          {"additionalProperties", false},
          {"properties",
           {{"tracking_uri", uri},
            {"experiment", experiment},
            {"run_name", run_name},
            {"tags",
             {{"type", "object"},
              {"additionalProperties", {{"type", "string"}}},
              {"default", json::object()},
              {"description", "Tags set on the MLflow run, beside runner's own (runner.*)."}}},
            {"artifacts",
             {{"type", "array"},
              {"items", {{"type", "string"}}},
              {"default", {"config.yaml", "summary.json", "report.html"}},
              {"description",
               "Files of the run folder sent as artifacts at the end (add "
               "checkpoints/best.pt for the weights), through the server's artifact proxy."}}},
            {"log_params",
             {{"type", "boolean"},
              {"default", true},
              {"description", "Send the resolved config as the run's params."}}},
            {"timeout_s",
             {{"type", "number"},
              {"exclusiveMinimum", 0},
              {"default", 10},
              {"description", "Seconds one request may take."}}},
            {"retries",
             {{"type", "integer"},
              {"minimum", 0},
              {"default", 4},
              {"description",
               "Tries after a failed request (backoff 0.5, 1, 2, 4 s) before the tracker is off "
               "for the run and keeps the rest in RUN/trackers/mlflow.pending.jsonl."}}}}}};
}

}  // namespace

void register_mlflow(Registry<TrackerFactory>& registry) {
  registry.add(
      "mlflow",
      [](const json& params, const TrackerContext& context) -> std::unique_ptr<Tracker> {
        return std::make_unique<MlflowTracker>(mlflow_options(params), context);
      },
      mlflow_schema(),
      "An MLflow tracking server: params, metrics, artifacts and status of each run");
}

}  // namespace runner::trackers
