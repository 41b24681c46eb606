#include "output/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/source_map.hpp"
#include "config/yaml_json.hpp"
#include "output/run_summary.hpp"
#include "util/atomic_file.hpp"
#include "util/base64.hpp"

namespace runner::output {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's JSON, or an empty object (a run that ended early lacks summary.json).
json read_json_or_empty(const fs::path& path) {
  const std::string text = read_text(path);
  try {
    return text.empty() ? json::object() : json::parse(text);
  } catch (const std::exception&) {
    return json::object();
  }
}

std::vector<json> read_records(const fs::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    try {
      if (!line.empty()) out.push_back(json::parse(line));
    } catch (const std::exception&) {  // a line cut by a crash: keep the rest
    }
  }
  return out;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v, int digits = 4) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) >= 1000 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 100) return fmt::format("{:.1f}", v);  // images/s, MiB
  return fmt::format("{:.{}f}", v, digits);
}

// Metrics (accuracy, F1, losses): always 4 decimals, so a column reads 0.0000 and 0.4312 alike.
std::string metric_text(double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : "n/a"; }

std::string card_text(const json& v) {
  if (v.is_number()) return number(v.get<double>());
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

const char* kPalette[] = {"#2563eb", "#dc2626", "#059669", "#d97706",
                          "#7c3aed", "#0891b2", "#db2777", "#4b5563"};

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool markers = false;
};

// An axis label: 3 significant digits (0.001, 0.0005, 1.23e-05, 2300).
std::string axis_text(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e5) return fmt::format("{:.2e}", v);
  return fmt::format("{:.3g}", v);
}

// A line chart as inline SVG: axes with min/mid/max ticks, one polyline (and markers) a series.
std::string svg_chart(const std::string& id, const std::string& title, const std::string& x_label,
                      const std::vector<Series>& series, bool log_y = false) {
  constexpr double W = 460, H = 240, L = 58, R = 12, T = 28, B = 40;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto ty = [&](double y) { return log_y ? std::log10(y) : y; };
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (log_y && s.y[i] <= 0)) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, ty(s.y[i])), y1 = std::max(y1, ty(s.y[i]));
    }
  std::string svg =
      fmt::format(R"(<svg class="chart" id="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">)"
                  R"(<text x="{}" y="18" class="ct">{}</text>)",
                  id, W, H, escape(title), L, escape(title));
  if (!std::isfinite(x0))
    return svg + R"(<text x="58" y="120" class="na">no data yet</text></svg>)";
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;  // one point (one epoch): in the middle
  // A constant series is a flat line at its value, the axis around it (not -0.5..0.5).
  if (y1 == y0) {
    const double half = y0 != 0 ? std::fabs(y0) * 0.1 : 1.0;
    y0 -= half, y1 += half;
  }
  const double pad = (y1 - y0) * 0.06;
  // A series that is never negative (a share, a speed) keeps its axis at 0 or above.
  y0 = y0 >= 0 && !log_y ? std::max(0.0, y0 - pad) : y0 - pad;
  y1 += pad;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + (1 - (ty(y) - y0) / (y1 - y0)) * (H - T - B); };
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" class="pa"/>)", L, T, W - L - R,
                     H - T - B);
  for (int i = 0; i <= 2; ++i) {
    const double yv = y0 + (y1 - y0) * i / 2.0, xv = x0 + (x1 - x0) * i / 2.0;
    const double ylab = log_y ? std::pow(10, yv) : yv;
    const double yy = T + (1 - i / 2.0) * (H - T - B), xx = L + i / 2.0 * (W - L - R);
    svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" class="gr"/>)", L, W - R, yy, yy);
    svg +=
        fmt::format(R"(<text x="{}" y="{}" class="yt">{}</text>)", L - 4, yy + 4, axis_text(ylab));
    svg +=
        fmt::format(R"(<text x="{}" y="{}" class="xt">{}</text>)", xx, H - B + 14, number(xv, 1));
  }
  svg += fmt::format(R"(<text x="{}" y="{}" class="xl">{}</text>)", (L + W - R) / 2, H - 6,
                     escape(x_label));
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* color = kPalette[k % (sizeof kPalette / sizeof *kPalette)];
    std::string points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (log_y && s.y[i] <= 0)) continue;
      points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
      if (s.markers)
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", px(s.x[i]),
                           py(s.y[i]), color);
    }
    svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.8"/>)",
                       points, color);
    svg += fmt::format(R"(<text x="{}" y="{}" class="lg" fill="{}">{}</text>)", W - R - 4,
                       T + 14 + 14 * k, color, escape(s.name));
  }
  return svg + "</svg>";
}

