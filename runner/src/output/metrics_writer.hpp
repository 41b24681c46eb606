#pragma once
// The run's metric records: metrics.jsonl (one JSON object per record), metrics.csv (one row per
// record, a fixed set of columns) and TensorBoard event files. Main process only.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/atomic_file.hpp"

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

  /// Writes one record: `kind` "step" or "epoch", the optimizer step, and named values (to
  /// TensorBoard under tensorboard_tag). Throws runner::Error (util::write_failure) when a file
  /// cannot be written.
  void write(const std::string& kind, int64_t step, const nlohmann::json& values);

  /// A resume from a checkpoint taken at optimizer step `step`: drops the records written after
  /// it (the steps a stopped run went on to, which the resumed run writes again), so that
  /// readers see each step once. TensorBoard's event files keep theirs (it shows the newest).
  void drop_records_after(int64_t step);

 private:
  std::string run_dir_;
  util::AppendFile jsonl_, csv_;
  std::vector<std::string> columns_;
  std::unique_ptr<output::TfEventsWriter> events_;
};

/// The TensorBoard tag of a record's value: a log window's under train/ (its memory under
/// system/), an epoch's validation metric val_<m> as val/<m>, its training figures as
/// train/epoch_loss, train/epoch_images_per_s, train/epoch_seconds; "" for none (the epoch).
std::string tensorboard_tag(const std::string& kind, const std::string& key);

/// An epoch record's key for validation metric `metric`: val_<metric>, and ema_val_<m> for
/// train.ema's ema_<m>.
std::string validation_key(const std::string& metric);

/// Peak resident memory of this process so far, in MiB.
double peak_rss_mib();

}  // namespace runner::output
