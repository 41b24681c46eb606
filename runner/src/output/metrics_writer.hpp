#pragma once
// The run's metric records: metrics.jsonl (one JSON object per record) and metrics.csv (one row
// per record, a fixed set of columns), the run folder's own history (the curves, the report,
// sweeps and `runner track` read it). Main process only.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/atomic_file.hpp"

namespace runner::output {

class MetricsWriter {
 public:
  /// Opens (appending, for resumed runs) the files in `run_dir`. `metric_names` fixes the CSV's
  /// validation columns.
  /// `extra_columns` follow them (data.on_bad_image skip's skipped_train, skipped_val).
  MetricsWriter(const std::string& run_dir, std::vector<std::string> metric_names,
                const std::vector<std::string>& extra_columns = {});

  /// Writes one record: `kind` "step", "epoch" or "best", the optimizer step, and named
  /// values. Throws runner::Error (util::write_failure) when a file
  /// cannot be written.
  void write(const std::string& kind, int64_t step, const nlohmann::json& values);

  /// A resume from a checkpoint taken at optimizer step `step`: drops the records written after
  /// it (the steps a stopped run went on to, which the resumed run writes again), so that
  /// readers see each step once.
  void drop_records_after(int64_t step);

 private:
  std::string run_dir_;
  util::AppendFile jsonl_, csv_;
  std::vector<std::string> columns_;
};

/// An epoch record's key for validation metric `metric`: val_<metric>, and ema_val_<m> for
/// train.ema's ema_<m>.
std::string validation_key(const std::string& metric);

/// Peak resident memory of this process so far, in MiB.
double peak_rss_mib();

}  // namespace runner::output
