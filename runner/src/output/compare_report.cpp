#include "output/compare_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "output/html_page.hpp"
#include "output/run_files.hpp"
#include "output/run_naming.hpp"
#include "output/run_series.hpp"
#include "output/run_summary.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {
namespace fs = std::filesystem;
using html::escape;
using nlohmann::json;

namespace {

struct Run {
  fs::path dir;
  json summary;
  std::map<std::string, std::string> config;
  RunSeries series;
};

// A table cell that sorts by `sort` (a number's full value, else the text).
std::string cell(const std::string& text, const std::string& sort = "",
                 const std::string& title = "") {
  return "<td" + (sort.empty() ? "" : " data-sort=\"" + escape(sort) + "\"") +
         (title.empty() ? "" : " title=\"" + escape(title) + "\"") + ">" + escape(text) + "</td>";
}

std::string number_cell(const json& v) {
  if (!v.is_number()) return cell("n/a", "");
  const double x = v.get<double>();
  return cell(html::number3(x), fmt::format("{}", x), fmt::format("{}", x));
}

// The metric that picks the best run, and whether lower is better: the sweep's ranking metric,
// else the first run's train.best metric.
std::pair<std::string, bool> ranking_metric(const std::vector<Run>& runs,
                                            const std::string& ranked_by) {
  for (const Run& run : runs) {
    const json best = run.summary.value("best", json::object());
    if (best.contains("metric") && (ranked_by.empty() || best["metric"] == ranked_by))
      return {best["metric"].get<std::string>(), best.value("mode", std::string("max")) == "min"};
  }
  return {ranked_by, ranked_by == "loss"};
}

// The index of the run with the best value of `metric`; -1 when none has one.
int best_run(const std::vector<Run>& runs, const std::string& metric, bool lower_is_better) {
  int best = -1;
  double best_value = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const json v = runs[i].summary.value("best_metrics", json::object()).value(metric, json());
    if (!v.is_number()) continue;
    const double x = v.get<double>();
    if (best < 0 || (lower_is_better ? x < best_value : x > best_value))
      best = static_cast<int>(i), best_value = x;
  }
  return best;
}

std::string runs_table(const std::vector<Run>& runs, const RunNaming& naming,
                       const ComparisonOptions& options, int best) {
  const bool ranked = !options.ranked_by.empty();
  std::vector<std::string> metric_names;
  for (const Run& run : runs) {
    const json metrics = run.summary.value("best_metrics", json::object());
    for (auto it = metrics.begin(); it != metrics.end(); ++it)
      if (std::find(metric_names.begin(), metric_names.end(), it.key()) == metric_names.end())
        metric_names.push_back(it.key());
  }
  std::string html =
      "<p class=\"hint\">Click a column's heading to sort by it. The best run is highlighted.</p>"
      "<div class=\"wide\"><table id=\"runs\" class=\"sortable\"><thead><tr>" +
      std::string(ranked ? "<th>rank</th>" : "") + "<th class=\"name\">run</th>";
  for (const auto& key : naming.differing)
    html += "<th title=\"" + escape(key) + "\">" + escape(naming.short_key.at(key)) + "</th>";
  html += "<th>status</th>";
  for (const auto& m : metric_names) html += "<th>best " + escape(m) + "</th>";
  html += "<th>images/s</th><th>wall time</th></tr></thead><tbody>";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& run = runs[i];
    const json& s = run.summary;
    html += static_cast<int>(i) == best ? "<tr class=\"best\">" : "<tr>";
    if (ranked) html += cell(std::to_string(i + 1), std::to_string(i + 1));
    html += "<td class=\"name\" data-sort=\"" + escape(naming.labels[i]) + "\"><a href=\"" +
            escape((run.dir / "report.html").string()) + "\">" + escape(naming.labels[i]) +
            "</a> <small>" + escape(run.dir.filename().string()) + "</small></td>";
    for (const auto& key : naming.differing) {
      const auto it = run.config.find(key);
      html += cell(it == run.config.end() ? "(unset)" : it->second);
    }
    html += cell(summary_says_finished(s) ? "finished" : run_status_text(s));
    const json metrics = s.value("best_metrics", json::object());
    for (const auto& m : metric_names) html += number_cell(metrics.value(m, json()));
    const json speed = s.value("train_images_per_s", json());
    html += speed.is_number()
                ? cell(html::si3(speed.get<double>()), fmt::format("{}", speed.get<double>()))
                : cell("n/a");
    const json seconds = s.value("seconds", json());
    html += seconds.is_number() ? cell(html::duration_text(seconds.get<double>()),
                                       fmt::format("{}", seconds.get<double>()))
                                : cell("n/a");
    html += "</tr>";
  }
  html += "</tbody></table></div>";
  if (!naming.shared.empty() && !runs.empty()) {
    html += "<details id=\"shared-settings\"><summary>Settings every run shares (" +
            std::to_string(naming.shared.size()) +
            ")</summary><div class=\"wide\"><table class=\"env\">";
    for (const auto& key : naming.shared)
      html += "<tr><td>" + escape(key) + "</td><td>" + escape(runs.front().config.at(key)) +
              "</td></tr>";
    html += "</table></div></details>";
  }
  return html;
}

