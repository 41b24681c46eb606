#include "run/train_run.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>

#include "dist/world.hpp"
#include "launch/world_env.hpp"
#include "output/metrics_writer.hpp"
#include "output/run_recorder.hpp"
#include "output/summary_writer.hpp"
#include "output/tracker_set.hpp"
#include "run/build_run_parts.hpp"
#include "run/kept_checkpoints.hpp"
#include "run/predict_run.hpp"
#include "run/rank_setup.hpp"
#include "run/run_folder.hpp"
#include "run/run_trackers.hpp"
#include "run/show_batch.hpp"
#include "run/slurm_requeue.hpp"
#include "train/device_options.hpp"
#include "train/stop_request.hpp"
#include "train/training_loop.hpp"
#include "util/signal_names.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The images the model takes, as one training sample comes out of the train transforms:
// [channels, height, width] (export writes it into the model's metadata).
json input_size(const train::RunParts& parts, uint64_t seed) {
  if (!parts.splits.train) return nullptr;
  for (size_t i = 0; i < parts.splits.train->size(); ++i) {
    data::Sample sample;
    try {  // the checks before training let only data.on_bad_image skip's files through
      sample = parts.splits.train->get(i);
    } catch (const DataError&) {
      continue;
    }
    parts.train_pipeline.apply(sample, seed, 0, i);
    return {sample.image.channels(), sample.image.rows, sample.image.cols};
  }
  return nullptr;
}

// batch.png: the first training batch as the model gets it, for the report. A picture, not a
// record of the run: one that cannot be made or written is a warning and the run goes on.
void write_first_batch(const train::RunParts& parts, const config::ExperimentOptions& experiment,
                       const std::string& run_dir) {
  try {
    write_batch_grid(first_batch(parts, experiment, "train", 16), fs::path(run_dir) / "batch.png");
  } catch (const Error& e) {
    spdlog::warn("no batch.png: {}", e.what());
  }
}

// The backbone and its size, for the report's model card.
json model_fields(const train::RunParts& parts) {
  const auto [all, trainable] = count_parameters(*parts.model);
  return {
      {"backbone", parts.about.backbone}, {"parameters", all}, {"trainable_parameters", trainable}};
}

// The dataset's splits (data.limit applied) and classes, for the report's data card.
json dataset_fields(const train::RunParts& parts) {
  const auto size = [](const std::shared_ptr<data::Dataset>& split) {
    return split ? json(split->size()) : json(0);
  };
  json fields = {{"name", parts.about.dataset},
                 {"train", size(parts.splits.train)},
                 {"val", size(parts.splits.val)},
                 {"test", size(parts.splits.test)}};
  if (parts.about.model_options && parts.about.model_options->num_classes > 0)
    fields["classes"] = parts.about.model_options->num_classes;
  else if (!parts.splits.class_names.empty())
    fields["classes"] = parts.splits.class_names.size();
  return fields;
}

// What every summary.json of the run says, however it ends.
json summary_base(const RankSetup& setup, const config::ExperimentOptions& experiment,
                  const train::RunParts& parts, const std::string& run_dir) {
  const int64_t batch = *experiment.train.batch_size;
  const int64_t accum = experiment.train.grad_accum_steps;
  const int world_size = setup.rank.world->world_size();
  return {{"run_dir", run_dir},
          {"world_size", world_size},
          {"started_by", started_by(*setup.rank.world)},
          {"precision", config::precision_name(setup.rank.precision)},
          {"precision_config", config::precision_name(experiment.precision)},
          {"precision_reason", setup.precision_reason},
          {"device", setup.rank.device.str()},
          {"grad_accum_steps", accum},
          {"batch_size", batch},
          {"global_batch", config::global_batch(batch, world_size, accum)},
          {"input_size", input_size(parts, experiment.seed)},
          {"model", model_fields(parts)},
          {"dataset", dataset_fields(parts)}};
}

// What the run knows once its best weights are evaluated, beside the loop's own account
// (on_training): kept in summary.json however the run ends after it (a prediction that fails
// does not take the training's results).
json trained_fields(const train::MetricValues& last, const train::MetricValues& best,
                    const train::RunParts& parts, const torch::Device& device) {
  return {{"last_metrics", last},
          {"best_metrics", best},
          {"peak_gpu_mib", train::peak_gpu_mib(device)},  // rank 0's GPU; 0 on CPU
          // launch.cudnn_benchmark, train.deterministic as libtorch was really set.
          {"torch_settings",
           {{"cudnn_benchmark", at::globalContext().benchmarkCuDNN()},
            {"deterministic_algorithms", at::globalContext().deterministicAlgorithms()}}},
          // train.channels_last as run.
          {"model_memory_format", train::memory_format_of(*parts.model)}};
}

