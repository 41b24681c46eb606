#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/cuda.h>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/relaunch.hpp"
#include "cli/run_flags.hpp"
#include "config/experiment.hpp"
#include "config/experiment_options.hpp"
#include "config/init_source.hpp"
#include "config/path_keys.hpp"
#include "config/pretrained_source.hpp"
#include "config/resume_plan.hpp"
#include "data/pipeline.hpp"
#include "dist/rendezvous_host.hpp"
#include "launch/spawn.hpp"
#include "launch/world_env.hpp"
#include "output/run_summary.hpp"
#include "run/build_run_parts.hpp"
#include "run/dry_run.hpp"
#include "run/preflight.hpp"
#include "run/run_experiment.hpp"
#include "run/run_folder_lock.hpp"
#include "run/slurm_requeue.hpp"
#include "run/start_checks.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "train/device_options.hpp"
#include "util/child_process.hpp"

namespace runner::cli {
namespace {

std::string joined(const std::string& command, const Args& args) {
  std::string out = "runner " + command;
  for (const auto& a : args) out += " " + a;
  return out;
}

// A rank other than 0 failed: its run folder says why (rank 0 wrote what it saw, often only a
// broken connection). The rank's log file (RUN_DIR/logs/rankN.log) tells where the run is.
void record_launch_failure(const launch::LaunchResult& launched) {
  if (launched.failed_rank <= 0 || launched.failed_rank_log.empty()) return;
  const util::ChildExit& failure = launched.failure;
  std::string reason =
      "rank " + std::to_string(launched.failed_rank) + " " + util::describe_exit(failure);
  // Its last words say why it exited; a killed rank's only say where it was.
  const std::string line = util::last_error_line(failure.last_lines);
  if (failure.signal == 0 && !line.empty()) reason += ": " + line;
  output::record_rank_failure(
      std::filesystem::path(launched.failed_rank_log).parent_path().parent_path(), reason);
}

// A requeued SLURM job runs its first command again: it continues that command's run folder,
// from its last.pt (as --resume) or afresh in its own output.run_dir (as --overwrite).
Args continuing_requeued_job(const run::RequeuedJob& job, const Args& args) {
  Args again;
  for (const auto& a : args)
    if (a != "--overwrite") again.push_back(a);
  if (job.resume)
    again.insert(again.end(), {"--resume", job.run_dir});
  else
    again.push_back("--overwrite");
  const char* task = std::getenv("SLURM_PROCID");  // srun ranks: say it once
  if (!task || std::string(task) == "0")
    std::cerr << "runner: SLURM job " << job.job_id << " was requeued (restart "
              << job.restart_count << "): "
              << (job.resume ? "continuing " + job.run_dir + " from its checkpoints/last.pt"
                             : "starting again in " + job.run_dir)
              << std::endl;
  return again;
}

// `text` broken into lines of at most 80 characters at its spaces (for --help).
std::string wrapped(const std::string& text) {
  std::string out, line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > 80) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

// Runs this rank, or, when the experiment wants more local processes than the launcher that
// started us provides (none), starts them: the same command line in each child.
int run_or_spawn(const config::Experiment& e, const std::string& command, const Args& args,
                 const run::RunOptions& options) {
  const config::LaunchOptions& launch = e.options.launch;
  // Before any rank starts: one line, instead of the same error from every rank.
  run::check_devices(e);
  // Ranks check nothing on disk here: rank 0 may already be writing the folder (it claims it
  // itself, run/run_folder, for ranks that another launcher started).
  const bool inside_world = launch::launched_by_runner() || launch::detect_world_env().has_value();
  // The folder is node 0's to claim (its main rank writes it): another node's launcher may
  // find it already made.
  if (!inside_world && !options.predict_only && launch.node_rank == 0) {
    run::check_output_folder(e, options);
    // A folder that exists before the ranks start is held from here, by this process and the
    // ranks it starts: a second command on it is refused before it changes anything. One that
    // does not is made (and held) by the main rank once every check passed.
    const std::string named =
        options.resume ? options.resume_dir : e.options.output.run_dir.value_or("");
    if (!named.empty() && std::filesystem::is_directory(named))
      run::hold_run_folder(named, options.command_line);
  }
  if (!inside_world) run::check_model(e);
  if (!inside_world && options.resume)
    run::check_checkpoint(
        e, (std::filesystem::path(options.resume_dir) / "checkpoints" / "last.pt").string(),
        config::world_processes(launch));
  if (!inside_world && !options.checkpoint.empty()) run::check_checkpoint(e, options.checkpoint);
  const int nproc = launch.num_processes;
  const int nnodes = launch.nnodes;
  // Several ranks, or restarts to make: runner's own launcher (a single process that may
  // restart runs as one rank of it).
  if (!inside_world && (nproc * nnodes > 1 || (launch.max_restarts > 0 && !options.predict_only))) {
    // Data that does not fit the model: one message before any rank starts, not one per rank
    // (a single process checks for itself, before it writes anything).
    for (const auto& warning : run::check_run_starts(e, options))
      std::cerr << "warning: " << warning << std::endl;
    launch::SpawnOptions so;
    so.executable = launch::self_executable();
    so.args = Args{command};
    so.args.insert(so.args.end(), args.begin(), args.end());
    so.nproc_per_node = nproc;
    so.nnodes = nnodes;
    so.node_rank = launch.node_rank;
    so.master_addr = launch.master_addr;
    so.master_port = launch.master_port;
    so.pass_on_usr1 = launch.slurm_requeue;  // SLURM's warning before the time limit
    // 0 (the default): a free port, so two runs on one machine do not collide; nodes must
    // agree on a port, so across nodes it is the conventional 29500.
    if (so.master_port == 0 && nnodes > 1) so.master_port = 29500;
    // One store for every attempt (each meets under its own prefix, launch::kAttemptVar): a
    // node whose rank restarts first finds it there while this node's last attempt still ends.
    std::unique_ptr<dist::RendezvousHost> rendezvous;
    so.host_rendezvous = [&](int port) {
      if (!rendezvous)
        rendezvous = std::make_unique<dist::RendezvousHost>(so.master_addr, port, nproc * nnodes,
                                                            launch.timeout_s);
      return rendezvous->port();
    };
    const launch::LaunchResult launched = launch_with_restarts(so, launch);
    record_launch_failure(launched);
    return launched.exit_code;
  }
  try {
    return run::run_experiment(e, options);
  } catch (const std::exception& err) {
    launch::write_torchelastic_error(err.what());
    throw;
  }
}

}  // namespace

int command_run(const Args& args) {
  CommandLine cl(
      "run", "EXPERIMENT.yaml [--set KEY=VALUE]... [--dry-run] | --resume RUN_DIR [--set ...]",
      "Validates the experiment, starts its ranks (or joins a world started by torchrun,\n"
      "srun or mpirun) and trains, keeping the best checkpoint, then predicts.\n"
      "train.batch_size is PER PROCESS: the global batch is processes x batch_size x\n"
      "grad_accum_steps.\n"
      "--resume continues a stopped run with the config saved in its folder; only\n" +
          wrapped(config::keys_a_resume_may_change_text() + " may change (recorded in its "
                                                            "run.json).") +
          "\n"
          "Ctrl-C / SIGTERM: every rank finishes its step, saves checkpoints/last.pt, "
          "summary.json\n"
          "and report.html, and runner exits 130 / 143; --resume continues. Ctrl-C again: at "
          "once.");
  add_run_flags(cl);
  add_config_dir_flag(cl);
  cl.flag("dry-run", nullptr,
          "Validate, build the model and data pipeline, print a summary and exit without training")
      .flag("overwrite", nullptr,
            "Replace the run that output.run_dir holds (without it, a new run refuses a folder "
            "that is not new or empty)")
      .flag("resume", po::value<std::string>()->implicit_value(""),
            "Continue a stopped run from its checkpoints/last.pt (default: the newest run)")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const auto files = cl.list("file");
  const bool resume = cl.values().count("resume") > 0;
  run::RunOptions options;
  options.command_line = joined("run", args);
  options.overwrite = cl.has("overwrite");
  if (resume) {
    // The run folder is the source of truth: its saved config, changed only where a stopped
    // run may change (config::plan_resume refuses the rest).
    if (files.size() > 1)
      throw ConfigError("runner run --resume: give at most one experiment file");
    auto plan = config::plan_resume(files.empty() ? "" : files[0], cl.get<std::string>("resume"),
                                    run_overrides(cl), config_dir(cl));
    config::require_paths_exist(plan.experiment, /*initial_weights=*/false);
    run::check_run_to_continue(plan);
    if (options.overwrite)
      throw ConfigError("runner run --resume " + plan.run_dir +
                        ": --overwrite replaces a run; a resume continues it: give one of them");
    options.resume = true;
    options.resume_dir = plan.run_dir;
    options.resume_changes = plan.changes;
    if (cl.has("dry-run")) {
      run::dry_run(plan.experiment, options, std::cout);
      return 0;
    }
    return run_or_spawn(plan.experiment, "run", args, options);
  }
  if (files.size() != 1)
    throw ConfigError(
        "runner run: give one experiment file (or --resume RUN_DIR); see 'runner "
        "run --help'");
  auto experiment = config::load_experiment(files[0], run_overrides(cl), config_dir(cl));
  if (const auto job = run::requeued_job(experiment); job && !cl.has("dry-run"))
    return command_run(continuing_requeued_job(*job, args));
  // Missing data or weights are a config error here, before any rank starts.
  config::require_paths_exist(experiment);
  config::resolve_pretrained(experiment);
  config::check_init_from(experiment);
  if (cl.has("dry-run")) {
    run::dry_run(experiment, options, std::cout);
    return 0;
  }
  return run_or_spawn(experiment, "run", args, options);
}

int command_predict(const Args& args) {
  CommandLine cl(
      "predict",
      "RUN_DIR [--checkpoint best|last|PATH] [--weights model|ema] [--split test|val] "
      "[--output FILE] | "
      "EXPERIMENT.yaml [--checkpoint PATH] [--output FILE] [--set KEY=VALUE]...",
      "Predicts a split (predict.split: test by default) on any number of ranks and writes\n"
      "predict.output in predict.format. Given a run folder, it uses the config the run was\n"
      "trained with and its best checkpoint (--checkpoint last for last.pt), and writes into\n"
      "RUN_DIR/predictions/. Given an experiment file without --checkpoint, the model uses the\n"
      "weights model.pretrained names (a timm checkpoint can be evaluated directly), and the\n"
      "file goes to the working folder.");
  add_run_flags(cl);
  add_config_dir_flag(cl);
  cl.flag("checkpoint", po::value<std::string>(),
          "best, last (of the run folder) or a checkpoint file (RUN/checkpoints/best.pt)")
      .flag("weights", po::value<std::string>(),
            "model or ema: the checkpoint's trained weights or train.ema's average (default: "
            "the run's train.best.weights; model for an experiment file)")
      .flag("split", po::value<std::string>(), "test or val (predict.split)")
      .flag("output", po::value<std::string>(),
            "Output file (default: predict.output, in RUN_DIR/predictions/ for a run's weights)")
      .flag("input", po::value<std::string>(),
            "A plain folder of images (no class folders) to predict instead of a split: one row "
            "per file (its path, the predicted class, every class's probability), in "
            "RUN_DIR/predictions/<folder>.csv unless --output; the run's data is not read")
      .positional("file", 1);
  if (!cl.parse(args)) return 0;
  const std::string given = cl.only("file", "run folder or experiment file");
  auto overrides = run_overrides(cl);
  if (cl.has("split")) {
    const auto split = cl.get<std::string>("split");
    if (split != "test" && split != "val")
      throw ConfigError("runner predict: --split " + split + ": expected test or val");
    overrides.push_back("predict.split=" + split);
  }
  run::RunOptions options;
  options.command_line = joined("predict", args);
  options.predict_only = true;
  if (cl.has("output"))
    options.predict_output = std::filesystem::absolute(cl.get<std::string>("output")).string();
  if (cl.has("input"))
    options.predict_input = std::filesystem::absolute(cl.get<std::string>("input")).string();
  // A folder given: the run's data need not be on this machine.
  const auto require_data = [&](const config::Experiment& e) {
    if (options.predict_input.empty()) config::require_paths_exist(e);
  };
  std::string checkpoint = cl.get_or<std::string>("checkpoint", "");
  if (cl.has("weights")) {
    options.weights = cl.get<std::string>("weights");
    if (options.weights != "model" && options.weights != "ema")
      throw ConfigError("runner predict: --weights " + options.weights + ": expected model or ema");
  }
  if (config::is_run_folder(given)) {
    // The run folder is the source of truth: the config it was trained with, its weights.
    auto experiment = config::load_run_experiment(given, overrides, config_dir(cl));
    require_data(experiment);
    if (!cl.has("weights")) options.weights = experiment.options.train.best.weights;
    const auto dir = std::filesystem::path(given) / "checkpoints";
    if (checkpoint.empty()) checkpoint = std::filesystem::exists(dir / "best.pt") ? "best" : "last";
    if (checkpoint == "best" || checkpoint == "last") {
      const auto file = dir / (checkpoint + ".pt");
      if (!std::filesystem::exists(file))
        throw ConfigError("runner predict " + given + ": no checkpoints/" + checkpoint +
                          ".pt in the run folder" + [&] {
                            const std::string why =
                                config::removed_checkpoint_reason(given, checkpoint + ".pt");
                            return why.empty() ? std::string(" (did the run save one?)") : why;
                          }());
      checkpoint = file.string();
    }
    options.checkpoint = checkpoint;
    return run_or_spawn(experiment, "predict", args, options);
  }
  auto experiment = config::load_experiment(given, overrides, config_dir(cl));
  require_data(experiment);
  if (checkpoint == "best" || checkpoint == "last")
    throw ConfigError("runner predict --checkpoint " + checkpoint +
                      ": best and last name a run folder's checkpoints; give the run folder "
                      "(runner predict RUN_DIR) or a checkpoint file");
  if (checkpoint.empty()) {
    config::resolve_pretrained(experiment);
    config::check_init_from(experiment);
  }
  options.checkpoint = checkpoint;
  return run_or_spawn(experiment, "predict", args, options);
}

}  // namespace runner::cli
