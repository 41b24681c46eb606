#include "sweep/summary_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "runner/error.hpp"

namespace runner::sweep {
namespace {

using nlohmann::json;

std::optional<double> number_at(const json& j, const char* key) {
  if (j.contains(key) && j.at(key).is_number()) return j.at(key).get<double>();
  return std::nullopt;
}

std::string shown(const std::optional<double>& v, const char* format) {
  return v ? fmt::format(format, *v) : std::string("n/a");
}

// Every validation metric any point reported, in first-seen order.
std::vector<std::string> metric_names(const std::vector<PointRow>& rows) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    for (const auto& [k, v] : r.val_metrics.items())
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  return names;
}

// Whole or not at all, and several sweeps on one folder may write at once: each through a
// temporary file of its own, renamed over the last.
void write_file(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + "." + std::to_string(::getpid()) + ".tmp";
  std::ofstream out(tmp);
  out << text;
  out.close();
  std::error_code ec;
  if (out) std::filesystem::rename(tmp, path, ec);
  if (!out || ec) {
    std::filesystem::remove(tmp, ec);
    throw Error("runner sweep: cannot write " + path.string() + ": check the output folder");
  }
}

}  // namespace

void fill_from_summary(PointRow& row, const json& summary) {
  if (summary.contains("world_size")) row.processes = summary.at("world_size").get<int>();
  if (summary.contains("batch_size"))
    row.batch_size = std::to_string(summary.at("batch_size").get<int64_t>());
  if (summary.contains("global_batch"))
    row.global_batch = summary.at("global_batch").get<int64_t>();
  if (summary.contains("precision")) row.precision = summary.at("precision").get<std::string>();
  row.images_per_s = number_at(summary, "train_images_per_s");
  row.epoch_seconds = number_at(summary, "mean_epoch_seconds");
  row.peak_host_mib = number_at(summary, "peak_rss_mib_all_ranks");
  row.peak_gpu_mib = number_at(summary, "peak_gpu_mib_all_ranks");
  if (summary.contains("last_metrics") && summary.at("last_metrics").is_object())
    row.val_metrics = summary.at("last_metrics");
  if (summary.contains("best") && summary.at("best").is_object()) {
    const json& best = summary.at("best");
    row.best_value = number_at(best, "value");
    row.best_mode = best.value("mode", "max");
    row.best_metric = best.value("metric", "");
  }
}

std::vector<PointRow> ranked(const std::vector<PointRow>& rows) {
  std::vector<PointRow> out = rows;
  // Points ranked by different directions (a sweep over train.best.*) are grouped by direction
  // first, so the order stays well defined.
  std::stable_sort(out.begin(), out.end(), [](const PointRow& a, const PointRow& b) {
    if (!a.best_value || !b.best_value) return a.best_value.has_value() && !b.best_value;
    if (a.best_mode != b.best_mode) return a.best_mode < b.best_mode;
    return a.best_mode == "min" ? *a.best_value < *b.best_value : *a.best_value > *b.best_value;
  });
  return out;
}

std::string best_column(const std::vector<PointRow>& rows) {
  for (const auto& r : rows)
    if (!r.best_metric.empty()) return "best " + r.best_metric;
  return "best";
}

