#pragma once
// The run's metric records: metrics.jsonl (one JSON object per record), metrics.csv (one row per
// record, a fixed set of columns) and TensorBoard event files. Main process only.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::output {
class TfEventsWriter;
}

namespace runner::output {

class MetricsWriter {
 public:
  /// Opens (appending, for resumed runs) the files in `run_dir`. `metric_names` fixes the CSV's
  /// validation columns.
  MetricsWriter(const std::string& run_dir, std::vector<std::string> metric_names,
                bool tensorboard);
  ~MetricsWriter();

  /// Writes one record: `kind` "step" or "epoch", the optimizer step, and named values.
  void write(const std::string& kind, int64_t step, const nlohmann::json& values);

  /// A resume from a checkpoint taken at optimizer step `step`: drops the records written after
  /// it (the steps a stopped run went on to, which the resumed run writes again), so that
  /// readers see each step once. TensorBoard's event files keep theirs (it shows the newest).
  void drop_records_after(int64_t step);

 private:
  std::string run_dir_;
  std::ofstream jsonl_, csv_;
  std::vector<std::string> columns_;
  std::unique_ptr<output::TfEventsWriter> events_;
};

/// Peak resident memory of this process so far, in MiB.
double peak_rss_mib();

}  // namespace runner::output
