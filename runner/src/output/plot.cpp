#include "output/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "output/html_page.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {

namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
const cv::Scalar kBlack(0, 0, 0), kGrey(110, 110, 110), kGrid(228, 228, 228), kWhite(255, 255, 255);

/// One axis: data range, scale and tick positions (in data units).
struct Axis {
  bool log = false;
  double low = 0, high = 1;   // in transformed units (log10 when log)
  std::vector<double> ticks;  // data units

  double transform(double v) const { return log ? std::log10(v) : v; }
  bool usable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  /// Position of `v` in [0, 1] along the axis.
  double fraction(double v) const { return (transform(v) - low) / (high - low); }
};

double nice_step(double span, int target_ticks) {
  const double raw = span / target_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * magnitude) return m * magnitude;
  return 10 * magnitude;
}

Axis make_axis(const std::vector<double>& values, bool log, int target_ticks) {
  Axis axis;
  axis.log = log;
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (double v : values) {
    if (!axis.usable(v)) continue;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  if (!std::isfinite(low)) low = log ? 1 : 0, high = log ? 10 : 1;  // no data
  if (log) {
    const bool powers_of_two = high / low <= 1024;
    const double base = powers_of_two ? 2.0 : 10.0;
    const double first = std::floor(std::log(low) / std::log(base) + 1e-9);
    const double last = std::ceil(std::log(high) / std::log(base) - 1e-9);
    for (double e = first; e <= last; ++e) axis.ticks.push_back(std::pow(base, e));
    double tlow = std::log10(low), thigh = std::log10(high);
    if (thigh - tlow < 1e-9) tlow -= 0.15, thigh += 0.15;
    const double pad = (thigh - tlow) * 0.06;
    axis.low = tlow - pad;
    axis.high = thigh + pad;
  } else {
    if (high - low < 1e-12 * std::max(1.0, std::abs(high))) {
      const double half = std::abs(high) > 0 ? std::abs(high) * 0.1 : 0.5;
      low -= half, high += half;
    }
    const double pad = (high - low) * 0.05;
    axis.low = low - pad;
    axis.high = high + pad;
    // Whole-number data (epochs, batch sizes) gets whole-number ticks: no "epoch 1.25".
    const bool whole = std::all_of(values.begin(), values.end(),
                                   [&](double v) { return !axis.usable(v) || v == std::round(v); });
    double step = nice_step(axis.high - axis.low, target_ticks);
    if (whole) step = std::max(step, 1.0);
    for (double t = std::ceil(axis.low / step) * step; t <= axis.high + step * 1e-9; t += step)
      axis.ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  // Keep only ticks inside the drawn range.
  std::vector<double> inside;
  for (double t : axis.ticks)
    if (axis.fraction(t) >= -1e-9 && axis.fraction(t) <= 1 + 1e-9) inside.push_back(t);
  axis.ticks = inside;
  return axis;
}

std::string tick_label(double v, const Axis& axis) {
  char text[32];
  const double a = std::abs(v);
  if (v == 0) return "0";
  if (a >= 1e6 || a < 1e-3) {  // the pages' exponent form (html_page.hpp): 5e-4, 1e+6
    return html::number3(v);
  } else if (axis.log) {
    std::snprintf(text, sizeof(text), "%g", v);
  } else {
    const double step = axis.ticks.size() > 1 ? axis.ticks[1] - axis.ticks[0] : a;
    int decimals = 0;  // enough that every tick (a multiple of step, e.g. 0.25) prints exactly
    while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) -
                                    std::round(step * std::pow(10.0, decimals))) > 1e-6)
      ++decimals;
    std::snprintf(text, sizeof(text), "%.*f", decimals, v);
  }
  return text;
}

cv::Size text_size(const std::string& text, double scale, int thickness = 1) {
  int baseline = 0;
  return cv::getTextSize(text, kFont, scale, thickness, &baseline);
}

void put_text(cv::Mat& image, const std::string& text, cv::Point origin, double scale,
              const cv::Scalar& colour, int thickness = 1) {
  cv::putText(image, text, origin, kFont, scale, colour, thickness, cv::LINE_AA);
}

