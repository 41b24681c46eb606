#pragma once
// Training speed as a run reports it: the steady-state images/s of an epoch pass (its first
// batches are warm-up and not counted), and each log window's images/s with the share of its
// time spent waiting for the loader. Host clocks only.

#include <chrono>
#include <cstdint>
#include <optional>

namespace runner::train {

class SpeedMeter {
 public:
  /// `warmup_batches`: the batches that begin a pass and are not counted.
  explicit SpeedMeter(int64_t warmup_batches = 3) : warmup_batches_(warmup_batches) {}

  /// A pass begins; `loader_wait`: the loader's waiting so far, in seconds.
  void start_pass(double loader_wait);
  /// A batch of `images` (over every rank) is done.
  void batch_done(int64_t images);
  /// The pass's steady-state images/s so far; 0 within its warm-up.
  double images_per_s() const;
  /// The same at the pass's end; nullopt when the pass was too short to measure.
  std::optional<double> pass_images_per_s() const;

  struct Window {
    double images_per_s = 0;
    double data_wait = 0;  ///< share of the window's time spent waiting for batches
  };
  /// The log window since the last take (or the pass's start); the next one begins.
  Window take_window(double loader_wait);

 private:
  using Clock = std::chrono::steady_clock;
  int64_t warmup_batches_;
  int64_t batches_ = 0, counted_images_ = 0, window_images_ = 0;
  Clock::time_point steady_start_, window_start_;
  double window_wait_start_ = 0;
};

}  // namespace runner::train