// The run folder's files, written by the main process alone: summary.json first, then the
// records and report.html, which shows what summary.json says; then the trackers, which are
// offered those files once they are final.
void add_observers(output::ObserverChain& observers, const RankSetup& setup,
                   const config::ExperimentOptions& experiment, const json& resolved,
                   const train::RunParts& parts, const std::string& run_dir, const json& restarts) {
  json base = summary_base(setup, experiment, parts, run_dir);
  if (!restarts.empty()) base["restarts"] = restarts;
  observers.add(std::make_unique<output::SummaryWriter>(run_dir, base));
  std::vector<std::string> metric_names;
  for (const auto& m : parts.metrics) metric_names.push_back(m->name());
  if (experiment.train.ema.enabled) {  // the average's validation: metrics.csv's ema_val_*
    metric_names.push_back("ema_loss");
    for (const auto& m : parts.metrics)
      if (m->name() != "loss") metric_names.push_back("ema_" + m->name());
  }
  observers.add(std::make_unique<output::RunRecorder>(
      run_dir, output::RecorderOptions{
                   metric_names, experiment.data.on_bad_image == "skip"
                                     ? std::vector<std::string>{"skipped_train", "skipped_val"}
                                     : std::vector<std::string>{}}));
  const dist::World& world = *setup.rank.world;
  trackers::RunStart start =
      tracker_run_start(resolved, run_dir,
                        {{"runner.world_size", std::to_string(world.world_size())},
                         {"runner.started_by", started_by(world)},
                         {"runner.device", setup.rank.device.str()},
                         {"runner.precision", config::precision_name(setup.rank.precision)}});
  observers.add(std::make_unique<output::TrackerSet>(
      make_trackers(resolved, run_dir), std::move(start),
      experiment.predict.enabled ? experiment.predict.output : ""));
}

// SLURM's SIGUSR1 before the time limit (launch.slurm_requeue), with the work saved: the run
// is marked requeued before the job is requeued (SLURM then ends this job at once), and the
// requeued job continues it (run/slurm_requeue). When SLURM refuses, it is an interrupted run.
int record_requeue(output::StopRecord stop, output::RunObserver& observer, dist::World& world) {
  std::string refused;
  dist::on_main_process(world, [&] {
    stop.status = "requeued";
    observer.on_stop(stop);
    spdlog::warn(
        "SLURM's time limit is near ({}): stopped at {} with checkpoints/last.pt saved; "
        "requeueing the job, which continues this run",
        stop.signal, stop.stopped_at);
    refused = requeue_this_job();
    if (refused.empty()) return;
    stop.status = "interrupted";
    observer.on_stop(stop);
    spdlog::error("the job could not be requeued: {}; continue with {}", refused,
                  stop.resume_command);
  });
  refused = dist::broadcast_text(world, refused);
  return refused.empty() ? 0 : train::exit_code_for_stop(SIGUSR1);
}

// Stopped by a signal with its work saved: the run folder says where and how to go on.
int record_stop(const train::TrainingLoop& loop, int signo, output::RunObserver& observer,
                dist::World& world, const std::string& run_dir) {
  const train::TrainingPosition& p = loop.position();
  output::StopRecord stop;
  stop.signal = util::signal_name(signo);
  stop.stopped_at = "epoch " + std::to_string(p.epoch + 1) + ", batch " +
                    std::to_string(p.batches_done) + ", optimizer step " +
                    std::to_string(p.optimizer_steps);
  stop.resume_command = "runner run --resume " + run_dir;
  stop.optimizer_steps = p.optimizer_steps;
  stop.seconds = loop.run_seconds();
  if (signo == SIGUSR1) return record_requeue(stop, observer, world);
  dist::on_main_process(world, [&] { observer.on_stop(stop); });
  if (world.is_main())
    spdlog::warn("interrupted by {} at {}; the run folder keeps its work: continue with {}",
                 stop.signal, stop.stopped_at, stop.resume_command);
  return train::exit_code_for_stop(signo);
}

}  // namespace

