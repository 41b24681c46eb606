#include "output/run_series.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "output/run_files.hpp"

namespace runner::output {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Fields that say where a record is, not what was measured.
bool is_position(const std::string& key) {
  return key == "kind" || key == "epoch" || key == "step";
}

// Means of consecutive runs of points, so a 100,000-step run's curve stays a few thousand points.
void thin(MetricSeries& s, size_t max_points) {
  const size_t n = s.value.size();
  if (max_points == 0 || n <= max_points) return;
  const size_t per = (n + max_points - 1) / max_points;
  MetricSeries out{s.key, s.per_epoch, {}, {}, {}};
  for (size_t begin = 0; begin < n; begin += per) {
    const size_t end = std::min(n, begin + per);
    double step = 0, epoch = 0, value = 0;
    for (size_t i = begin; i < end; ++i)
      step += s.step[i], epoch += s.epoch[i], value += s.value[i];
    const double count = static_cast<double>(end - begin);
    out.step.push_back(step / count);
    out.epoch.push_back(epoch / count);
    out.value.push_back(value / count);  // NaN when one of them is: a diverged stretch shows
  }
  s = std::move(out);
}

}  // namespace

std::string MetricSeries::title() const {
  static const std::map<std::string, std::string> step_names = {
      {"loss", "training loss (per step)"},
      {"lr", "learning rate"},
      {"images_per_s", "throughput (images/s)"},
      {"data_wait", "data wait (share of the step)"},
      {"scale", "loss scale"},
      {"peak_rss_mib", "peak host memory (MiB)"}};
  static const std::map<std::string, std::string> epoch_names = {
      {"loss", "training loss (epoch mean)"},
      {"images_per_s", "throughput (images/s, epoch mean)"},
      {"epoch_seconds", "epoch time (s)"},
      {"peak_rss_mib", "peak host memory (MiB, epoch)"},
      {"peak_gpu_mib", "peak GPU memory (MiB)"}};
  const auto& names = per_epoch ? epoch_names : step_names;
  if (const auto it = names.find(key); it != names.end()) return it->second;
  if (per_epoch && key.rfind("ema_val_", 0) == 0) return "EMA validation " + key.substr(8);
  if (per_epoch && key.rfind("val_", 0) == 0) return "validation " + key.substr(4);
  return key;
}

const MetricSeries* RunSeries::find(const std::string& id) const {
  for (const auto& s : series)
    if (s.id() == id) return &s;
  return nullptr;
}

RunSeries read_run_series(const fs::path& run_dir, size_t max_points) {
  RunSeries run;
  std::vector<MetricSeries> per_step, per_epoch;
  std::map<std::string, size_t> step_index, epoch_index;
  for (const json& r : read_records(run_dir / "metrics.jsonl")) {
    const std::string kind = r.value("kind", "");
    if (kind == "best") {
      run.best = r;
      continue;
    }
    if (kind != "step" && kind != "epoch") continue;
    const bool epoch_record = kind == "epoch";
    auto& list = epoch_record ? per_epoch : per_step;
    auto& index = epoch_record ? epoch_index : step_index;
    const double step = r.value("step", NAN), epoch = r.value("epoch", NAN);
    for (auto it = r.begin(); it != r.end(); ++it) {
      if (is_position(it.key()) || !(it->is_number() || it->is_null())) continue;
      auto [at, added] = index.emplace(it.key(), list.size());
      if (added) list.push_back({it.key(), epoch_record, {}, {}, {}});
      MetricSeries& s = list[at->second];
      s.step.push_back(step);
      s.epoch.push_back(epoch);
      s.value.push_back(it->is_number() ? it->get<double>() : NAN);  // null: a non-finite value
    }
  }
  for (auto& s : per_step) thin(s, max_points);
  run.series = std::move(per_step);
  run.series.insert(run.series.end(), per_epoch.begin(), per_epoch.end());
  return run;
}

std::string chart_of(const MetricSeries& s) {
  if (s.key == "loss" || s.key == "val_loss" || s.key == "ema_val_loss") return "loss";
  if (s.per_epoch && s.key.rfind("ema_val_", 0) == 0) return "metric:" + s.key.substr(8);
  if (s.per_epoch && s.key.rfind("val_", 0) == 0) return "metric:" + s.key.substr(4);
  if (s.key == "images_per_s") return "images_per_s";
  if (s.key == "peak_rss_mib" || s.key == "peak_gpu_mib") return "memory";
  return s.id();
}

std::string format_of(const MetricSeries& s) {
  return s.key == "images_per_s" || s.key == "peak_rss_mib" || s.key == "peak_gpu_mib" ? "si"
                                                                                       : "number";
}

}  // namespace runner::output
