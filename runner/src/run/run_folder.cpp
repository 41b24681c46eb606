#include "run/run_folder.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "config/experiment_keys.hpp"
#include "config/yaml_emit.hpp"
#include "dist/world.hpp"
#include "launch/world_env.hpp"
#include "log/logging.hpp"
#include "run/environment_report.hpp"
#include "runner/error.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

// Rank 0's string on every rank.
std::string broadcast_string(dist::World& world, const std::string& text) {
  if (!world.distributed()) return text;
  constexpr int64_t kMax = 4096;
  auto buffer = torch::zeros({kMax}, torch::kInt32);
  if (world.is_main()) {
    if (static_cast<int64_t>(text.size()) >= kMax)
      throw Error("run directory path too long: " + text);
    for (size_t i = 0; i < text.size(); ++i)
      buffer[i] = static_cast<int>(static_cast<unsigned char>(text[i]));
  }
  std::vector<torch::Tensor> tensors = {buffer.to(world.device())};
  world.broadcast_(tensors, 0);
  const auto received = tensors[0].cpu();
  std::string out;
  for (int64_t i = 0; i < kMax; ++i) {
    const int c = received[i].item<int>();
    if (c == 0) break;
    out += static_cast<char>(c);
  }
  return out;
}

std::string timestamp() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream ss;
  ss << std::put_time(&tm, "%Y%m%d-%H%M%S");
  return ss.str();
}

std::string choose_run_dir(const config::ExperimentOptions& experiment, const RunOptions& options) {
  const config::OutputOptions& output = experiment.output;
  if (options.resume) return options.resume_dir;  // config::plan_resume checked it
  if (output.run_dir) return *output.run_dir;
  fs::path dir = fs::path(output.root) / experiment.name / timestamp();
  for (int n = 1; fs::exists(dir); ++n)
    dir = fs::path(output.root) / experiment.name / (timestamp() + "-" + std::to_string(n));
  return dir.string();
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

std::string open_run_folder(const config::Experiment& e, const nlohmann::json& resolved,
                            const RunOptions& options, dist::World& world) {
  const std::string run_dir =
      broadcast_string(world, world.is_main() ? choose_run_dir(e.options, options) : "");
  if (world.is_main()) {
    const fs::path dir(run_dir);
    fs::create_directories(dir / "logs");
    fs::create_directories(dir / "checkpoints");
    if (options.resume) {
      // config.yaml stays what the run was trained with; run.json records what this resume
      // changed, command.txt every command that ran the folder.
      config::record_resume(run_dir, options.command_line, options.resume_changes);
      std::ofstream(dir / "command.txt", std::ios::app) << options.command_line << "\n";
    } else {
      write_text(dir / "config.yaml", config::to_yaml(resolved, config::experiment_key_order()));
      write_text(dir / "command.txt", options.command_line + "\n");
      config::write_new_run_record(run_dir, e);
    }
    write_text(dir / "env.json", environment_report().dump(2) + "\n");
  }
  world.barrier();
  const std::string log_file =
      (fs::path(run_dir) / "logs" / ("rank" + std::to_string(world.rank()) + ".log")).string();
  log::set_log_file(log_file);
  // runner's launcher shows a failed rank's last log lines from there.
  if (const char* where = std::getenv(launch::kLogPathFileVar); where && *where)
    std::ofstream(where) << fs::absolute(log_file).string() << "\n";
  // Other ranks log to their file only (their console shows warnings): say who wrote it.
  if (!world.is_main())
    spdlog::info("rank {} of {} (local rank {}), run {}", world.rank(), world.world_size(),
                 world.local_rank(), run_dir);
  return run_dir;
}

std::string open_prediction_dir(const RunOptions& options, dist::World& world) {
  std::string dir = fs::current_path().string();
  if (!options.predict_output.empty()) {
    dir = fs::path(options.predict_output).parent_path().string();
  } else if (!options.checkpoint.empty()) {
    const fs::path checkpoint = fs::absolute(options.checkpoint);
    const fs::path run = checkpoint.parent_path().parent_path();
    if (checkpoint.parent_path().filename() == "checkpoints" && fs::exists(run / "config.yaml"))
      dir = (run / "predictions").string();
  }
  if (world.is_main()) fs::create_directories(dir);
  world.barrier();
  return dir;
}

void write_class_names(const std::string& run_dir, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::ofstream classes(fs::path(run_dir) / "classes.txt");
  for (const auto& c : names) classes << c << "\n";
}

}  // namespace runner::run
