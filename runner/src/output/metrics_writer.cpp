#include "output/metrics_writer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "output/run_files.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {

namespace fs = std::filesystem;

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

std::string validation_key(const std::string& metric) {
  if (metric.rfind("ema_", 0) == 0) return "ema_val_" + metric.substr(4);
  return "val_" + metric;
}

MetricsWriter::MetricsWriter(const std::string& run_dir, std::vector<std::string> metric_names,
                             const std::vector<std::string>& extra_columns) {
  columns_ = {"kind",  "epoch",        "step",      "loss",         "lr",
              "scale", "images_per_s", "data_wait", "peak_rss_mib", "val_loss"};
  for (const auto& m : metric_names)
    if (m != "loss") columns_.push_back(validation_key(m));
  columns_.insert(columns_.end(), extra_columns.begin(), extra_columns.end());
  run_dir_ = run_dir;
  const fs::path dir(run_dir);
  const bool fresh_csv = !fs::exists(dir / "metrics.csv");
  jsonl_ = util::AppendFile((dir / "metrics.jsonl").string());
  csv_ = util::AppendFile((dir / "metrics.csv").string());
  if (fresh_csv) {
    std::string header;
    for (size_t i = 0; i < columns_.size(); ++i) header += (i ? "," : "") + columns_[i];
    csv_.append(header + "\n");
  }
}

void MetricsWriter::drop_records_after(int64_t step) {
  const fs::path dir(run_dir_);
  jsonl_.close();
  csv_.close();
  // metrics.jsonl: keep the records of steps up to `step` (a line cut by a crash goes too).
  std::string kept;
  for (const nlohmann::json& record : read_records(dir / "metrics.jsonl"))
    if (!record.is_object() || record.value("step", int64_t{0}) <= step)
      kept += record.dump() + "\n";
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
  jsonl_ = util::AppendFile((dir / "metrics.jsonl").string());
  csv_ = util::AppendFile((dir / "metrics.csv").string());
}

void MetricsWriter::write(const std::string& kind, int64_t step, const nlohmann::json& values) {
  nlohmann::json record = values;
  record["kind"] = kind;
  record["step"] = step;
  jsonl_.append(record.dump() + "\n");
  if (kind != "step" && kind != "epoch") return;  // e.g. "best": a matrix, for the report only
  std::string row;
  for (size_t i = 0; i < columns_.size(); ++i) {
    row += i ? "," : "";
    if (record.contains(columns_[i]) && !record[columns_[i]].is_null()) {
      const auto& v = record[columns_[i]];
      row += v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  csv_.append(row + "\n");
}

}  // namespace runner::output