// Every series any run recorded, each run's points (null where it has none), in the first
// run's order; per-epoch series against the epoch, per-step ones against the step.
json metrics_data(const std::vector<Run>& runs) {
  std::vector<const MetricSeries*> kinds;
  std::set<std::string> seen;
  for (const Run& run : runs)
    for (const auto& s : run.series.series)
      if (seen.insert(s.id()).second) kinds.push_back(&s);
  json metrics = json::array();
  for (const MetricSeries* kind : kinds) {
    json per_run = json::array();
    for (const Run& run : runs) {
      const MetricSeries* s = run.series.find(kind->id());
      json points = json::array();
      if (s)
        for (size_t i = 0; i < s->value.size(); ++i)
          points.push_back({kind->per_epoch ? s->epoch[i] : s->step[i],
                            std::isfinite(s->value[i]) ? json(s->value[i]) : json(nullptr)});
      per_run.push_back(points);
    }
    metrics.push_back({{"id", kind->id()},
                       {"title", kind->title()},
                       {"x", kind->per_epoch ? "epoch" : "step"},
                       {"x_title", kind->per_epoch ? "epoch" : "optimizer step"},
                       {"format", format_of(*kind)},
                       {"log", kind->key == "scale"},
                       {"runs", per_run}});
  }
  return metrics;
}

// Finished runs of more than one global batch: training images/s and the ranking `metric` (its
// last value) against the global batch on a log axis, a line per (processes, precision): what a
// batch-size sweep is for. Empty when every run has the same global batch.
json scaling_charts(const std::vector<Run>& runs, const std::string& metric) {
  struct Point {
    double batch, images_per_s, value;
  };
  std::map<std::string, std::vector<Point>> lines;
  std::set<double> batches;
  for (const Run& run : runs) {
    const json& s = run.summary;
    const json images_per_s = s.value("train_images_per_s", json());
    const json batch = s.value("global_batch", json());
    if (s.value("status", "") != "finished" || !images_per_s.is_number() || !batch.is_number())
      continue;
    const json last = s.value("last_metrics", json::object());
    const json value = last.is_object() ? last.value(metric, json()) : json();
    const std::string line = std::to_string(s.value("world_size", 1)) + " process(es), " +
                             s.value("precision", std::string("fp32"));
    lines[line].push_back({batch.get<double>(), images_per_s.get<double>(),
                           value.is_number() ? value.get<double>() : NAN});
    batches.insert(batch.get<double>());
  }
  if (batches.size() < 2) return json::array();
  json throughput = json::array(), quality = json::array();
  for (auto& [name, points] : lines) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.batch < b.batch; });
    json speed = json::array(), values = json::array();
    for (const Point& p : points) {
      speed.push_back({p.batch, p.images_per_s});
      values.push_back({p.batch, std::isfinite(p.value) ? json(p.value) : json(nullptr)});
    }
    throughput.push_back({{"name", name}, {"points", speed}, {"markers", true}});
    quality.push_back({{"name", name}, {"points", values}, {"markers", true}});
  }
  const auto chart = [](const std::string& id, const std::string& title, const std::string& format,
                        const json& series) {
    return json{{"id", id},
                {"title", title},
                {"x", "batch"},
                {"x_log", true},
                {"x_title", "global batch"},
                {"format", format},
                {"series", series}};
  };
  return json::array(
      {chart("scaling-throughput", "training images/s against the global batch", "si", throughput),
       chart("scaling-metric", metric + " against the global batch", "", quality)});
}

}  // namespace