std::vector<std::vector<std::string>> table_cells(const std::vector<PointRow>& rows) {
  const auto metrics = metric_names(rows);
  std::vector<std::string> header = {"point",        "rank",      "processes",      "batch/process",
                                     "global batch", "precision", "images/s",       "epoch s",
                                     "host MiB",     "GPU MiB",   best_column(rows)};
  for (const auto& m : metrics) header.push_back("val " + m);
  // A search's trials: the epochs each trained of its train.epochs (a pruned one stopped early).
  const bool epochs = std::any_of(rows.begin(), rows.end(),
                                  [](const PointRow& r) { return r.epochs_run.has_value(); });
  if (epochs) header.push_back("epochs");
  header.push_back("status");
  // Rank 1 is the best value of train.best.metric; points without one have no rank.
  const std::vector<PointRow> order = ranked(rows);
  std::map<std::string, size_t> rank_of;
  for (size_t i = 0; i < order.size() && order[i].best_value; ++i) rank_of[order[i].id] = i + 1;
  std::vector<std::vector<std::string>> cells = {header};
  for (const auto& r : rows) {
    const auto rank = rank_of.find(r.id);
    std::vector<std::string> line = {r.id,
                                     rank == rank_of.end() ? "n/a" : std::to_string(rank->second),
                                     std::to_string(r.processes),
                                     r.batch_size,
                                     r.global_batch > 0 ? std::to_string(r.global_batch) : "n/a",
                                     r.precision,
                                     shown(r.images_per_s, "{:.0f}"),
                                     shown(r.epoch_seconds, "{:.1f}"),
                                     shown(r.peak_host_mib, "{:.0f}"),
                                     shown(r.peak_gpu_mib, "{:.0f}"),
                                     shown(r.best_value, "{:.4f}")};
    for (const auto& m : metrics) {
      const bool has = r.val_metrics.contains(m) && r.val_metrics.at(m).is_number();
      line.push_back(has ? fmt::format("{:.4f}", r.val_metrics.at(m).get<double>()) : "n/a");
    }
    if (epochs)
      line.push_back(r.epochs_run ? fmt::format("{}/{}", *r.epochs_run, r.epochs_planned) : "n/a");
    line.push_back(r.status == "failed" && !r.reason.empty() ? "failed: " + r.reason : r.status);
    cells.push_back(line);
  }
  return cells;
}

std::string console_table(const std::vector<PointRow>& rows) {
  const auto cells = table_cells(rows);
  std::vector<size_t> width(cells.front().size(), 0);
  // The status column (last) is left unpadded: a failure reason may be long.
  for (const auto& line : cells)
    for (size_t c = 0; c + 1 < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    for (size_t c = 0; c < cells[i].size(); ++c) {
      const bool left = c == 0 || c + 1 == cells[i].size();
      out += c + 1 == cells[i].size() ? cells[i][c]
             : left                   ? fmt::format("{:<{}}  ", cells[i][c], width[c])
                                      : fmt::format("{:>{}}  ", cells[i][c], width[c]);
    }
    out += "\n";
    if (i == 0) {
      size_t total = 0;
      for (size_t c = 0; c + 1 < width.size(); ++c) total += width[c] + 2;
      out += std::string(total + 6, '-') + "\n";
    }
  }
  return out;
}

std::string csv_table(const std::vector<PointRow>& rows) {
  std::string out;
  for (const auto& line : table_cells(rows)) {
    for (size_t c = 0; c < line.size(); ++c) {
      const std::string& v = line[c];
      const bool quote = v.find_first_of(",\"\n") != std::string::npos;
      std::string cell = v;
      if (quote) {
        cell.clear();
        for (char ch : v) cell += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        cell = "\"" + cell + "\"";
      }
      out += (c ? "," : "") + cell;
    }
    out += "\n";
  }
  return out;
}

std::string markdown_table(const std::vector<PointRow>& rows) {
  const auto cells = table_cells(rows);
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    out += "|";
    for (size_t c = 0; c < cells[i].size(); ++c) {
      std::string v = cells[i][c];
      std::string escaped;
      for (char ch : v) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
      out += " " + escaped + " |";
    }
    out += "\n";
    if (i == 0) {
      out += "|";
      for (size_t c = 0; c < cells[i].size(); ++c)
        out += (c == 0 || c + 1 == cells[i].size()) ? "---|" : "---:|";
      out += "\n";
    }
  }
  return out;
}

void write_summary(const std::filesystem::path& dir, const std::string& title,
                   const std::vector<PointRow>& rows) {
  std::filesystem::create_directories(dir);
  write_file(dir / "summary.csv", csv_table(rows));
  write_file(dir / "summary.md", "# " + title + "\n\n" + markdown_table(rows));
}

}  // namespace runner::sweep
