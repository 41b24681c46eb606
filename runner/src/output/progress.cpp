#include "output/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace runner::output {

Progress::Progress(bool enabled, bool terminal, int64_t line_every, double max_silence_seconds)
    : enabled_(enabled),
      terminal_(terminal),
      line_every_(line_every > 0 ? line_every : 50),
      max_silence_seconds_(max_silence_seconds) {}

namespace {

// "42s", "3m05s", "2h01m"
std::string duration_text(double seconds) {
  char text[32];
  const long long s = std::llround(std::max(0.0, seconds));
  if (s < 60)
    std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  return text;
}

}  // namespace

void Progress::start(const std::string& label, int64_t total, int64_t later, double quiet_seconds) {
  label_ = label;
  total_ = total;
  later_ = later;
  quiet_seconds_ = quiet_seconds;
  shown_ = false;
  last_line_ = -1;
  first_done_ = -1;
  start_ = last_print_ = std::chrono::steady_clock::now();
}

void Progress::update(int64_t done, double images_per_s, double loss) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < quiet_seconds_ && done != total_) return;
  if (quiet_seconds_ > 0 && !shown_ && done == total_ && elapsed < quiet_seconds_) return;
  shown_ = true;
  // The rate over the batches of this run (a resumed epoch starts part-way).
  if (first_done_ < 0) first_done_ = done - 1;
  const double per_batch =
      done > first_done_ ? elapsed / static_cast<double>(done - first_done_) : 0;
  const double eta = per_batch * static_cast<double>(total_ - done);
  std::string eta_text = "ETA " + duration_text(eta);
  if (later_ > 0)
    eta_text += ", run " + duration_text(eta + per_batch * static_cast<double>(later_));
  char loss_text[32] = "";
  if (!std::isnan(loss)) std::snprintf(loss_text, sizeof loss_text, " loss %.4f", loss);
  char speed_text[32] = "";
  if (images_per_s > 0) std::snprintf(speed_text, sizeof speed_text, " %.0f img/s", images_per_s);
  if (terminal_) {
    const int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : 0;
    std::string bar(filled, '#');
    bar += std::string(width - filled, '.');
    std::printf("\r%s [%s] %lld/%lld%s %s%s   ", label_.c_str(), bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(total_), speed_text,
                eta_text.c_str(), loss_text);
    std::fflush(stdout);
  } else {
    // Every line_every batches, and at least every max_silence seconds (slow steps: a log that
    // says nothing for minutes looks like a hang).
    const auto now = std::chrono::steady_clock::now();
    const bool quiet_too_long =
        std::chrono::duration<double>(now - last_print_).count() >= max_silence_seconds_;
    if (done == last_line_ || (done != total_ && done % line_every_ != 0 && !quiet_too_long))
      return;
    last_line_ = done;
    last_print_ = now;
    std::printf("%s %lld/%lld%s %s%s\n", label_.c_str(), static_cast<long long>(done),
                static_cast<long long>(total_), speed_text, eta_text.c_str(), loss_text);
    std::fflush(stdout);
  }
}

void Progress::finish() {
  if (enabled_ && terminal_ && shown_) {
    std::printf("\n");
    std::fflush(stdout);
  }
}

std::string epoch_line(const EpochRecord& r) {
  std::string line = "epoch " + std::to_string(r.epoch) + "/" + std::to_string(r.epochs) +
                     ": train loss " + fmt::format("{:.4f}", r.loss);
  for (const auto& [name, value] : r.validation)
    if (name.rfind("ema_", 0) != 0) line += fmt::format(", val {} {:.4f}", name, value);
  for (const auto& [name, value] : r.validation)  // train.ema's average, after the model's
    if (name.rfind("ema_", 0) == 0)
      line += fmt::format(", ema val {} {:.4f}", name.substr(4), value);
  line += r.images_per_s ? fmt::format(", {:.0f} img/s", *r.images_per_s) : ", n/a img/s";
  return line + fmt::format(", {:.1f} s", r.epoch_seconds);
}

}  // namespace runner::output