int train_run(const RankSetup& setup, const config::ExperimentOptions& experiment,
              const json& resolved, train::RunParts& parts, const RunOptions& options,
              const std::string& run_dir) {
  dist::World& world = *setup.rank.world;
  const bool main = world.is_main();
  const config::TrainOptions& train = experiment.train;
  train::BatchSource batches(setup.rank, parts, experiment.data, experiment.seed);
  train::Evaluator evaluator(setup.rank, parts, batches,
                             train.eval_batch_size.value_or(2 * *train.batch_size),
                             train.log_every_steps, train::evaluation_views(experiment));
  output::ObserverChain observers;  // filled once the run is the folder's to write
  train::TrainingLoop loop(setup.rank, parts, experiment, batches, evaluator, observers,
                           (fs::path(run_dir) / "checkpoints").string());
  // From here a SIGINT/SIGTERM stops the run at the next step with its work saved (runner's
  // launcher says so itself, once for all ranks).
  train::StopRequestHandler stop_handler(main && !launch::launched_by_runner(),
                                         experiment.launch.slurm_requeue);
  json restarts = restarts_so_far();  // launch.max_restarts: the attempts before this one
  if (options.resume) {
    // Until its checkpoint has loaded a resume has changed nothing but command.txt: a damaged
    // or refused checkpoint leaves the run it could not continue as it was.
    loop.resume();
    if (!restarts.empty())
      restarts.back()["resumed_at"] = {{"epoch", loop.position().epoch + 1},
                                       {"step", loop.position().optimizer_steps}};
    commit_resume(run_dir, options, world, restarts);
  } else {
    dist::on_main_process(world, [&] {
      write_class_names(run_dir, parts.splits.class_names);
      write_first_batch(parts, experiment, run_dir);
    });
  }
  if (main) add_observers(observers, setup, experiment, resolved, parts, run_dir, restarts);

  json trained;  // what the training got to, kept however the run ends after it
  std::string stage = "train";
  train::MetricValues best;
  bool best_loaded = false;  // false: no validation picked best weights, the last ones predict
  bool pruned = false;       // a sweep's search stopped this trial (search: optuna)
  try {
    const train::FitResult fit = loop.fit();
    if (fit.stopped_by) return record_stop(loop, fit.stopped_by, observers, world, run_dir);
    pruned = fit.pruned;
    stage = "evaluate";
    best_loaded = loop.load_best();
    if (!best_loaded && main)
      spdlog::warn("no best weights: {}; the last weights are evaluated and predict",
                   parts.splits.val && parts.splits.val->size() > 0
                       ? "no validation ran before the run ended (train.max_steps ended it "
                         "inside its first epoch)"
                       : "the run has no validation split");
    best = evaluator.evaluate().metrics;
    trained = trained_fields(fit.last, best, parts, setup.rank.device);
    trained["evaluated_weights"] = best_loaded ? "best" : "last";
    stage = "predict";
    const config::PredictOptions& predict = experiment.predict;
    if (predict.enabled && !fit.pruned) {  // a pruned trial's predictions answer nothing
      predict_split(evaluator, setup, parts, predict.split, predict.output, predict.format,
                    run_dir);
      const auto& predicted = predict.split == "test" ? parts.splits.test : parts.splits.val;
      trained["samples"][predict.split == "test" ? "test" : "val"] =
          predicted ? predicted->size() : 0;
    }
  } catch (const std::exception& err) {
    // A failed run's summary and report show what it got to, where and why it ended; the
    // checkpoints stay (runner predict RUN_DIR redoes a failed prediction).
    json fields = trained.is_object() ? trained : json::object();
    fields["error"] = err.what();
    fields["failed_stage"] = stage == "train" ? loop.stage() : stage;
    try {
      observers.on_end({"failed", fields, loop.position().optimizer_steps, loop.run_seconds()});
    } catch (const std::exception& e) {
      spdlog::warn("could not record the failure in {}: {}", run_dir, e.what());
    }
    throw;
  }
  // Peak memory of every rank, summed (the main process writes it).
  const double rss_total = world.all_reduce(output::peak_rss_mib(), dist::ReduceOp::kSum);
  dist::on_main_process(world, [&] {
    // train.checkpoints: what the finished run keeps. Every rank is past reading best.pt here.
    const auto kept = keep_checkpoints(run_dir, train.checkpoints);
    trained["peak_rss_mib_all_ranks"] = rss_total;
    trained["checkpoints"] = {{"policy", train.checkpoints}, {"kept", json::object()}};
    for (const auto& [name, bytes] : kept) trained["checkpoints"]["kept"][name] = bytes;
    observers.on_end({pruned ? "pruned" : "finished", trained, loop.position().optimizer_steps,
                      loop.run_seconds()});
    std::string line;
    for (const auto& [k, v] : best) line += fmt::format(" {} {:.4f}", k, v);
    const std::string weights = !best_loaded                  ? "last weights (no best.pt)"
                                : train.best.weights == "ema" ? "best averaged weights"
                                                              : "best weights";
    spdlog::info("done in {:.1f} s; {}{}; checkpoints: {}; run directory {}", loop.run_seconds(),
                 weights, line.empty() ? "" : ":" + line, checkpoints_text(kept), run_dir);
  });
  return 0;
}

}  // namespace runner::run
