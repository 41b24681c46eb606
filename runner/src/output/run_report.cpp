#include "output/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "output/html_page.hpp"
#include "output/run_files.hpp"
#include "output/run_series.hpp"
#include "output/run_summary.hpp"
#include "util/atomic_file.hpp"
#include "util/base64.hpp"

namespace runner::output {
namespace fs = std::filesystem;
using html::escape;
using html::number3;
using nlohmann::json;

namespace {

// A number field of a record, NaN where it holds none: JSON has no NaN, so a diverged run's
// values were written as null.
double number_field(const json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : NAN;
}

std::string value_text(const json& v) {
  if (v.is_number()) return number3(v.get<double>());
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Where a chart stands on the page: losses, validation metrics, then how the run went.
int chart_rank(const std::string& chart) {
  static const std::vector<std::string> order = {"loss",          "metric:",        "step:lr",
                                                 "images_per_s",  "step:data_wait", "memory",
                                                 "epoch_seconds", "step:scale"};
  for (size_t i = 0; i < order.size(); ++i)
    if (chart.rfind(order[i], 0) == 0) return static_cast<int>(i);
  return static_cast<int>(order.size());
}

std::string chart_title(const std::string& chart, const MetricSeries& first) {
  if (chart == "loss") return "Loss";
  if (chart.rfind("metric:", 0) == 0) return "Validation " + chart.substr(7);
  if (chart == "images_per_s") return "Throughput (images/s)";
  if (chart == "memory") return "Peak memory (MiB)";
  std::string title = first.title();
  if (!title.empty()) title[0] = static_cast<char>(std::toupper(title[0]));
  return title;
}

std::string chart_element_id(const std::string& chart) {
  static const std::map<std::string, std::string> named = {{"images_per_s", "throughput"},
                                                           {"step:scale", "loss-scale"}};
  if (const auto it = named.find(chart); it != named.end()) return "chart-" + it->second;
  std::string id = chart.rfind("step:", 0) == 0 ? chart.substr(5) : chart;
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  return "chart-" + id;
}

// A series' points for a chart whose x axis is `x`.
json points_of(const MetricSeries& s, const std::string& x) {
  json points = json::array();
  const auto& xs = x == "epoch" ? s.epoch : s.step;
  for (size_t i = 0; i < s.value.size(); ++i)
    points.push_back({xs[i], std::isfinite(s.value[i]) ? json(s.value[i]) : json(nullptr)});
  return points;
}

// Every series of metrics.jsonl on a chart of its kind (run_series.hpp's chart_of): a chart
// whose series are all per epoch has epochs on its x axis, any other the optimizer step (an
// epoch's values at the step it ended).
json report_charts(const RunSeries& run, const std::string& precision) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const MetricSeries*>> members;
  for (const auto& s : run.series) {
    // A loss scale of 1 throughout: no scaler ran (fp32, bf16); GPU memory of 0: no GPU.
    const auto all = [&](double value) {
      return std::all_of(s.value.begin(), s.value.end(), [&](double v) { return v == value; });
    };
    if ((!s.per_epoch && s.key == "scale" && precision != "fp16" && all(1.0)) ||
        (s.key == "peak_gpu_mib" && all(0.0)))
      continue;
    const std::string chart = chart_of(s);
    if (!members.count(chart)) order.push_back(chart);
    members[chart].push_back(&s);
  }
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return chart_rank(a) < chart_rank(b);
  });
  json charts = json::array();
  for (const auto& chart : order) {
    const auto& list = members[chart];
    const bool by_epoch =
        std::all_of(list.begin(), list.end(), [](const MetricSeries* s) { return s->per_epoch; });
    const std::string x = by_epoch ? "epoch" : "step";
    json series = json::array();
    for (const MetricSeries* s : list)
      series.push_back({{"key", s->key},
                        {"per_epoch", s->per_epoch},
                        {"name", s->title()},
                        {"points", points_of(*s, x)},
                        {"markers", s->per_epoch},
                        {"dashed", s->key.rfind("ema_", 0) == 0}});
    charts.push_back({{"id", chart_element_id(chart)},
                      {"title", chart_title(chart, *list.front())},
                      {"x", x},
                      {"x_title", by_epoch ? "epoch" : "optimizer step"},
                      {"format", format_of(*list.front())},
                      {"log", chart == "step:scale"},
                      {"series", series}});
  }
  return charts;
}