/// `text` rotated a quarter turn counter-clockwise, centred vertically on `centre_y`.
void put_vertical_text(cv::Mat& image, const std::string& text, int left, int centre_y,
                       double scale) {
  const cv::Size size = text_size(text, scale);
  cv::Mat strip(size.height + 8, size.width + 4, CV_8UC3, kWhite);
  put_text(strip, text, {2, size.height + 2}, scale, kBlack);
  cv::Mat turned;
  cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
  const int top = std::max(0, centre_y - turned.rows / 2);
  cv::Rect where(left, top, turned.cols, std::min(turned.rows, image.rows - top));
  where &= cv::Rect(0, 0, image.cols, image.rows);
  turned(cv::Rect(0, 0, where.width, where.height)).copyTo(image(where));
}

cv::Scalar colour_of(size_t index) {
  const auto bgr = series_colour_bgr(index);
  return cv::Scalar(bgr[0], bgr[1], bgr[2]);
}

void draw_panel(cv::Mat& canvas, const cv::Rect& area, const PlotPanel& panel) {
  // Legend entries laid out below the x label, wrapping to more rows as needed.
  const double legend_scale = 0.45;
  std::vector<cv::Point> legend_at;
  int legend_rows = panel.series.empty() ? 0 : 1;
  {
    int x = 0;
    for (const auto& series : panel.series) {
      const int width = 28 + text_size(series.name, legend_scale).width + 18;
      if (x > 0 && x + width > area.width - 80) x = 0, ++legend_rows;
      legend_at.push_back({x, legend_rows - 1});
      x += width;
    }
  }
  const int legend_height = legend_rows * 20;
  const cv::Rect plot(area.x + 78, area.y + 36, area.width - 78 - 22,
                      area.height - 36 - 58 - legend_height);
  if (plot.width < 40 || plot.height < 40) return;

  std::vector<double> xs, ys;
  for (const auto& series : panel.series) {
    const size_t n = std::min(series.x.size(), series.y.size());
    xs.insert(xs.end(), series.x.begin(), series.x.begin() + n);
    ys.insert(ys.end(), series.y.begin(), series.y.begin() + n);
  }
  const Axis x_axis = make_axis(xs, panel.log_x, std::max(3, plot.width / 90));
  const Axis y_axis = make_axis(ys, panel.log_y, std::max(3, plot.height / 50));
  auto to_pixel = [&](double x, double y) {
    return cv::Point2d(plot.x + x_axis.fraction(x) * plot.width,
                       plot.y + plot.height - y_axis.fraction(y) * plot.height);
  };

  // Title, grid, ticks and labels.
  const cv::Size title_size = text_size(panel.title, 0.6, 2);
  put_text(canvas, panel.title, {area.x + (area.width - title_size.width) / 2, area.y + 24}, 0.6,
           kBlack, 2);
  for (double t : x_axis.ticks) {
    const int px = static_cast<int>(std::lround(to_pixel(t, 1).x));
    cv::line(canvas, {px, plot.y}, {px, plot.y + plot.height}, kGrid, 1);
    cv::line(canvas, {px, plot.y + plot.height}, {px, plot.y + plot.height + 5}, kBlack, 1);
    const std::string label = tick_label(t, x_axis);
    const cv::Size size = text_size(label, 0.42);
    put_text(canvas, label, {px - size.width / 2, plot.y + plot.height + 20}, 0.42, kGrey);
  }
  for (double t : y_axis.ticks) {
    const int py =
        static_cast<int>(std::lround(to_pixel(x_axis.ticks.empty() ? 1 : x_axis.ticks[0], t).y));
    cv::line(canvas, {plot.x, py}, {plot.x + plot.width, py}, kGrid, 1);
    cv::line(canvas, {plot.x - 5, py}, {plot.x, py}, kBlack, 1);
    const std::string label = tick_label(t, y_axis);
    const cv::Size size = text_size(label, 0.42);
    put_text(canvas, label, {plot.x - 8 - size.width, py + size.height / 2}, 0.42, kGrey);
  }
  cv::rectangle(canvas, plot, kBlack, 1);
  const cv::Size x_label_size = text_size(panel.x_label, 0.5);
  put_text(canvas, panel.x_label,
           {plot.x + (plot.width - x_label_size.width) / 2, plot.y + plot.height + 44}, 0.5,
           kBlack);
  put_vertical_text(canvas, panel.y_label, area.x + 4, plot.y + plot.height / 2, 0.5);

  // Series, clipped to the plot rectangle; markers when the points are few enough to see.
  cv::Mat inside = canvas(plot);
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const PlotSeries& series = panel.series[s];
    const cv::Scalar colour = colour_of(s);
    const size_t n = std::min(series.x.size(), series.y.size());
    const bool markers = n <= 40;
    bool have_previous = false;
    cv::Point previous;
    for (size_t i = 0; i < n; ++i) {
      if (!x_axis.usable(series.x[i]) || !y_axis.usable(series.y[i])) {
        have_previous = false;
        continue;
      }
      const cv::Point2d p = to_pixel(series.x[i], series.y[i]);
      const cv::Point point(static_cast<int>(std::lround(p.x)) - plot.x,
                            static_cast<int>(std::lround(p.y)) - plot.y);
      if (have_previous) cv::line(inside, previous, point, colour, 2, cv::LINE_AA);
      if (markers) cv::circle(inside, point, 4, colour, cv::FILLED, cv::LINE_AA);
      previous = point;
      have_previous = true;
    }
  }
  if (xs.empty())
    put_text(canvas, "no data", {plot.x + plot.width / 2 - 30, plot.y + plot.height / 2}, 0.6,
             kGrey);

  // Legend.
  const int legend_top = plot.y + plot.height + 62;
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const int x = plot.x + legend_at[s].x, y = legend_top + legend_at[s].y * 20;
    cv::line(canvas, {x, y}, {x + 22, y}, colour_of(s), 3, cv::LINE_AA);
    put_text(canvas, panel.series[s].name, {x + 28, y + 5}, legend_scale, kBlack);
  }
}

}  // namespace

