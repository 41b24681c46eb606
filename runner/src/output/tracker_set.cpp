#include "output/tracker_set.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "output/run_recorder.hpp"

namespace runner::output {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TrackerSet::TrackerSet(std::vector<TrackerEntry> entries, trackers::RunStart start,
                       std::string predictions_file)
    : entries_(std::move(entries)),
      start_(std::move(start)),
      predictions_file_(std::move(predictions_file)) {}

template <class Call>
void TrackerSet::guarded(TrackerEntry& entry, const char* what, Call&& call) {
  if (!entry.tracker) return;
  try {
    call(*entry.tracker);
  } catch (const std::exception& e) {
    spdlog::warn("tracker '{}' ({}) is off for the rest of this run: its {} failed: {}", entry.name,
                 entry.key_path, what, e.what());
    entry.tracker.reset();
  }
}

void TrackerSet::on_start(std::optional<int64_t> resumed_at) {
  for (auto& entry : entries_) {
    trackers::RunStart start = start_;
    start.resumed_at = resumed_at;
    guarded(entry, "start", [&](trackers::Tracker& t) { t.start(start); });
  }
}

void TrackerSet::log(trackers::Record record) {
  record.unix_ms = unix_ms_now();
  for (auto& entry : entries_) guarded(entry, "log", [&](trackers::Tracker& t) { t.log(record); });
}

void TrackerSet::on_window(const WindowRecord& r) {
  log({"step", r.step, r.epoch, 0, window_values(r)});
}

void TrackerSet::on_epoch(const EpochRecord& r) {
  log({"epoch", r.step, r.epoch, 0, epoch_values(r)});
}

void TrackerSet::on_best(const BestRecord& r) {
  log({"best", r.step, r.epoch, 0, {{"epoch", r.epoch}, {"metric", r.metric}, {"value", r.value}}});
}

void TrackerSet::on_stop(const StopRecord& r) {
  if (!end_) end_ = trackers::RunEnd{r.status, r.signal};
}

void TrackerSet::on_end(const RunEnd& end) {
  if (end_) return;
  std::string reason;
  if (end.fields.contains("error") && end.fields.at("error").is_string())
    reason = end.fields.at("error").get<std::string>();
  end_ = trackers::RunEnd{end.status, reason};
}

// Once per run: a requeue that SLURM refuses reports a second stop, which changes nothing here.
void TrackerSet::on_files_final() {
  if (finished_ || !end_) return;
  finished_ = true;
  const auto files = offered_files(start_.run_dir, predictions_file_);
  for (auto& entry : entries_) {
    for (const auto& file : files)
      guarded(entry, "artifact", [&](trackers::Tracker& t) { t.artifact(file); });
    guarded(entry, "finish", [&](trackers::Tracker& t) { t.finish(*end_); });
  }
}

size_t TrackerSet::active() const {
  size_t n = 0;
  for (const auto& entry : entries_) n += entry.tracker ? 1 : 0;
  return n;
}

std::vector<std::string> offered_files(const std::string& run_dir,
                                       const std::string& predictions_file) {
  std::vector<std::string> names = {"config.yaml",   "summary.json", "report.html",
                                    "metrics.jsonl", "metrics.csv",  "batch.png"};
  if (!predictions_file.empty()) names.push_back(predictions_file);
  names.insert(names.end(), {"checkpoints/best.pt", "checkpoints/last.pt"});
  std::vector<std::string> present;
  std::error_code error;
  for (const auto& name : names)
    if (fs::is_regular_file(fs::path(run_dir) / name, error)) present.push_back(name);
  return present;
}

}  // namespace runner::output
