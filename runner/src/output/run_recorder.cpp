#include "output/run_recorder.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>

#include "output/best_evaluation.hpp"
#include "output/run_report.hpp"
#include "output/run_summary.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {

using nlohmann::json;

RunRecorder::RunRecorder(std::filesystem::path run_dir, RecorderOptions options)
    : run_dir_(std::move(run_dir)),
      options_(std::move(options)),
      metrics_(run_dir_.string(), options_.metric_names, options_.extra_columns) {}

void RunRecorder::on_start(std::optional<int64_t> resumed_at) {
  if (resumed_at) metrics_.drop_records_after(*resumed_at);  // the steps it will write again
}

void RunRecorder::on_window(const WindowRecord& r) {
  metrics_.write("step", r.step, window_values(r));
}

void RunRecorder::on_epoch(const EpochRecord& r) {
  metrics_.write("epoch", r.step, epoch_values(r));
  running_status_ =
      "running: epoch " + std::to_string(r.epoch) + " of " + std::to_string(r.epochs) + " done";
  // A file that cannot be written fails the run (a full disk): it would not record the rest.
  write_run_report(run_dir_, running_status_);
}

void RunRecorder::on_profile(const ProfileReport& report) {
  const std::filesystem::path folder = run_dir_ / "profile";
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw Error(util::write_failure(folder.string(), error.value()));
  // Whole or not at all: Kineto writes beside and renames (save_trace's contract).
  report.save_trace((folder / "trace.json").string());
  util::write_file_atomically((folder / "summary.md").string(), profile_markdown(report.summary));
}

void RunRecorder::on_best(const BestRecord& r) {
  if (!r.logits.defined() || r.logits.dim() != 2) return;
  // The report's per-class table, confusion matrix and most confident mistakes (multi-label:
  // the per-class table with each class's average precision).
  json record = r.targets.defined() ? multilabel_summary(r.logits, r.targets, r.class_names)
                                    : confusion_summary(r.logits, r.labels, r.class_names);
  record["epoch"] = r.epoch;
  record["metric"] = r.metric;
  record["value"] = r.value;
  metrics_.write("best", r.step, record);
  if (!r.validation || r.targets.defined()) return;
  const json examples =
      confident_mistakes(r.logits, r.labels, *r.validation, r.class_names, 24, r.indices);
  util::write_file_atomically((run_dir_ / "best_examples.json").string(), examples.dump() + "\n");
  write_run_report(run_dir_, running_status_);  // the epoch's page again, with its best record
}

void RunRecorder::on_stop(const StopRecord&) {
  write_report(run_status_text(read_summary(run_dir_)));
}

void RunRecorder::on_end(const RunEnd&) { write_report(run_status_text(read_summary(run_dir_))); }

// The page of a run that has ended, as summary.json (written first) says: a failure to write
// it is said, and leaves the run's status as summary.json has it.
void RunRecorder::write_report(const std::string& status) const {
  try {
    write_run_report(run_dir_, status);
  } catch (const std::exception& e) {
    spdlog::warn("could not write report.html: {}", e.what());
  }
}

json window_values(const WindowRecord& r) {
  return {{"epoch", r.epoch},
          {"loss", r.loss},
          {"lr", r.lr},
          {"scale", r.scale},
          {"images_per_s", r.images_per_s},
          {"data_wait", r.data_wait},
          {"peak_rss_mib", r.peak_rss_mib}};
}

json epoch_values(const EpochRecord& r) {
  json record = {{"epoch", r.epoch},
                 {"loss", r.loss},
                 {"images_per_s", r.images_per_s ? json(*r.images_per_s) : json(nullptr)},
                 {"epoch_seconds", r.epoch_seconds},
                 {"peak_rss_mib", r.peak_rss_mib},
                 {"peak_gpu_mib", r.peak_gpu_mib}};
  if (r.partial) record["partial_epoch"] = true;
  if (r.skipped_train) record["skipped_train"] = *r.skipped_train;
  if (r.skipped_val) record["skipped_val"] = *r.skipped_val;
  for (const auto& [name, value] : r.validation) record[validation_key(name)] = value;
  return record;
}

}  // namespace runner::output