std::array<uint8_t, 3> series_colour_bgr(size_t index) {
  static const std::array<uint8_t, 3> kTab10[] = {
      {180, 119, 31}, {14, 127, 255},  {44, 160, 44},   {40, 39, 214},  {189, 103, 148},
      {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
  return kTab10[index % 10];
}

void save_plot(const std::filesystem::path& png, const std::vector<PlotPanel>& panels,
               const PlotOptions& options) {
  const int title_height = options.title.empty() ? 0 : 40;
  const int count = std::max<int>(1, static_cast<int>(panels.size()));
  cv::Mat canvas(options.panel_height + title_height, options.panel_width * count, CV_8UC3, kWhite);
  if (!options.title.empty()) {
    const cv::Size size = text_size(options.title, 0.75, 2);
    put_text(canvas, options.title, {(canvas.cols - size.width) / 2, 28}, 0.75, kBlack, 2);
  }
  for (size_t i = 0; i < panels.size(); ++i)
    draw_panel(canvas,
               {static_cast<int>(i) * options.panel_width, title_height, options.panel_width,
                options.panel_height},
               panels[i]);

  std::error_code error;
  if (png.has_parent_path()) std::filesystem::create_directories(png.parent_path(), error);
  // Encoded in memory, then written whole: a reader never sees half a PNG.
  std::vector<uchar> bytes;
  try {
    if (!cv::imencode(".png", canvas, bytes)) throw Error("OpenCV could not encode it");
  } catch (const cv::Exception& e) {
    throw Error("cannot write plot " + png.string() + ": " + e.what());
  }
  util::AtomicFile file(png.string());
  file.write(bytes.data(), bytes.size());
  file.commit();
}

void save_sweep_summary(const std::filesystem::path& png, const std::vector<SweepPoint>& points,
                        const std::string& metric_name, const std::string& title) {
  // One line per (processes, precision), in the order the sweep first met them.
  std::vector<std::pair<int, std::string>> keys;
  std::map<std::pair<int, std::string>, std::vector<SweepPoint>> lines;
  for (const auto& point : points) {
    const auto key = std::make_pair(point.processes, point.precision);
    if (lines.count(key) == 0) keys.push_back(key);
    lines[key].push_back(point);
  }
  PlotPanel throughput{"Training throughput", "global batch size", "images/s", {}, true};
  PlotPanel metric{"Validation " + metric_name, "global batch size", metric_name, {}, true};
  for (const auto& key : keys) {
    auto& line = lines[key];
    std::stable_sort(line.begin(), line.end(), [](const SweepPoint& a, const SweepPoint& b) {
      return a.global_batch < b.global_batch;
    });
    const std::string name =
        std::to_string(key.first) + (key.first == 1 ? " process " : " processes ") + key.second;
    PlotSeries t{name, {}, {}}, m{name, {}, {}};
    for (const auto& point : line) {
      t.x.push_back(point.global_batch);
      t.y.push_back(point.images_per_s);
      m.x.push_back(point.global_batch);
      m.y.push_back(point.metric);
    }
    throughput.series.push_back(t);
    metric.series.push_back(m);
  }
  PlotOptions options;
  options.title = title;
  save_plot(png, {throughput, metric}, options);
}

}  // namespace runner::output