// task: multilabel's best epoch: each class's precision, recall and F1 at the threshold, its
// support (images with the class) and average precision; no confusion matrix (an image has
// several classes).
std::string multilabel_section(const json& best) {
  std::string html = fmt::format(
      R"(<section id="best-epoch"><h2>Best epoch {}: per class (multi-label, predicted at )"
      R"(probability &ge; {})</h2><div class="wide"><table id="per-class"><tr><th>class</th>)"
      R"(<th>precision</th><th>recall</th><th>F1</th><th>support</th><th>AP</th></tr>)",
      best.value("epoch", 0), number3(number_field(best, "threshold")));
  for (const json& row : best.value("per_class", json::array()))
    html +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(row.value("class", "")), number3(number_field(row, "precision")),
                    number3(number_field(row, "recall")), number3(number_field(row, "f1")),
                    row.value("support", 0), number3(number_field(row, "ap")));
  return html + "</table></div></section>";
}

std::string examples_grid(const json& examples) {
  if (!examples.is_array() || examples.empty()) return "";
  std::string html =
      "<h2 style=\"margin-top:14px\">Most confidently misclassified validation images</h2>"
      "<div class=\"grid\" id=\"misclassified\">";
  for (const json& e : examples) {
    // The file's name where the dataset has files (its path on hover), else the index.
    const std::string file = e.value("file", "");
    const std::string shown = file.empty() ? "#" + std::to_string(e.value("index", 0))
                                           : fs::path(file).filename().string();
    html += fmt::format(
        R"(<figure><img alt="sample {}" src="data:image/png;base64,{}"><figcaption class="file" title="{}">{}<br>true {}<br><span class="wrong">predicted {}</span> {:.0f}%</figcaption></figure>)",
        e.value("index", 0), e.value("png", ""), escape(file.empty() ? shown : file), escape(shown),
        escape(e.value("true", "")), escape(e.value("predicted", "")),
        100 * number_field(e, "confidence"));
  }
  return html + "</div>";
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
      "<div class=\"wide\"><table id=\"per-class\"><tr><th>class</th><th>precision</th>"
      "<th>recall</th><th>F1</th><th>support</th></tr>";
  for (const json& row : best.value("per_class", json::array()))
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        escape(row.value("class", "")), number3(number_field(row, "precision")),
                        number3(number_field(row, "recall")), number3(number_field(row, "f1")),
                        row.value("support", 0));
  html +=
      "</table></div><p>Rows: true class; columns: predicted.</p><div class=\"wide\">"
      "<table class=\"cm\" id=\"confusion-matrix\"><tr><th></th>";
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
  return html + "</table></div>" + examples_grid(examples) + "</section>";
}

