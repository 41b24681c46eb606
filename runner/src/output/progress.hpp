#pragma once
// Progress on the main process: a bar redrawn in place when stdout is a terminal, plain lines
// every few steps when it is not (logs, CI). Other ranks print nothing.

#include <chrono>
#include <string>

#include "output/run_observer.hpp"

namespace runner::output {

class Progress {
 public:
  /// `enabled` false (non-main ranks) makes every call a no-op. Without a terminal a line is
  /// printed every `line_every` batches and whenever `max_silence_seconds` passed without one.
  Progress(bool enabled, bool terminal, int64_t line_every, double max_silence_seconds = 30);

  /// Starts a phase ("epoch 1/5", "validate") of `total` batches; `later` batches of the same
  /// speed follow in the run (the epochs after this one), for the whole run's ETA. Nothing is
  /// shown before `quiet_seconds` have passed (short evaluation passes stay silent).
  void start(const std::string& label, int64_t total, int64_t later = 0, double quiet_seconds = 0);
  /// Batch `done` of the phase finished; `images_per_s` and `loss` (NaN: not shown) so far.
  void update(int64_t done, double images_per_s, double loss);
  /// Ends the phase (a final newline for the bar).
  void finish();

 private:
  bool enabled_, terminal_;
  int64_t line_every_, total_ = 0, last_line_ = -1, later_ = 0, first_done_ = -1;
  double quiet_seconds_ = 0, max_silence_seconds_;
  bool shown_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_print_;
};

/// The console's line for an epoch: "epoch 2/5: train loss 0.4123, val accuracy 0.8812, val
/// loss 0.3310, 1234 img/s, 12.3 s".
std::string epoch_line(const EpochRecord& record);

}  // namespace runner::output
