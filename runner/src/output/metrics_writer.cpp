#include "output/metrics_writer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "output/tfevents_writer.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

MetricsWriter::MetricsWriter(const std::string& run_dir, std::vector<std::string> metric_names,
                             bool tensorboard) {
  namespace fs = std::filesystem;
  columns_ = {"kind",  "epoch",        "step",      "loss",         "lr",
              "scale", "images_per_s", "data_wait", "peak_rss_mib", "val_loss"};
  for (const auto& m : metric_names)
    if (m != "loss") columns_.push_back("val_" + m);
  run_dir_ = run_dir;
  const fs::path dir(run_dir);
  const bool fresh_csv = !fs::exists(dir / "metrics.csv");
  jsonl_.open(dir / "metrics.jsonl", std::ios::app);
  csv_.open(dir / "metrics.csv", std::ios::app);
  if (fresh_csv) {
    for (size_t i = 0; i < columns_.size(); ++i) csv_ << (i ? "," : "") << columns_[i];
    csv_ << "\n";
  }
  if (tensorboard) events_ = std::make_unique<output::TfEventsWriter>(dir / "tensorboard");
}

MetricsWriter::~MetricsWriter() = default;

void MetricsWriter::drop_records_after(int64_t step) {
  namespace fs = std::filesystem;
  const fs::path dir(run_dir_);
  jsonl_.close();
  csv_.close();
  // metrics.jsonl: keep the records of steps up to `step` (each line is one JSON object).
  std::string kept;
  {
    std::ifstream in(dir / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_object() && record.value("step", int64_t{0}) > step) continue;
      kept += line + "\n";
    }
  }
  util::write_file_atomically((dir / "metrics.jsonl").string(), kept);
  // metrics.csv: the header, then the rows whose step column is up to `step`.
  kept.clear();
  {
    std::ifstream in(dir / "metrics.csv");
    const size_t step_column =
        static_cast<size_t>(std::find(columns_.begin(), columns_.end(), "step") - columns_.begin());
    bool header = true;
    for (std::string line; std::getline(in, line); header = false) {
      if (!header) {
        std::stringstream fields(line);
        std::string field;
        for (size_t i = 0; i <= step_column && std::getline(fields, field, ','); ++i) {
        }
        if (!field.empty() && std::stoll(field) > step) continue;
      }
      kept += line + "\n";
    }
  }
  util::write_file_atomically((dir / "metrics.csv").string(), kept);
  jsonl_.open(dir / "metrics.jsonl", std::ios::app);
  csv_.open(dir / "metrics.csv", std::ios::app);
}

void MetricsWriter::write(const std::string& kind, int64_t step, const nlohmann::json& values) {
  nlohmann::json record = values;
  record["kind"] = kind;
  record["step"] = step;
  jsonl_ << record.dump() << "\n";
  jsonl_.flush();
  if (kind != "step" && kind != "epoch") return;  // e.g. "best": a matrix, for the report only
  for (size_t i = 0; i < columns_.size(); ++i) {
    csv_ << (i ? "," : "");
    if (record.contains(columns_[i]) && !record[columns_[i]].is_null()) {
      const auto& v = record[columns_[i]];
      csv_ << (v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  csv_ << "\n";
  csv_.flush();
  if (events_) {
    for (auto it = values.begin(); it != values.end(); ++it) {
      if (!it.value().is_number()) continue;
      events_->add_scalar((kind == "step" ? "train/" : "val/") + it.key(), it.value().get<double>(),
                          step);
    }
    events_->flush();
  }
}

}  // namespace runner::output