std::optional<double> number_of(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// "Best" cards: each metric of the weights that predict, saying whose weights they are (the
// model's or train.ema's average), which metric and epoch chose them, and, when the average
// chose, the model's own best so that a higher model curve is not a puzzle.
std::string best_cards(const json& summary, const RunSeries& run,
                       const std::map<std::string, std::string>& config) {
  std::string html;
  const json best_metrics = summary.value("best_metrics", json::object());
  const json best = summary.value("best", json::object());
  const auto weights_it = config.find("train.best.weights");
  const bool ema = weights_it != config.end() && weights_it->second == "ema";
  std::string chosen_by = best.value("metric", std::string());  // "ema_accuracy" for the EMA's
  if (chosen_by.rfind("ema_", 0) == 0) chosen_by = chosen_by.substr(4);
  const bool last = summary.value("evaluated_weights", std::string()) == "last";
  const std::string whose = last ? "last weights (no validation chose)"
                            : ema
                                ? fmt::format("EMA weights of epoch {}", best.value("epoch", 0))
                                : fmt::format("model weights of epoch {}", best.value("epoch", 0));
  const bool lowest = best.value("mode", std::string("max")) == "min";
  for (auto it = best_metrics.begin(); it != best_metrics.end(); ++it) {
    const bool judged = it.key() == chosen_by;
    std::string note = whose;
    if (judged && !last)
      note += fmt::format(", chosen by the {} {}validation {}", lowest ? "lowest" : "highest",
                          ema ? "EMA " : "", it.key());
    if (judged && ema)  // the model's own best, from its curve
      if (const MetricSeries* own = run.find("val_" + it.key()); own && !own->value.empty()) {
        double top = own->value.front();
        for (double v : own->value)
          if (std::isfinite(v) && (lowest ? v < top : v > top)) top = v;
        note += "; the model's own best: " + number3(top);
      }
    const std::string label = (judged ? "Best " : "") + it.key() + (ema && !last ? " (EMA)" : "");
    html += html::card("card-best-" + it.key(), label, value_text(*it), note,
                       it->is_number() ? fmt::format("{}", it->get<double>()) : "");
  }
  if (best_metrics.empty()) {  // no summary's metrics (a failed run): the last epoch's
    for (const auto& s : run.series)
      if (s.per_epoch && s.key.rfind("val_", 0) == 0 && !s.value.empty())
        html += html::card("card-last-" + s.key.substr(4), "Last " + s.key.substr(4),
                           number3(s.value.back()), "validation, last epoch",
                           fmt::format("{}", s.value.back()));
  }
  return html;
}

// What ran: speed, time, device and world, batch, precision as run (and why when it is not the
// config's), memory per rank. Keys a summary lacks (a failed run) are left out.
std::string run_cards(const json& summary) {
  std::string html;
  if (summary.contains("train_images_per_s")) {
    const auto speed = number_of(summary, "train_images_per_s");  // null: too short to measure
    html += html::card(
        "card-speed", "Training speed", speed ? html::si3(*speed) + " images/s" : "n/a",
        speed ? "steady state, all processes" : "too few steps to measure past the warm-up",
        speed ? fmt::format("{}", *speed) : "");
  }
  if (const auto seconds = number_of(summary, "seconds")) {
    const auto steps = number_of(summary, "optimizer_steps");
    html += html::card("card-time", "Wall time", html::duration_text(*seconds),
                       steps ? fmt::format("{:.0f} optimizer steps", *steps) : "");
  }
  const auto world = number_of(summary, "world_size");
  if (world || summary.contains("device"))
    html += html::card(
        "card-device", "Device", summary.value("device", std::string("n/a")),
        world ? (*world == 1 ? std::string("1 process") : fmt::format("{:.0f} processes", *world))
              : "");
  if (const auto global = number_of(summary, "global_batch")) {
    const auto per = number_of(summary, "batch_size"),
               accum = number_of(summary, "grad_accum_steps");
    std::string how;
    if (per && world)
      how = fmt::format("{:.0f} per process x {:.0f} process{}", *per, *world,
                        *world == 1 ? "" : "es") +
            (accum && *accum > 1 ? fmt::format(" x {:.0f} accumulation steps", *accum) : "");
    html += html::card("card-batch", "Global batch", fmt::format("{:.0f}", *global), how);
  }
  if (summary.contains("precision")) {
    const std::string ran = summary.value("precision", ""),
                      asked = summary.value("precision_config", ran);
    html +=
        html::card("card-precision", "Precision", ran,
                   asked != ran ? "config: " + asked + "; " + summary.value("precision_reason", "")
                                : "as configured");
  }
  if (const auto rss = number_of(summary, "peak_rss_mib_all_ranks"))
    html += html::card("card-memory", "Peak memory per process",
                       number3(*rss / std::max(1.0, world.value_or(1.0))) + " MiB",
                       "host (resident), mean of the processes' peaks");
  if (const auto gpu = number_of(summary, "peak_gpu_mib"); gpu && *gpu > 0)
    html += html::card("card-gpu-memory", "Peak GPU memory", number3(*gpu) + " MiB",
                       "rank 0, allocated by tensors");
  return html;
}

// What was trained on what: the backbone, its size and input, the dataset's splits and classes
// (summary.json's model and dataset, written as the run starts).
std::string model_data_cards(const json& summary,
                             const std::map<std::string, std::string>& config) {
  std::string html;
  const json model = summary.value("model", json::object());
  const json data = summary.value("dataset", json::object());
  const auto at = [&](const char* key) {
    const auto it = config.find(key);
    return it == config.end() ? std::string() : it->second;
  };
  std::string backbone = model.value("backbone", at("model.backbone"));
  if (!backbone.empty()) {
    const auto unset = [](const std::string& v) {
      return v.empty() || v == "null" || v == "false";
    };
    std::string note = unset(at("model.pretrained")) ? "fresh initialisation"
                                                     : "pretrained: " + at("model.pretrained");
    if (!unset(at("model.init_from"))) note = "started from " + at("model.init_from");
    html += html::card("card-model", "Backbone", backbone, note);
  }
  if (const auto params = number_of(model, "parameters")) {
    const auto trainable = number_of(model, "trainable_parameters");
    html += html::card("card-parameters", "Parameters", html::si3(*params),
                       trainable && *trainable != *params
                           ? html::si3(*trainable) + " trainable (model.freeze)"
                           : "all trainable",
                       fmt::format("{}", *params));
  }
  if (const json size = summary.value("input_size", json()); size.is_array() && !size.empty()) {
    std::string text;
    for (const auto& d : size) text += (text.empty() ? "" : " x ") + value_text(d);
    html += html::card("card-input", "Input", text, "channels x height x width");
  }
  if (!data.empty()) {
    std::string sizes;
    for (const char* split : {"train", "val", "test"})
      if (const auto n = number_of(data, split))
        sizes += fmt::format("{}{} {:.0f}", sizes.empty() ? "" : " · ", split, *n);
    html += html::card("card-data", "Images", sizes, data.value("name", std::string()));
    if (const auto classes = number_of(data, "classes"))
      html += html::card("card-classes", "Classes", fmt::format("{:.0f}", *classes),
                         at("task") == "multilabel" ? "multi-label" : "one per image");
  }
  return html;
}

// train.profile's window (summary.json's profile): the per-step figures as cards, the ops with
// the most self time (and on a GPU the longest kernels) as tables; "" without a profile.
std::string profile_section(const json& summary) {
  const json profile = summary.value("profile", json());
  if (!profile.is_object()) return "";
  const int64_t first = profile.value("first_step", int64_t{0}),
                steps = profile.value("steps", int64_t{0});
  std::string html = fmt::format(
      "<section id=\"profile\"><details open><summary>Profile of optimizer steps {}-{} "
      "(train.profile: profile/trace.json, profile/summary.md)</summary><div class=\"cards\">",
      first, first + steps - 1);
  const auto figure = [&](const char* key, const std::string& label, const std::string& unit,
                          const std::string& note) {
    if (const auto v = number_of(profile, key))
      html += html::card("card-profile-" + std::string(key), label, number3(*v) + unit, note,
                         fmt::format("{}", *v));
  };
  figure("host_ms_per_step", "Host time a step", " ms", "from the first batch in hand to the end");
  figure("between_steps_ms", "Between steps", " ms", "the next batch and the loop (median)");
  figure("host_ops_per_step", "Host ops a step", "", "nested ones too");
  figure("device_reads_per_step", "Device reads a step", "", "aten::_local_scalar_dense");
  figure("kernels_per_step", "GPU kernels a step", "", "");
  figure("gpu_ms_per_step", "GPU time a step", " ms", "in kernels");
  figure("syncs_per_step", "Host waits a step", "", "synchronize, synchronous copies");
  html += "</div>";
  const auto table = [&](const char* key, const char* id, const std::string& what,
                         const char* time_key) {
    const json rows = profile.value(key, json::array());
    if (rows.empty()) return;
    html += std::string("<table id=\"") + id + "\"><tr><th>" + what +
            "</th><th>calls a step</th><th>ms a step</th><th>share</th></tr>";
    for (const json& row : rows)
      html += "<tr><td>" + escape(row.value("name", std::string())) + "</td><td>" +
              number3(row.value("calls_per_step", 0.0)) + "</td><td>" +
              number3(row.value(time_key, 0.0)) + "</td><td>" +
              fmt::format("{:.1f}%", 100 * row.value("share", 0.0)) + "</td></tr>";
    html += "</table>";
  };
  table("top_host_ops", "profile-ops", "host op (self time)", "self_ms_per_step");
  table("top_kernels", "profile-kernels", "GPU kernel", "gpu_ms_per_step");
  return html + "</details></section>";
}

// env.json as rows; a nested object (libraries, world) as one line a key, wrapped in its cell.
std::string environment_section(const json& env) {
  std::string html =
      "<section><details open><summary>Environment</summary><table class=\"env\" "
      "id=\"environment\">";
  if (env.is_object())
    for (auto it = env.begin(); it != env.end(); ++it) {
      std::string value;
      if (it->is_object()) {
        for (auto inner = it->begin(); inner != it->end(); ++inner)
          value += escape(inner.key() + ": " + value_text(*inner)) + "<br>";
      } else {
        value = escape(it->is_string() ? it->get<std::string>() : it->dump());
      }
      html += "<tr><td>" + escape(it.key()) + "</td><td>" + value + "</td></tr>";
    }
  return html + "</table></details></section>";
}

std::string status_badge(const std::string& status) {
  const std::string cls =
      status.rfind("finished", 0) == 0 ? "ok"
      : status.rfind("stopped", 0) == 0 || status.rfind("interrupted", 0) == 0 ||
              status.rfind("pruned", 0) == 0 || status.rfind("requeued", 0) == 0 ||
              status.rfind("running", 0) == 0
          ? "warn"
          : "bad";
  return "<span class=\"status " + cls + "\">" + escape(status) + "</span>";
}

std::string header(const fs::path& run_dir, const std::string& name, const std::string& status,
                   const json& summary) {
  std::string html = "<header><h1>" + escape(name) + "</h1><div class=\"meta\">" +
                     status_badge(status) + escape(run_dir.string());
  if (const auto seconds = number_of(summary, "seconds"))
    html += " &middot; " + html::duration_text(*seconds);
  html += "</div><div class=\"meta\"><code>" + escape(read_text(run_dir / "command.txt")) +
          "</code></div>";
  // model.init_from: the run it started from (run.json records it as the run starts).
  const json init_from = read_json_or_empty(run_dir / "run.json").value("init_from", json());
  if (init_from.is_object())
    html += "<div class=\"meta\" id=\"init-from\">started from " +
            escape(init_from.value("file", std::string("?"))) + " (" +
            escape(init_from.value("weights", std::string("?"))) + " weights of " +
            escape(init_from.value("source", std::string("?"))) + ")</div>";
  // launch.max_restarts: each time the run started again, and why.
  for (const json& restart : summary.value("restarts", json::array()))
    html += "<div class=\"meta\" id=\"restart\">restarted after " +
            escape(restart.value("cause", std::string("?"))) +
            (restart.contains("resumed_at")
                 ? " &middot; resumed at epoch " +
                       value_text(restart["resumed_at"].value("epoch", json())) +
                       ", optimizer step " + value_text(restart["resumed_at"].value("step", json()))
                 : std::string()) +
            "</div>";
  return html + "</header>";
}

}  // namespace

