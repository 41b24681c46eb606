#include "run/run_folder.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
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
#include "run/preflight.hpp"
#include "run/rank_setup.hpp"
#include "run/run_folder_lock.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"
#include "util/local_timestamp.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

std::string choose_run_dir(const config::ExperimentOptions& experiment, const RunOptions& options) {
  const config::OutputOptions& output = experiment.output;
  if (options.resume) return options.resume_dir;  // config::plan_resume checked it
  if (output.run_dir) return *output.run_dir;
  fs::path dir = fs::path(output.root) / experiment.name / util::local_timestamp();
  for (int n = 1; fs::exists(dir); ++n)
    dir = fs::path(output.root) / experiment.name /
          (util::local_timestamp() + "-" + std::to_string(n));
  return dir.string();
}

// Makes the folder a rank's files go in; a failure names it and says why.
void make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(util::write_failure(dir.string(), ec.value()));
}

// env.json: the machine, and the world that ran (which the config may not say: torchrun and
// srun decide it).
std::string run_environment(const dist::World& world) {
  nlohmann::json env = environment_report();
  env["world"] = {{"size", world.world_size()}, {"started_by", started_by(world)}};
  return env.dump(2) + "\n";
}

// command.txt's line: the command, and who started its processes when another launcher did.
std::string command_line_of(const RunOptions& options, const dist::World& world) {
  const std::string starter = started_by(world);
  if (starter == "runner") return options.command_line + "\n";
  return options.command_line + "  # started by " + starter + ", " +
         std::to_string(world.world_size()) + " processes\n";
}

// The main process makes the run's folder and writes what the run runs with; a resume only
// adds its command line (what it changes is recorded once its checkpoint is loaded).
std::string make_run_folder(const config::Experiment& e, const nlohmann::json& resolved,
                            const RunOptions& options, const dist::World& world) {
  const std::string run_dir = choose_run_dir(e.options, options);
  const fs::path dir(run_dir);
  hold_run_folder(run_dir, options.command_line);
  if (!options.resume) claim_run_folder(e, options, run_dir);
  make_folder(dir / "logs");
  make_folder(dir / "checkpoints");
  if (options.resume) {
    util::AppendFile(dir / "command.txt").append(command_line_of(options, world));
    return run_dir;
  }
  util::write_file_atomically((dir / "config.yaml").string(),
                              config::to_yaml(resolved, config::experiment_key_order()));
  util::write_file_atomically((dir / "command.txt").string(), command_line_of(options, world));
  config::write_new_run_record(run_dir, e);
  config::record_restarts(run_dir, restarts_so_far());  // a restart that found no checkpoint
  // torchrun's restarted worker groups find the run again by its id.
  if (const char* id = std::getenv("TORCHELASTIC_RUN_ID"); id && *id)
    config::record_in_run(run_dir, {{"torchelastic_run_id", id}});
  // A requeued SLURM job finds it by its job id (launch.slurm_requeue).
  if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job)
    config::record_in_run(run_dir, {{"slurm_job_id", job}});
  util::write_file_atomically((dir / "env.json").string(), run_environment(world));
  return run_dir;
}

// Every rank's log goes to RUN_DIR/logs/rankN.log from here (what it logged before is replayed
// there).
void start_rank_log(const std::string& run_dir, const dist::World& world) {
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
}

}  // namespace

std::string open_run_folder(const config::Experiment& e, const nlohmann::json& resolved,
                            const RunOptions& options, dist::World& world) {
  std::string run_dir;
  dist::on_main_process(world, [&] { run_dir = make_run_folder(e, resolved, options, world); });
  run_dir = dist::broadcast_text(world, run_dir);
  if (!options.resume) start_rank_log(run_dir, world);
  return run_dir;
}

void commit_resume(const std::string& run_dir, const RunOptions& options, dist::World& world,
                   const nlohmann::json& restarts) {
  dist::on_main_process(world, [&] {
    config::record_resume(run_dir, options.command_line, options.resume_changes);
    config::record_restarts(run_dir, restarts);
    util::write_file_atomically((fs::path(run_dir) / "env.json").string(), run_environment(world));
  });
  start_rank_log(run_dir, world);
}

std::string run_folder_to_continue(const config::Experiment& e, const std::string& key,
                                   const std::string& value) {
  if (e.options.output.run_dir) return *e.options.output.run_dir;
  std::string newest;
  fs::file_time_type newest_time{};
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(fs::path(e.options.output.root) / e.options.name, ec)) {
    std::ifstream in(entry.path() / "run.json");
    const auto record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || record.value(key, "") != value) continue;
    const auto when = fs::last_write_time(entry.path() / "run.json", ec);
    if (newest.empty() || when > newest_time) {
      newest = entry.path().string();
      newest_time = when;
    }
  }
  return newest;
}

void continue_elastic_attempt(const config::Experiment& e, RunOptions& options,
                              dist::World& world) {
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (options.resume || options.predict_only || !attempt || std::atoi(attempt) <= 0) return;
  const char* id = std::getenv("TORCHELASTIC_RUN_ID");
  std::string decision;  // "resume DIR", "fresh DIR" or ""
  dist::on_main_process(world, [&] {
    const std::string dir = run_folder_to_continue(e, "torchelastic_run_id", id ? id : "");
    if (dir.empty() || !fs::exists(fs::path(dir) / "config.yaml")) return;
    if (fs::exists(fs::path(dir) / "checkpoints" / "last.pt"))
      decision = "resume " + dir;
    else if (e.options.output.run_dir)  // its own folder: the first attempt saved nothing
      decision = "fresh " + dir;
  });
  decision = dist::broadcast_text(world, decision);
  if (decision.empty()) return;
  const std::string dir = decision.substr(decision.find(' ') + 1);
  if (decision.rfind("resume ", 0) == 0) {
    options.resume = true;
    options.resume_dir = dir;
  } else {
    options.overwrite = true;  // its own folder, from a first attempt that saved nothing
  }
  if (world.is_main())
    spdlog::warn("torchrun restart {} of run {}: {} {}", attempt, id ? id : "",
                 options.resume ? "continuing from the checkpoint of" : "starting again in", dir);
}

nlohmann::json restarts_so_far() {
  const char* text = std::getenv(launch::kRestartsVar);
  if (!text || !*text) return nlohmann::json::array();
  const auto restarts = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return restarts.is_array() ? restarts : nlohmann::json::array();
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
  dist::on_main_process(world, [&] {
    // Writing into a run's folder: not while another command (its training) writes it.
    if (fs::path(dir).filename() == "predictions")
      hold_run_folder(fs::path(dir).parent_path().string(), options.command_line);
    make_folder(dir);
  });
  return dir;
}

void write_class_names(const std::string& run_dir, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::string text;
  for (const auto& c : names) text += c + "\n";
  util::write_file_atomically((fs::path(run_dir) / "classes.txt").string(), text);
}

}  // namespace runner::run
