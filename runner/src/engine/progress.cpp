#include "engine/progress.hpp"

#include <cmath>
#include <cstdio>

namespace runner::engine {

Progress::Progress(bool enabled, bool terminal, int64_t line_every)
    : enabled_(enabled), terminal_(terminal), line_every_(line_every > 0 ? line_every : 50) {}

void Progress::start(const std::string& label, int64_t total) {
  label_ = label;
  total_ = total;
  last_line_ = -1;
  start_ = std::chrono::steady_clock::now();
}

void Progress::update(int64_t done, double images_per_s, double loss) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 ? elapsed / done * (total_ - done) : 0.0;
  char loss_text[32] = "";
  if (!std::isnan(loss)) std::snprintf(loss_text, sizeof loss_text, " loss %.4f", loss);
  if (terminal_) {
    const int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : 0;
    std::string bar(filled, '#');
    bar += std::string(width - filled, '.');
    std::printf("\r%s [%s] %lld/%lld %.0f img/s ETA %.0fs%s   ", label_.c_str(), bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(total_), images_per_s, eta,
                loss_text);
    std::fflush(stdout);
  } else if (done == total_ || done / line_every_ != last_line_ / line_every_ || last_line_ < 0) {
    if (done % line_every_ != 0 && done != total_) return;
    last_line_ = done;
    std::printf("%s %lld/%lld %.0f img/s ETA %.0fs%s\n", label_.c_str(),
                static_cast<long long>(done), static_cast<long long>(total_), images_per_s, eta,
                loss_text);
    std::fflush(stdout);
  }
}

void Progress::finish() {
  if (enabled_ && terminal_) {
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace runner::engine