void write_comparison_report(const std::vector<fs::path>& run_dirs, const fs::path& output,
                             const ComparisonOptions& options) {
  std::vector<Run> runs;
  std::vector<std::map<std::string, std::string>> configs;
  std::vector<std::string> folder_names;
  for (const auto& dir : run_dirs) {
    runs.push_back({dir, read_summary(dir), flat_config(dir), read_run_series(dir, 1000)});
    configs.push_back(runs.back().config);
    folder_names.push_back(dir.filename().string());
  }
  const RunNaming naming = name_runs(configs, folder_names);
  const auto [metric, lower_is_better] = ranking_metric(runs, options.ranked_by);
  const int best = best_run(runs, metric, lower_is_better);
  const json scaling = scaling_charts(runs, metric);

  const std::string title = options.title.empty()
                                ? std::to_string(run_dirs.size()) + " runs side by side"
                                : options.title;
  std::string differing;
  for (const auto& key : naming.differing) differing += (differing.empty() ? "" : ", ") + key;
  std::string body =
      "<header><h1>" + escape(title) + "</h1><div class=\"meta\">" +
      (differing.empty() ? std::string("the runs' configs are the same")
                         : "settings that differ: " + escape(differing)) +
      (options.ranked_by.empty() ? "" : "; ranked by best " + escape(options.ranked_by)) +
      (best >= 0 ? "; best " + escape(metric) + ": " + escape(naming.labels[best]) : "") +
      "</div></header><main><section><h2>Curves</h2><div class=\"controls\" id=\"controls\">"
      "</div><div class=\"charts\" id=\"charts\"></div></section>" +
      (scaling.empty() ? std::string()
                       : "<section><h2>Scaling</h2><div class=\"charts\" id=\"scaling\"></div>"
                         "</section>") +
      "<section><h2>Runs</h2>" + runs_table(runs, naming, options, best) + "</section></main>";

  // The charts open on the training loss and the ranking metric (else the first validation one).
  const std::string second =
      metric.rfind("ema_", 0) == 0 ? "ema_val_" + metric.substr(4) : "val_" + metric;
  json data_runs = json::array();
  for (size_t i = 0; i < runs.size(); ++i)
    data_runs.push_back({{"label", naming.labels[i]},
                         {"group", naming.groups.empty() ? json(nullptr) : json(naming.groups[i])},
                         {"best", static_cast<int>(i) == best}});
  json keys = json::object();
  for (const auto& [full, shortened] : naming.short_key) keys[shortened] = full;
  const json data = {{"runs", data_runs},
                     {"grouped", !naming.groups.empty()},
                     {"metrics", metrics_data(runs)},
                     {"selected", {"step:loss", second}},
                     {"scaling", scaling},
                     {"keys", keys}};
  fs::create_directories(output.parent_path().empty() ? fs::path(".") : output.parent_path());
  util::write_file_atomically(output.string(), html::page("runner: " + title, body, data.dump(),
                                                          {"charts.js", "compare.js"}));
}

}  // namespace runner::output
