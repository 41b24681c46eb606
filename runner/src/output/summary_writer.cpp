#include "output/summary_writer.hpp"

#include "util/atomic_file.hpp"

namespace runner::output {

SummaryWriter::SummaryWriter(std::filesystem::path run_dir, nlohmann::json base)
    : run_dir_(std::move(run_dir)), summary_(std::move(base)) {}

void SummaryWriter::on_training(const TrainingReport& r) {
  using nlohmann::json;
  json fields = {
      {"best",
       {{"metric", r.best_metric},
        {"mode", r.best_mode},
        {"value", r.best_value ? json(*r.best_value) : json(nullptr)}}},
      {"train_images_per_s", r.train_images_per_s ? json(*r.train_images_per_s) : json(nullptr)},
      {"first_step_unix_time", r.first_step_unix_time},
      {"mean_epoch_seconds", r.mean_epoch_seconds},
      // data.num_workers, data.prefetch_batches and data.device as run.
      {"train_loader",
       {{"worker_threads", r.loader_worker_threads},
        {"prefetch_batches", r.loader_prefetch_batches},
        {"batches_made_on", r.batches_made_on}}},
      {"samples", {{"train", r.samples_train}, {"val", r.samples_val}}}};
  if (r.best_value) fields["best"]["epoch"] = r.best_epoch;
  if (r.early_stopped)
    fields["early_stopped"] = {{"epoch", r.early_stopped->epoch},
                               {"reason", r.early_stopped->reason}};
  if (r.pruned) fields["pruned"] = {{"epoch", r.pruned->epoch}, {"reason", r.pruned->reason}};
  if (r.skipped_train_val)
    fields["skipped_images"] = {{"train", r.skipped_train_val->first},
                                {"val", r.skipped_train_val->second}};
  if (const auto& sync = r.gradient_sync)  // train.bucket_cap_mb, ...
    fields["gradient_sync"] = {{"buckets", sync->buckets},
                               {"find_unused_parameters", sync->find_unused_parameters},
                               {"transport", sync->transport},
                               {"optimizer_step", sync->optimizer_step}};
  summary_.update(fields, /*merge_objects=*/true);
}

void SummaryWriter::on_profile(const ProfileReport& report) {
  summary_["profile"] = profile_json(report.summary);
}

void SummaryWriter::on_stop(const StopRecord& record) {
  nlohmann::json fields = record.fields;
  fields.update({{"signal", record.signal},
                 {"stopped_at", record.stopped_at},
                 {"resume_command", record.resume_command}});
  write(record.status, fields, record.optimizer_steps, record.seconds);
}

void SummaryWriter::on_end(const RunEnd& end) {
  write(end.status, end.fields, end.optimizer_steps, end.seconds);
}

void SummaryWriter::write(const std::string& status, const nlohmann::json& fields,
                          int64_t optimizer_steps, double seconds) {
  if (fields.is_object()) summary_.update(fields, /*merge_objects=*/true);
  summary_["status"] = status;
  summary_["optimizer_steps"] = optimizer_steps;
  summary_["seconds"] = seconds;  // all segments of a resumed run
  util::write_file_atomically((run_dir_ / "summary.json").string(), summary_.dump(2) + "\n");
}

}  // namespace runner::output