void write_run_report(const fs::path& run_dir, const std::string& status) {
  const std::string name = experiment_name(run_dir);
  const json summary = read_summary(run_dir);
  const auto config = flat_config(run_dir);
  const RunSeries run = read_run_series(run_dir);
  std::string body = header(run_dir, name, status, summary) + "<main>";
  body += "<section><h2>Result</h2><div class=\"cards\" id=\"best-metrics\">" +
          best_cards(summary, run, config) + run_cards(summary) + "</div></section>";
  const std::string model_data = model_data_cards(summary, config);
  if (!model_data.empty())
    body += "<section><h2>Model and data</h2><div class=\"cards\" id=\"model-data\">" + model_data +
            "</div></section>";
  body += "<section><h2>Curves</h2><div class=\"charts\" id=\"charts\"></div></section>";
  body += classification_section(run.best, read_json_or_empty(run_dir / "best_examples.json"));
  body += profile_section(summary);
  const std::string batch_png = read_text(run_dir / "batch.png");
  if (!batch_png.empty())  // written at the run's start (runner show-batch draws the same)
    body +=
        "<section><details><summary>The first training batch, as the model gets it "
        "(batch.png)</summary><img alt=\"first training batch\" style=\"max-width:100%\" "
        "src=\"data:image/png;base64," +
        util::base64(batch_png) + "\"></details></section>";
  body += "<section><details><summary>Resolved config (config.yaml)</summary><pre>" +
          escape(read_text(run_dir / "config.yaml")) + "</pre></details></section>";
  body += environment_section(read_json_or_empty(run_dir / "env.json")) + "</main>";
  const json data = {{"charts", report_charts(run, summary.value("precision", ""))}};
  util::write_file_atomically(
      (run_dir / "report.html").string(),
      html::page(name + " - runner report", body, data.dump(), {"charts.js", "report.js"}));
}

}  // namespace runner::output