const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f4f5f7;color:#1f2933}
header{background:#1f2933;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px;font-size:22px}
header .meta{opacity:.85;font-size:13px}
.status{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:600;margin-right:10px}
.ok{background:#059669}.bad{background:#dc2626}.warn{background:#d97706}
main{padding:18px 28px;max-width:1500px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:14px 18px;margin:0 0 16px}
h2{font-size:16px;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#f8fafc;border:1px solid #e5e7eb;border-radius:6px;padding:8px 14px;min-width:120px}
.card .k{font-size:12px;color:#52606d}.card .v{font-size:20px;font-weight:600}
.card .n{font-size:11px;color:#52606d;max-width:260px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:10px}
svg.chart{width:100%;height:auto;background:#fff}
.ct{font-weight:600;font-size:13px;fill:#1f2933}.yt{text-anchor:end;font-size:11px;fill:#52606d}
.xt{text-anchor:middle;font-size:11px;fill:#52606d}.xl{text-anchor:middle;font-size:11px;fill:#52606d}
.lg{text-anchor:end;font-size:11px;font-weight:600}.na{font-size:13px;fill:#9aa5b1}
.pa{fill:none;stroke:#cbd2d9}.gr{stroke:#e4e7eb}
table{border-collapse:collapse;font-size:13px}
th,td{padding:4px 9px;border-bottom:1px solid #e5e7eb;text-align:right}
th:first-child,td:first-child{text-align:left}
table.cm td{min-width:34px;text-align:center;border:1px solid #fff}
pre{background:#f8fafc;border:1px solid #e5e7eb;border-radius:6px;padding:10px;overflow:auto;font-size:12px}
details summary{cursor:pointer;font-weight:600}
.grid{display:flex;flex-wrap:wrap;gap:10px}
figure{margin:0;text-align:center;font-size:11px;max-width:110px;overflow-wrap:anywhere}
figure img{width:84px;height:84px;image-rendering:pixelated;border:1px solid #e5e7eb;background:#000}
.wrong{color:#dc2626;font-weight:600}
)";

std::string status_badge(const std::string& status) {
  const std::string cls =
      status.rfind("finished", 0) == 0 ? "ok"
      : status.rfind("stopped", 0) == 0 || status.rfind("interrupted", 0) == 0 ||
              status.rfind("requeued", 0) == 0 || status.rfind("running", 0) == 0
          ? "warn"
          : "bad";
  return "<span class=\"status " + cls + "\">" + escape(status) + "</span>";
}

std::string experiment_name(const fs::path& run_dir) {
  std::istringstream config(read_text(run_dir / "config.yaml"));
  for (std::string line; std::getline(config, line);)
    if (line.rfind("name: ", 0) == 0) return line.substr(6);
  return run_dir.filename().string();
}

// The series every chart needs, from metrics.jsonl.
struct Curves {
  Series train_loss{"train loss"}, val_loss{"val loss", {}, {}, true}, lr{"lr"}, images{"images/s"},
      wait{"data wait share"}, scale{"loss scale"};
  std::map<std::string, Series> val_metrics;  // val_accuracy, ... by epoch
  json best;                                  // the last "best" record
};

Curves read_curves(const fs::path& run_dir) {
  Curves c;
  for (const json& r : read_records(run_dir / "metrics.jsonl")) {
    const std::string kind = r.value("kind", "");
    const double step = r.value("step", 0.0);
    auto add = [&](Series& s, const char* key, double x) {
      if (r.contains(key) && r.at(key).is_number()) {
        s.x.push_back(x);
        s.y.push_back(r.at(key).get<double>());
      }
    };
    if (kind == "step") {
      add(c.train_loss, "loss", step);
      add(c.lr, "lr", step);
      add(c.images, "images_per_s", step);
      add(c.wait, "data_wait", step);
      add(c.scale, "scale", step);
    } else if (kind == "epoch") {
      const double epoch = r.value("epoch", 0.0);
      add(c.val_loss, "val_loss", step);
      for (auto it = r.begin(); it != r.end(); ++it) {
        if (it.key().rfind("val_", 0) != 0 || it.key() == "val_loss" || !it->is_number()) continue;
        auto& s = c.val_metrics[it.key().substr(4)];
        s.name = it.key().substr(4);
        s.markers = true;
        s.x.push_back(epoch);
        s.y.push_back(it->get<double>());
      }
    } else if (kind == "best") {
      c.best = r;
    }
  }
  return c;
}

std::string curves_section(const Curves& c, const std::string& precision) {
  std::string html = "<section><h2>Curves</h2><div class=\"charts\">";
  html += svg_chart("chart-loss", "Loss", "optimizer step", {c.train_loss, c.val_loss});
  std::vector<Series> metrics;
  for (const auto& kv : c.val_metrics) metrics.push_back(kv.second);
  html += svg_chart("chart-metrics", "Validation metrics", "epoch", metrics);
  html += svg_chart("chart-lr", "Learning rate", "optimizer step", {c.lr});
  html += svg_chart("chart-throughput", "Throughput (images/s)", "optimizer step", {c.images});
  html += svg_chart("chart-data-wait", "Data wait (share of the step)", "optimizer step", {c.wait});
  if (precision == "fp16")
    html += svg_chart("chart-loss-scale", "Loss scale", "optimizer step", {c.scale}, true);
  return html + "</div></section>";
}

// A number field of a record, NaN where it holds none: JSON has no NaN, so a diverged run's
// values were written as null.
double number_field(const json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : NAN;
}

// task: multilabel's best epoch: each class's precision, recall and F1 at the threshold, its
// support (images with the class) and average precision; no confusion matrix (an image has
// several classes).
std::string multilabel_section(const json& best) {
  std::string html = fmt::format(
      R"(<section id="best-epoch"><h2>Best epoch {}: per class (multi-label, predicted at )"
      R"(probability &ge; {})</h2><table id="per-class"><tr><th>class</th><th>precision</th>)"
      R"(<th>recall</th><th>F1</th><th>support</th><th>AP</th></tr>)",
      best.value("epoch", 0), metric_text(number_field(best, "threshold")));
  for (const json& row : best.value("per_class", json::array()))
    html +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(row.value("class", "")), metric_text(number_field(row, "precision")),
                    metric_text(number_field(row, "recall")), metric_text(number_field(row, "f1")),
                    row.value("support", 0),
                    row.value("ap", json()).is_number() ? metric_text(number_field(row, "ap"))
                                                        : std::string("n/a"));
  return html + "</table></section>";
}

std::string classification_section(const json& best, const json& examples) {
  if (best.is_object() && best.contains("per_class") && !best.contains("confusion_matrix"))
    return multilabel_section(best);
  if (!best.is_object() || !best.contains("confusion_matrix")) return "";
  const json& cm = best.at("confusion_matrix");
  const json names = best.value("classes", json::array());
  auto name_of = [&](size_t i) {
    return i < names.size() ? names[i].get<std::string>() : std::to_string(i);
  };
  std::string html = fmt::format(
      "<section id=\"best-epoch\"><h2>Best epoch {}: per class and confusion matrix</h2>",
      best.value("epoch", 0));
  html +=
      "<table id=\"per-class\"><tr><th>class</th><th>precision</th><th>recall</th>"
      "<th>F1</th><th>support</th></tr>";
  for (const json& row : best.value("per_class", json::array()))
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        escape(row.value("class", "")), metric_text(number_field(row, "precision")),
                        metric_text(number_field(row, "recall")),
                        metric_text(number_field(row, "f1")), row.value("support", 0));
  html +=
      "</table><p>Rows: true class; columns: predicted.</p><table class=\"cm\" "
      "id=\"confusion-matrix\"><tr><th></th>";
  for (size_t j = 0; j < cm.size(); ++j) html += "<th>" + escape(name_of(j)) + "</th>";
  html += "</tr>";
  for (size_t i = 0; i < cm.size(); ++i) {
    double row_sum = 0;
    for (const auto& v : cm[i]) row_sum += v.get<double>();
    html += "<tr><th>" + escape(name_of(i)) + "</th>";
    for (size_t j = 0; j < cm[i].size(); ++j) {
      const double v = cm[i][j].get<double>(), share = row_sum > 0 ? v / row_sum : 0;
      const std::string bg =
          i == j ? fmt::format("rgba(5,150,105,{:.2f})", 0.08 + 0.8 * share)
                 : fmt::format("rgba(220,38,38,{:.2f})", share > 0 ? 0.08 + 0.9 * share : 0);
      html += fmt::format(R"(<td style="background:{}">{:.0f}</td>)", bg, v);
    }
    html += "</tr>";
  }
  html += "</table>";
  if (examples.is_array() && !examples.empty()) {
    html +=
        "<h2 style=\"margin-top:14px\">Most confidently misclassified validation images</h2>"
        "<div class=\"grid\">";
    for (const json& e : examples) {
      // The file's name where the dataset has files (its path on hover), else the index.
      const std::string file = e.value("file", "");
      const std::string shown = file.empty() ? "#" + std::to_string(e.value("index", 0))
                                             : std::filesystem::path(file).filename().string();
      html += fmt::format(
          R"(<figure><img alt="sample {}" src="data:image/png;base64,{}"><figcaption class="file" title="{}">{}<br>true {}<br><span class="wrong">predicted {}</span> {:.0f}%</figcaption></figure>)",
          e.value("index", 0), e.value("png", ""), escape(file.empty() ? shown : file),
          escape(shown), escape(e.value("true", "")), escape(e.value("predicted", "")),
          100 * number_field(e, "confidence"));
    }
    html += "</div>";
  }
  return html + "</section>";
}

std::string card(const std::string& id, const std::string& label, const std::string& value,
                 const std::string& note = "") {
  return "<div class=\"card\" id=\"" + id + "\"><div class=\"k\">" + escape(label) +
         "</div><div class=\"v\">" + escape(value) + "</div>" +
         (note.empty() ? "" : "<div class=\"n\">" + escape(note) + "</div>") + "</div>";
}

std::string wall_time_text(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto total = static_cast<long long>(std::llround(seconds));
  if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

// What ran, in a person's words: speed, time, device and world, batch, precision as run (and
// why when it is not the config's), memory per rank. Keys a summary lacks (a failed run) are
// left out.
std::string run_cards(const json& summary) {
  std::string html;
  const auto number_of = [&](const char* key) -> std::optional<double> {
    const auto it = summary.find(key);
    if (it == summary.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  if (summary.contains("train_images_per_s")) {
    const auto speed = number_of("train_images_per_s");  // null: too short to measure
    html +=
        card("card-speed", "Training speed", speed ? fmt::format("{:.0f} images/s", *speed) : "n/a",
             speed ? "steady state, all processes" : "too few steps to measure past the warm-up");
  }
  if (const auto seconds = number_of("seconds")) {
    const auto steps = number_of("optimizer_steps");
    html += card("card-time", "Wall time", wall_time_text(*seconds),
                 steps ? fmt::format("{:.0f} optimizer steps", *steps) : "");
  }
  const auto world = number_of("world_size");
  if (world || summary.contains("device"))
    html += card(
        "card-device", "Device", summary.value("device", std::string("n/a")),
        world ? (*world == 1 ? std::string("1 process") : fmt::format("{:.0f} processes", *world))
              : "");
  if (const auto global = number_of("global_batch")) {
    const auto per = number_of("batch_size"), accum = number_of("grad_accum_steps");
    std::string how;
    if (per && world)
      how = fmt::format("{:.0f} per process x {:.0f} process{}", *per, *world,
                        *world == 1 ? "" : "es") +
            (accum && *accum > 1 ? fmt::format(" x {:.0f} accumulation steps", *accum) : "");
    html += card("card-batch", "Global batch", fmt::format("{:.0f}", *global), how);
  }
  if (summary.contains("precision")) {
    const std::string ran = summary.value("precision", ""),
                      asked = summary.value("precision_config", ran);
    html += card("card-precision", "Precision", ran,
                 asked != ran ? "config: " + asked + "; " + summary.value("precision_reason", "")
                              : "as configured");
  }
  if (const auto rss = number_of("peak_rss_mib_all_ranks"))
    html += card("card-memory", "Peak memory per process",
                 fmt::format("{:.0f} MiB", *rss / std::max(1.0, world.value_or(1.0))),
                 "host (resident), mean of the processes' peaks");
  if (const auto gpu = number_of("peak_gpu_mib"); gpu && *gpu > 0)
    html += card("card-gpu-memory", "Peak GPU memory", fmt::format("{:.0f} MiB", *gpu),
                 "rank 0, allocated by tensors");
  return html;
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape(title) +
         "</title><style>" + kStyle + "</style></head><body>" + body + "</body></html>\n";
}

}  // namespace

void write_run_report(const fs::path& run_dir, const std::string& status) {
  const std::string name = experiment_name(run_dir);
  const json summary = read_summary(run_dir);
  const json env = read_json_or_empty(run_dir / "env.json");
  const Curves curves = read_curves(run_dir);
  std::string precision = summary.value("precision", "");
  std::string body = "<header><h1>" + escape(name) + "</h1><div class=\"meta\">" +
                     status_badge(status) + escape(run_dir.string());
  if (summary.contains("seconds"))
    body += " &middot; " + number(summary.at("seconds").get<double>(), 1) + " s";
  body += "</div><div class=\"meta\"><code>" + escape(read_text(run_dir / "command.txt")) +
          "</code></div>";
  // model.init_from: the run it started from (run.json records it as the run starts).
  const json init_from = read_json_or_empty(run_dir / "run.json").value("init_from", json());
  if (init_from.is_object())
    body += "<div class=\"meta\" id=\"init-from\">started from " +
            escape(init_from.value("file", std::string("?"))) + " (" +
            escape(init_from.value("weights", std::string("?"))) + " weights of " +
            escape(init_from.value("source", std::string("?"))) + ")</div>";
  // launch.max_restarts: each time the run started again, and why.
  for (const json& restart : summary.value("restarts", json::array()))
    body += "<div class=\"meta\" id=\"restart\">restarted after " +
            escape(restart.value("cause", std::string("?"))) +
            (restart.contains("resumed_at")
                 ? " &middot; resumed at epoch " +
                       card_text(restart["resumed_at"].value("epoch", json())) +
                       ", optimizer step " + card_text(restart["resumed_at"].value("step", json()))
                 : std::string()) +
            "</div>";
  body += "</header><main>";

  body += "<section><h2>Result</h2><div class=\"cards\" id=\"best-metrics\">";
  const json best = summary.value("best_metrics", json::object());
  for (auto it = best.begin(); it != best.end(); ++it)
    body += card("card-best-" + it.key(), "Best " + it.key(),
                 it->is_number() ? metric_text(it->get<double>()) : card_text(*it),
                 "validation, best weights");
  if (best.empty() && !curves.val_metrics.empty()) {  // no summary (failed run): the last epoch
    for (const auto& [metric, s] : curves.val_metrics)
      body += card("card-last-" + metric, "Last " + metric, metric_text(s.y.back()),
                   "validation, last epoch");
  }
  body += run_cards(summary);
  body += "</div></section>";

  body += curves_section(curves, precision);
  body += classification_section(curves.best, read_json_or_empty(run_dir / "best_examples.json"));
  const std::string batch_png = read_text(run_dir / "batch.png");
  if (!batch_png.empty())  // written at the run's start (runner show-batch draws the same)
    body +=
        "<section><details><summary>The first training batch, as the model gets it "
        "(batch.png)</summary><img alt=\"first training batch\" style=\"max-width:100%\" "
        "src=\"data:image/png;base64," +
        util::base64(batch_png) + "\"></details></section>";
  body += "<section><details><summary>Resolved config (config.yaml)</summary><pre>" +
          escape(read_text(run_dir / "config.yaml")) + "</pre></details></section>";
  body += "<section><details open><summary>Environment</summary><table>";
  if (env.is_object())
    for (auto it = env.begin(); it != env.end(); ++it)
      body += "<tr><td>" + escape(it.key()) + "</td><td style=\"text-align:left\">" +
              escape(card_text(*it)) + "</td></tr>";
  body += "</table></details></section></main>";
  util::write_file_atomically((run_dir / "report.html").string(),
                              page(name + " - runner report", body));
}

namespace {

// A run's config.yaml as dotted keys -> value text (lists whole); empty when it cannot be read.
std::map<std::string, std::string> flat_config(const fs::path& run_dir) {
  std::map<std::string, std::string> flat;
  json doc;
  try {
    config::SourceMap marks;
    doc = config::parse_yaml(read_text(run_dir / "config.yaml"), "config.yaml", marks);
  } catch (const std::exception&) {
    return flat;
  }
  std::function<void(const json&, const std::string&)> walk = [&](const json& v,
                                                                  const std::string& key) {
    if (v.is_object() && !v.empty()) {
      for (auto it = v.begin(); it != v.end(); ++it)
        walk(*it, key.empty() ? it.key() : key + "." + it.key());
    } else {
      flat[key] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  };
  walk(doc, "");
  return flat;
}

// A run's value of a dotted key, "(unset)" where its config has none.
std::string setting_of(const std::map<std::string, std::string>& flat, const std::string& key) {
  const auto it = flat.find(key);
  return it == flat.end() ? std::string("(unset)") : it->second;
}

// The settings that differ between the runs (where each run's folder is set excluded).
std::vector<std::string> differing_keys(
    const std::vector<std::map<std::string, std::string>>& all) {
  std::set<std::string> keys;
  for (const auto& flat : all)
    for (const auto& [key, value] : flat) keys.insert(key);
  std::vector<std::string> out;
  for (const auto& key : keys) {
    if (key.rfind("output.", 0) == 0) continue;
    for (const auto& flat : all)
      if (setting_of(flat, key) != setting_of(all.front(), key)) {
        out.push_back(key);
        break;
      }
  }
  return out;
}

}  // namespace

void write_comparison_report(const std::vector<fs::path>& run_dirs, const fs::path& output,
                             const ComparisonOptions& options) {
  std::vector<json> summaries;
  std::vector<std::map<std::string, std::string>> configs;
  for (const auto& dir : run_dirs) {
    summaries.push_back(read_summary(dir));
    configs.push_back(flat_config(dir));
  }
  const bool ranked = !options.ranked_by.empty();
  const std::vector<std::string> differing = differing_keys(configs);
  // A run's name: its experiment and the settings that make it differ ("quickstart
  // batch_size=32"), the key's last part where that is unambiguous enough for a legend.
  const auto label_of = [&](size_t i) {
    std::string label = experiment_name(run_dirs[i]);
    for (const auto& key : differing) {
      if (key != "name")
        label += " " + key.substr(key.rfind('.') + 1) + "=" + setting_of(configs[i], key);
    }
    return label;
  };

  const std::string title = options.title.empty()
                                ? std::to_string(run_dirs.size()) + " runs side by side"
                                : options.title;
  std::string body = "<header><h1>" + escape(title) + "</h1><div class=\"meta\">" +
                     (differing.empty() ? std::string("the runs' configs are the same")
                                        : "settings that differ: " +
                                              [&] {
                                                std::string keys;
                                                for (const auto& k : differing)
                                                  keys += (keys.empty() ? "" : ", ") + k;
                                                return keys;
                                              }()) +
                     (ranked ? "; ranked by best " + options.ranked_by : "") +
                     "</div></header><main><section><h2>Runs</h2><table id=\"runs\"><tr>" +
                     (ranked ? "<th>rank</th>" : "") + "<th>run</th>";
  for (const auto& key : differing) body += "<th>" + escape(key) + "</th>";
  body += "<th>status</th>";
  std::vector<std::string> metric_names;
  for (const auto& s : summaries) {
    const json best = s.value("best_metrics", json::object());
    for (auto it = best.begin(); it != best.end(); ++it)
      if (std::find(metric_names.begin(), metric_names.end(), it.key()) == metric_names.end())
        metric_names.push_back(it.key());
  }
  for (const auto& m : metric_names) body += "<th>best " + escape(m) + "</th>";
  body += "<th>images/s</th><th>wall time</th></tr>";
  std::vector<Series> losses, metrics;
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const json& s = summaries[i];
    const std::string label = label_of(i);
    body += "<tr>";
    if (ranked) body += "<td>" + std::to_string(i + 1) + "</td>";
    body += "<td><a href=\"" + escape((run_dirs[i] / "report.html").string()) + "\">" +
            escape(experiment_name(run_dirs[i])) + "</a> <small>" +
            escape(run_dirs[i].filename().string()) + "</small></td>";
    for (const auto& key : differing)
      body += "<td>" + escape(setting_of(configs[i], key)) + "</td>";
    body += "<td>" + escape(summary_says_finished(s) ? "finished" : run_status_text(s)) + "</td>";
    const json best = s.value("best_metrics", json::object());
    for (const auto& m : metric_names)
      body += "<td>" +
              (best.contains(m) && best.at(m).is_number() ? metric_text(best.at(m).get<double>())
                                                          : std::string("n/a")) +
              "</td>";
    const json speed = s.value("train_images_per_s", json());
    body += "<td>" + (speed.is_number() ? fmt::format("{:.0f}", speed.get<double>()) : "n/a") +
            "</td><td>" +
            (s.contains("seconds") && s.at("seconds").is_number()
                 ? wall_time_text(s.at("seconds").get<double>())
                 : std::string("n/a")) +
            "</td></tr>";
    Curves c = read_curves(run_dirs[i]);
    c.train_loss.name = label;
    losses.push_back(c.train_loss);
    if (!c.val_metrics.empty()) {
      auto chosen = c.val_metrics.find(options.ranked_by);  // the ranking metric, else the first
      if (chosen == c.val_metrics.end()) chosen = c.val_metrics.begin();
      Series first = chosen->second;
      first.name = label + " " + chosen->first;
      metrics.push_back(first);
    }
  }
  body += "</table></section><section><h2>Curves</h2><div class=\"charts\">" +
          svg_chart("chart-loss", "Training loss", "optimizer step", losses) +
          svg_chart("chart-metrics", "Validation metric", "epoch", metrics) +
          "</div></section></main>";
  fs::create_directories(output.parent_path().empty() ? fs::path(".") : output.parent_path());
  util::write_file_atomically(output.string(), page("runner: " + title, body));
}

}  // namespace runner::output
