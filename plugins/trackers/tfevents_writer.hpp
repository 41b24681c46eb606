#pragma once
// TensorBoard event files without TensorFlow: TFRecord framing around hand-encoded Event
// protos, so `tensorboard --logdir runs` shows a run's scalar curves.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace runner::trackers {

/// CRC-32C (Castagnoli) of `size` bytes, as TFRecord uses.
uint32_t crc32c(const void* data, size_t size);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t size);

class TfEventsWriter {
 public:
  /// Creates `dir` if needed and a new file events.out.tfevents.<unix seconds>.<host> in it
  /// (".N" appended if that name exists), starting with the file_version "brain.Event:2"
  /// event. Throws runner::Error when the file cannot be written.
  explicit TfEventsWriter(const std::filesystem::path& dir);
  /// Writes what is left (a failure then is not reported: flush() reports it).
  ~TfEventsWriter();
  TfEventsWriter(const TfEventsWriter&) = delete;
  TfEventsWriter& operator=(const TfEventsWriter&) = delete;

  /// Adds one scalar point; `wall_time` in seconds since the epoch (< 0: now).
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = -1);
  /// Writes what was added (a reader sees it now; TensorBoard polls the file). Throws
  /// runner::Error naming the file when it cannot be written.
  void flush();

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& data);

  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;  ///< records added since the last flush
};

}  // namespace runner::trackers
