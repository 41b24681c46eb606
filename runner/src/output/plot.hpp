#pragma once
// Line plots to PNG drawn with OpenCV: a row of panels, each with a title, ticked and labelled
// axes, named series and a legend. Used for a sweep's summary.png.

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace runner::output {

/// One named line; points with a non-finite x or y (or x <= 0 on a log axis) break the line.
struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
};

struct PlotPanel {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  bool log_x = false;  ///< ticks at powers of 2 (spans up to 2^10), else powers of 10
  bool log_y = false;
};

struct PlotOptions {
  std::string title;      ///< above all panels; empty: none
  int panel_width = 560;  ///< pixels per panel
  int panel_height = 420;
};

/// Draws `panels` left to right into one PNG at `png` (parent folders created). Throws
/// runner::Error when the file cannot be written.
void save_plot(const std::filesystem::path& png, const std::vector<PlotPanel>& panels,
               const PlotOptions& options = {});

/// One finished sweep point, for the summary figure.
struct SweepPoint {
  int processes = 1;
  std::string precision;    ///< fp32, fp16, bf16
  double global_batch = 0;  ///< processes x per-process batch x accumulation
  double images_per_s = 0;  ///< training throughput, steady state
  double metric = 0;        ///< final validation metric
};

/// The sweep's summary: throughput and `metric_name` against the global batch (log axis), one
/// line per (processes, precision), points in increasing batch order.
void save_sweep_summary(const std::filesystem::path& png, const std::vector<SweepPoint>& points,
                        const std::string& metric_name, const std::string& title);

/// The colour (B, G, R) of the `index`-th series of a panel (matplotlib's tab10 cycle).
std::array<uint8_t, 3> series_colour_bgr(size_t index);

}  // namespace runner::output
