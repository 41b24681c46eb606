#include "sweep/sweep_runner.hpp"

#include "log/run_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "sweep/child_process.hpp"

namespace runner::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What the point asks for, before it runs (the summary.json of a finished run replaces it).
PointRow planned_row(const config::Sweep& sweep, const config::SweepPoint& point) {
  const auto e = config::load_sweep_point(sweep, point);
  PointRow row;
  row.id = point.id;
  const auto& launch = e.doc.at("launch");
  row.processes = launch.at("num_processes").get<int>() * launch.at("nnodes").get<int>();
  const auto& train = e.doc.at("train");
  const auto& batch = train.at("batch_size");
  row.batch_size =
      batch.is_number() ? std::to_string(batch.get<int64_t>()) : batch.get<std::string>();
  if (batch.is_number())
    row.global_batch =
        batch.get<int64_t>() * row.processes * train.at("grad_accum_steps").get<int64_t>();
  row.precision = e.doc.at("precision").get<std::string>();
  return row;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The validation metric the figure shows: the base's best-checkpoint metric.
std::string figure_metric(const config::Sweep& sweep) {
  if (sweep.points.empty()) return "accuracy";
  const auto e = config::load_sweep_point(sweep, sweep.points.front());
  return e.doc.at("train").at("best").at("metric").get<std::string>();
}

}  // namespace

std::string sweep_dir(const config::Sweep& sweep) {
  return (fs::path(sweep.output) / sweep.name).string();
}

int run_sweep(const config::Sweep& sweep, const SweepRunOptions& options) {
  const fs::path dir = sweep_dir(sweep);
  fs::create_directories(dir);
  const std::string metric = figure_metric(sweep);
  const std::string title = "sweep " + sweep.name;
  std::vector<PointRow> rows;
  for (const auto& p : sweep.points) rows.push_back(planned_row(sweep, p));

  // Resume: finished points keep their results; the rest start from scratch.
  for (size_t i = 0; i < rows.size(); ++i) {
    const fs::path summary = dir / sweep.points[i].id / "summary.json";
    if (!fs::exists(summary)) continue;
    const json s = read_json(summary);
    if (s.is_discarded()) continue;
    fill_from_summary(rows[i], s);
    rows[i].status = "done (earlier run)";
  }
  const auto report = [&] {
    write_summary(dir, title, rows, metric);
    std::cout << "\n" << console_table(rows) << std::flush;
  };

  bool any_failed = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& point = sweep.points[i];
    PointRow& row = rows[i];
    if (row.status == "done (earlier run)") {
      std::cout << fmt::format("sweep {}: point {}/{} {} finished earlier: skipped\n", sweep.name,
                               i + 1, rows.size(), point.id);
      continue;
    }
    const fs::path run_dir = fs::absolute(dir / point.id);
    if (fs::exists(run_dir)) {
      std::cout << fmt::format(
          "sweep {}: point {} did not finish before: rerunning it from scratch\n", sweep.name,
          point.id);
      fs::remove_all(run_dir);
    }
    std::vector<std::string> args = {"run", fs::absolute(sweep.base_path).string()};
    for (const auto& o : point.overrides) {
      args.push_back("--set");
      args.push_back(o);
    }
    args.push_back("--set");
    args.push_back("output.run_dir=" + run_dir.string());
    std::cout << fmt::format("\nsweep {}: point {}/{} {}\n", sweep.name, i + 1, rows.size(),
                             point.id)
              << std::flush;
    row.status = "running";
    const ChildExit exit = run_child(options.executable, args);
    const fs::path summary = run_dir / "summary.json";
    if (exit.interrupted) {
      row.status = "pending";
      report();
      std::cout << fmt::format(
          "sweep {}: interrupted during point {}; run the same command again to resume\n",
          sweep.name, point.id);
      return 130;
    }
    const json s = fs::exists(summary) ? read_json(summary) : json(nullptr);
    if (exit.exit_code == 0 && s.is_object()) {
      fill_from_summary(row, s);
      row.status = "done";
    } else {
      any_failed = true;
      row.status = "failed";
      const std::string how = exit.signal ? fmt::format("killed by signal {}", exit.signal)
                                          : fmt::format("exit code {}", exit.exit_code);
      const std::string line =
          exit.exit_code == 0 ? "no summary.json written" : last_error_line(exit.last_lines);
      row.reason = line.empty() ? how : how + ": " + line;
      fs::create_directories(run_dir);
      std::ofstream(run_dir / "failure.txt") << row.reason << "\n";
    }
    report();
  }
  if (rows.empty() || std::all_of(rows.begin(), rows.end(), [](const PointRow& r) {
        return r.status == "done (earlier run)";
      }))
    report();
  size_t failed = 0;
  for (const auto& r : rows) failed += r.status == "failed";
  std::vector<fs::path> point_dirs;  // report.html: the points side by side
  for (const auto& point : sweep.points)
    if (fs::exists(dir / point.id / "metrics.jsonl")) point_dirs.push_back(dir / point.id);
  if (!point_dirs.empty()) {
    try {
      log::write_comparison_report(point_dirs, dir / "report.html");
    } catch (const std::exception& e) {
      std::cout << fmt::format("sweep {}: could not write report.html: {}\n", sweep.name, e.what());
    }
  }
  std::cout << fmt::format("sweep {}: {} point(s), {} failed; summary in {}\n", sweep.name,
                           rows.size(), failed, dir.string());
  if (any_failed)
    std::cout << fmt::format(
        "sweep {}: exit code 1 because {} point(s) failed (see the status column)\n", sweep.name,
        failed);
  return any_failed ? 1 : 0;
}

}  // namespace runner::sweep
