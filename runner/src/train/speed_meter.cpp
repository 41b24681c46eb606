#include "train/speed_meter.hpp"

#include "util/seconds_since.hpp"

namespace runner::train {

void SpeedMeter::start_pass(double loader_wait) {
  batches_ = counted_images_ = window_images_ = 0;
  steady_start_ = window_start_ = Clock::now();
  window_wait_start_ = loader_wait;
}

void SpeedMeter::batch_done(int64_t images) {
  ++batches_;
  if (batches_ == warmup_batches_) {
    steady_start_ = Clock::now();
    counted_images_ = 0;
  } else {
    counted_images_ += images;
  }
  window_images_ += images;
}

double SpeedMeter::images_per_s() const {
  const double elapsed = util::seconds_since(steady_start_);
  return elapsed > 0 && batches_ > warmup_batches_ ? counted_images_ / elapsed : 0.0;
}

std::optional<double> SpeedMeter::pass_images_per_s() const {
  const double elapsed = util::seconds_since(steady_start_);
  if (batches_ <= warmup_batches_ || elapsed <= 0) return std::nullopt;
  return counted_images_ / elapsed;
}

SpeedMeter::Window SpeedMeter::take_window(double loader_wait) {
  const double seconds = util::seconds_since(window_start_);
  Window window;
  if (seconds > 0) {
    window.images_per_s = window_images_ / seconds;
    window.data_wait = (loader_wait - window_wait_start_) / seconds;
  }
  window_start_ = Clock::now();
  window_wait_start_ = loader_wait;
  window_images_ = 0;
  return window;
}

}  // namespace runner::train
