#include "output/summary_writer.hpp"

#include "util/atomic_file.hpp"

namespace runner::output {

SummaryWriter::SummaryWriter(std::filesystem::path run_dir, nlohmann::json base)
    : run_dir_(std::move(run_dir)), summary_(std::move(base)) {}

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
  if (fields.is_object()) summary_.update(fields);
  summary_["status"] = status;
  summary_["optimizer_steps"] = optimizer_steps;
  summary_["seconds"] = seconds;  // all segments of a resumed run
  util::write_file_atomically((run_dir_ / "summary.json").string(), summary_.dump(2) + "\n");
}

}  // namespace runner::output
