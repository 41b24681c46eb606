#include "run/run_experiment.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <thread>

#include <opencv2/core/utility.hpp>

#include "config/experiment_keys.hpp"
#include "config/experiment_options.hpp"
#include "config/yaml_emit.hpp"
#include "dist/world.hpp"
#include "launch/world_env.hpp"
#include "log/logging.hpp"
#include "log/native_output.hpp"
#include "output/metrics_writer.hpp"
#include "output/run_report.hpp"
#include "output/run_summary.hpp"
#include "run/auto_batch.hpp"
#include "run/build_parts.hpp"
#include "run/environment_report.hpp"
#include "run/kept_checkpoints.hpp"
#include "run/shape_checks.hpp"
#include "runner/error.hpp"
#include "runner/models/pretrained.hpp"
#include "runner/models/timm_import.hpp"
#include "runner/registries.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/stop_request.hpp"
#include "train/trainer.hpp"
#include "util/atomic_file.hpp"
#include "util/counted.hpp"
#include "util/cpu_cores.hpp"
#include "util/cpu_features.hpp"
#include "util/process_title.hpp"

namespace runner::run {
// From the layers below this one (run/ above train/ above output/).
using output::peak_rss_mib;
using train::apply_device_settings;
using train::apply_memory_format;
using train::exit_code_for_stop;
using train::load_checkpoint;
using train::memory_format_of;
using train::MetricValues;
using train::peak_gpu_mib;
using train::require_cuda_if_asked;
using train::stop_signal_name;
using train::StopRequestHandler;
using train::Trainer;
using train::TrainerParts;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Rank 0's string on every rank (run directory paths).
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
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
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

void write_report(const std::string& run_dir, const std::string& status) {
  try {
    output::write_run_report(run_dir, status);
  } catch (const std::exception& e) {
    spdlog::warn("could not write report.html: {}", e.what());
  }
}

// Where a prediction goes: beside --output; into RUN/predictions/ when the weights are a run's
// checkpoint (RUN/checkpoints/x.pt); else the working folder (predict.output relative to it).
std::string prediction_dir(const RunOptions& options) {
  if (!options.predict_output.empty())
    return fs::path(options.predict_output).parent_path().string();
  if (!options.checkpoint.empty()) {
    const fs::path checkpoint = fs::absolute(options.checkpoint);
    const fs::path run = checkpoint.parent_path().parent_path();
    if (checkpoint.parent_path().filename() == "checkpoints" && fs::exists(run / "config.yaml"))
      return (run / "predictions").string();
  }
  return fs::current_path().string();
}

torch::Device choose_device(const config::LaunchOptions& launch, const dist::World& world) {
  require_cuda_if_asked(launch);
  const bool cuda = torch::cuda::is_available();
  if (launch.device == "cpu" || !cuda) return torch::kCPU;
  const int index = world.cuda_index();  // launch.gpu_ids[local_rank] or local_rank
  if (index < 0) throw ConfigError(dist::gpu_ids_too_short(world.env(), launch.gpu_ids));
  if (index >= static_cast<int>(torch::cuda::device_count()))
    throw ConfigError("local rank " + std::to_string(world.local_rank()) +
                      " needs cuda:" + std::to_string(index) + " but only " +
                      std::to_string(torch::cuda::device_count()) + " GPU(s) are visible");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// The error that ends this rank, into its log file too (the console gets it from main()).
// The line's level already says "error": a message that starts with the word again (some
// library errors do) loses it, so the log never reads "error error: ...".
void log_error_to_file(std::string text) {
  for (const char* word : {"runner: error: ", "error: ", "Error: ", "ERROR: "})
    if (text.rfind(word, 0) == 0) text.erase(0, std::strlen(word));
  for (auto& sink : spdlog::default_logger()->sinks()) {
    if (!std::dynamic_pointer_cast<spdlog::sinks::basic_file_sink_mt>(sink)) continue;
    sink->log(
        spdlog::details::log_msg("runner", spdlog::level::err, text));  // the level says "error"
    sink->flush();
  }
}

// The precision this device runs `wanted` in, said once by the main process when it differs
// or when it is slow. CPUs have no fp16 kernels: fp16 runs as bf16 where the CPU has native
// bf16 (autocast in bf16 is then faster than fp32: convnext_small 1.35x whole-run here), else
// as fp32.
config::Precision precision_as_run(config::Precision wanted, const torch::Device& device, bool main,
                                   std::string* why_different) {
  using config::Precision;
  if (!device.is_cpu() || wanted == Precision::kFp32) return wanted;
  const std::string feature = util::native_bf16_feature();
  if (wanted == Precision::kFp16) {
    *why_different = feature.empty()
                         ? "no fp16 kernels on CPU, and no native bf16 on this one"
                         : "no fp16 kernels on CPU; this one has native bf16 (" + feature + ")";
    if (main && feature.empty())
      spdlog::warn(
          "precision fp16 on CPU (no fp16 kernels there) runs in fp32: this CPU has no native "
          "bf16 either");
    else if (main)
      spdlog::warn(
          "precision fp16 on CPU (no fp16 kernels there) runs as bf16: this CPU has native bf16 "
          "({})",
          feature);
    return feature.empty() ? Precision::kFp32 : Precision::kBf16;
  }
  if (main && feature.empty())
    spdlog::warn(
        "precision bf16 on a CPU without native bf16 (avx512_bf16, amx_bf16): autocast emulates "
        "it and is usually slower than fp32");
  else if (main)
    spdlog::info("precision bf16 on CPU: native bf16 ({})", feature);
  return wanted;
}

int run_in_world(const config::Experiment& e, const RunOptions& options) {
  json resolved = e.doc;  // e.doc with train.batch_size: auto resolved; the plugin sections
  const json& doc = resolved;
  // The core sections, typed, read once (kept in step with `resolved` below).
  config::ExperimentOptions experiment = config::read_experiment_options(doc);
  const config::LaunchOptions& launch = experiment.launch;
  dist::WorldOptions wo;
  wo.backend = launch.backend;
  wo.timeout_s = launch.timeout_s;
  wo.gpu_ids = launch.gpu_ids;
  if (launch.device == "cpu" && wo.backend == "auto") wo.backend = "gloo";
  auto world = dist::World::init(wo);
  log::init_logging({world->rank(), world->world_size(), experiment.log_level, ""});
  // Ranks run the same command line: ps and top tell them apart by this.
  const std::string rank_text =
      std::to_string(world->rank()) + "/" + std::to_string(world->world_size());
  util::set_process_title(
      "runner-engine rank " + rank_text + " " + doc.at("name").get<std::string>(),
      "runner-rank" + std::to_string(world->rank()));
  // libtorch's own lines (c10 warnings, c10d, Gloo) through the same logger, tagged by rank.
  log::NativeOutputCapture native_output;

  // Threads: cores shared by the local ranks unless the config says otherwise.
  int threads = launch.threads_per_process;
  if (threads <= 0) threads = util::default_threads_per_rank(world->local_world_size());
  torch::set_num_threads(threads);
  // The loader's worker threads are the data parallelism; OpenCV's own pool would oversubscribe.
  cv::setNumThreads(0);

  const torch::Device device = choose_device(launch, *world);
  apply_device_settings(launch.cudnn_benchmark, device);  // current CUDA device, cuDNN
  std::string precision_reason;  // why the precision that runs is not the config's
  const config::Precision precision =
      precision_as_run(experiment.precision, device, world->is_main(), &precision_reason);
  const std::string precision_text = config::precision_name(precision);

  // train.batch_size: auto -> the largest size every rank fits; the saved config.yaml keeps it.
  if (!experiment.train.batch_size) {
    experiment.train.batch_size = find_auto_batch_size(e, *world, device, precision);
    resolved["train"]["batch_size"] = *experiment.train.batch_size;
  }

  // The data, before anything is written: a single process and the ranks of an external
  // launcher (torchrun, srun, mpirun) check that it fits the model; runner's own launcher
  // checked before starting its ranks.
  data::DatasetSplits splits = build_datasets(e);
  data::Pipeline train_pipeline =
      data::build_pipeline(doc.at("data").at("train_transforms"), registries().transforms);
  data::Pipeline eval_pipeline =
      data::build_pipeline(doc.at("data").at("eval_transforms"), registries().transforms);
  if (!launch::launched_by_runner())
    check_data_fits_model(e, splits, train_pipeline, eval_pipeline);

  // The run directory: chosen by the main process, known to all. A prediction makes none: it
  // writes its file only (see prediction_dir).
  std::string run_dir;
  if (options.predict_only) {
    run_dir = prediction_dir(options);
    if (world->is_main()) fs::create_directories(run_dir);
  } else {
    run_dir = world->is_main() ? choose_run_dir(experiment, options) : "";
    run_dir = broadcast_string(*world, run_dir);
  }
  if (world->is_main() && !options.predict_only) {
    fs::create_directories(fs::path(run_dir) / "logs");
    fs::create_directories(fs::path(run_dir) / "checkpoints");
    const fs::path dir(run_dir);
    if (options.resume) {
      // config.yaml stays what the run was trained with; run.json records what this resume
      // changed, command.txt every command that ran the folder.
      config::record_resume(run_dir, options.command_line, options.resume_changes);
      std::ofstream(dir / "command.txt", std::ios::app) << options.command_line << "\n";
    } else {
      write_text(dir / "config.yaml", config::to_yaml(doc, config::experiment_key_order()));
      write_text(dir / "command.txt", options.command_line + "\n");
      config::write_new_run_record(run_dir, e);
    }
    write_text(dir / "env.json", environment_report().dump(2) + "\n");
  }
  world->barrier();
  if (!options.predict_only) {
    const std::string log_file =
        (fs::path(run_dir) / "logs" / ("rank" + std::to_string(world->rank()) + ".log")).string();
    log::set_log_file(log_file);
    // runner's launcher shows a failed rank's last log lines from there.
    if (const char* where = std::getenv(launch::kLogPathFileVar); where && *where)
      std::ofstream(where) << fs::absolute(log_file).string() << "\n";
  }
  // Other ranks log to their file only (their console shows warnings): say who wrote it.
  if (!world->is_main() && !options.predict_only)
    spdlog::info("rank {} of {} (local rank {}), run {}", world->rank(), world->world_size(),
                 world->local_rank(), run_dir);

  const int64_t batch = *experiment.train.batch_size;
  const int64_t accum = experiment.train.grad_accum_steps;
  const std::string processes = util::counted(world->world_size(), "process", "processes");
  const std::string per_process =
      util::counted(threads, "thread", "threads") + (world->world_size() > 1 ? " per process" : "");
  if (world->is_main() && options.predict_only) {
    spdlog::info("predict: {}, device {}, precision {}, {}", processes, device.str(),
                 precision_text, per_process);
  } else if (world->is_main()) {
    // Who started the processes, and how they talk: "1 process (no distributed backend)",
    // "2 processes started by runner, backend gloo".
    static const std::map<std::string, std::string> starters = {
        {"runner", "runner"}, {"torchrun", "torchrun"}, {"slurm", "SLURM"}, {"mpi", "mpirun"}};
    const auto starter = starters.find(world->env().source);
    const std::string world_text =
        world->world_size() == 1
            ? processes + " (no distributed backend)"
            : processes + (starter != starters.end() ? " started by " + starter->second : "") +
                  ", backend " + world->backend();
    spdlog::info("run {}: {}, device {}, precision {}, {}", run_dir, world_text, device.str(),
                 precision_text, per_process);
    spdlog::info("batch: {} per process x {} x {} = {} global", batch, processes,
                 util::counted(accum, "accumulation step", "accumulation steps"),
                 batch * world->world_size() * accum);
  }

  torch::manual_seed(experiment.seed);
  if (experiment.train.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  TrainerParts parts;
  parts.world = world;
  parts.device = device;
  parts.precision = precision;
  parts.splits = std::move(splits);
  parts.train_pipeline = std::move(train_pipeline);
  parts.eval_pipeline = std::move(eval_pipeline);
  parts.model = build_model(doc.at("model"), e.dir);
  // Every rank reads the file before the trainer makes the ranks' parameters identical.
  // A resumed run or a predict from --checkpoint overwrites the weights anyway.
  // (timm/<name> and torchscript backbones carry their weights: timm applied model.pretrained.)
  const json& pretrained = doc.at("model").value("pretrained", json(false));
  if (pretrained.is_string() && !options.resume && options.checkpoint.empty() &&
      !models::is_scripted_backbone(doc.at("model").at("backbone").get<std::string>())) {
    const auto model_options = models::model_options_from(doc.at("model"));
    const auto loaded = models::load_pretrained(*parts.model, pretrained.get<std::string>(),
                                                model_options.in_chans, model_options.num_classes);
    if (world->is_main())
      spdlog::info("pretrained weights: {}",
                   loaded.describe(model_options.in_chans, model_options.num_classes));
  }
  parts.model->to(device);
  apply_memory_format(experiment.train.channels_last, *parts.model);
  if (!options.predict_only) {
    parts.optimizer = build_optimizer(doc.at("optimizer"), *parts.model);
    parts.make_scheduler = [&doc](const optim::ScheduleContext& context) {
      return build_scheduler(doc.at("scheduler"), context);
    };
  }
  parts.loss = build_loss(doc.at("loss"));
  parts.metrics = build_metrics(doc.at("metrics"));
  parts.predict_only = options.predict_only;
  if (world->is_main() && options.predict_only) {
    const auto [params, trainable] = count_parameters(*parts.model);
    const std::string& split = experiment.predict.split;
    const auto& data = split == "val" ? parts.splits.val : parts.splits.test;
    spdlog::info("model {}: {} parameters; weights {}; the {} split: {} images",
                 doc.at("model").at("backbone").get<std::string>(), params,
                 options.checkpoint.empty() ? std::string("model.pretrained") : options.checkpoint,
                 split, data ? data->size() : size_t{0});
  } else if (world->is_main()) {
    const auto [params, trainable] = count_parameters(*parts.model);
    auto size = [](const std::shared_ptr<data::Dataset>& d) { return d ? d->size() : size_t{0}; };
    spdlog::info("model {}: {} parameters; data: train {}, val {}, test {}",
                 doc.at("model").at("backbone").get<std::string>(), params,
                 size(parts.splits.train), size(parts.splits.val), size(parts.splits.test));
    if (!parts.splits.class_names.empty() && !options.predict_only) {
      std::ofstream classes(fs::path(run_dir) / "classes.txt");
      for (const auto& c : parts.splits.class_names) classes << c << "\n";
    }
  }

  Trainer trainer(std::move(parts), experiment, run_dir);
  json summary = {{"run_dir", run_dir},
                  {"world_size", world->world_size()},
                  {"precision", precision_text},
                  {"precision_config", config::precision_name(experiment.precision)},
                  {"precision_reason", precision_reason},
                  {"device", device.str()},
                  {"grad_accum_steps", accum},
                  {"batch_size", batch},
                  {"global_batch", batch * world->world_size() * accum}};
  if (options.predict_only) {
    if (!options.checkpoint.empty()) {
      load_checkpoint(options.checkpoint, trainer.model(), nullptr);
    } else if (!doc.at("model").at("pretrained").is_string() && world->is_main()) {
      spdlog::warn(
          "predicting with freshly initialised weights: give --checkpoint or model.pretrained");
    }
    const config::PredictOptions& predict = experiment.predict;
    trainer.predict(predict.split,
                    options.predict_output.empty() ? predict.output : options.predict_output,
                    predict.format);
    world->barrier();
    return 0;
  }
  // summary.json and report.html, written by the main process however the run ends: "status"
  // says how (finished, interrupted, failed), the rest what it got to; the report's badge says
  // the same (output::run_status_text).
  auto write_summary = [&](const std::string& status, json fields) {
    if (!world->is_main()) return;
    if (fields.is_object()) summary.update(fields);
    summary["status"] = status;
    summary["optimizer_steps"] = trainer.optimizer_steps();
    summary["seconds"] = trainer.run_seconds();  // all segments of a resumed run
    util::write_file_atomically((fs::path(run_dir) / "summary.json").string(),
                                summary.dump(2) + "\n");
    write_report(run_dir, output::run_status_text(summary));
  };
  // From here a SIGINT/SIGTERM stops the run at the next step with its work saved (runner's
  // launcher says so itself, once for all ranks).
  StopRequestHandler stop_handler(world->is_main() && !launch::launched_by_runner());
  MetricValues last, best;
  try {
    if (options.resume)
      trainer.resume_from((fs::path(run_dir) / "checkpoints" / "last.pt").string());
    last = trainer.fit();
    if (const int signo = trainer.stopped_by()) {
      const std::string resume = "runner run --resume " + run_dir;
      const std::string where = "epoch " + std::to_string(trainer.epoch_reached()) + ", batch " +
                                std::to_string(trainer.batches_done()) + ", optimizer step " +
                                std::to_string(trainer.optimizer_steps());
      write_summary(
          "interrupted",
          {{"signal", stop_signal_name(signo)}, {"stopped_at", where}, {"resume_command", resume}});
      if (world->is_main()) {
        spdlog::warn("interrupted by {} at {}; the run folder keeps its work: continue with {}",
                     stop_signal_name(signo), where, resume);
      }
      world->barrier();
      return exit_code_for_stop(signo);
    }
    trainer.load_best();
    best = trainer.evaluate();
    const config::PredictOptions& predict = experiment.predict;
    if (predict.enabled) trainer.predict(predict.split, predict.output, predict.format);
  } catch (const std::exception& err) {
    // A failed run's summary and report show what it got to, and why it ended.
    try {
      write_summary("failed", {{"error", err.what()}});
    } catch (const std::exception& e) {
      spdlog::warn("could not write summary.json: {}", e.what());
    }
    throw;
  }
  // train.checkpoints: what the finished run keeps. Every rank is past reading best.pt here.
  world->barrier();
  std::vector<std::pair<std::string, uintmax_t>> kept_checkpoints;
  if (world->is_main()) kept_checkpoints = keep_checkpoints(run_dir, experiment.train.checkpoints);
  // Peak memory of every rank, summed (the main process writes it).
  const double rss_total = world->all_reduce(peak_rss_mib(), dist::ReduceOp::kSum);
  if (world->is_main()) {
    summary["last_metrics"] = last;
    summary["best_metrics"] = best;
    // What a sweep ranks its points by: train.best.metric, its direction and the best value.
    const auto best_value = trainer.best_value();
    summary["best"] = {{"metric", trainer.best_metric()},
                       {"mode", trainer.best_mode()},
                       {"value", best_value ? json(*best_value) : json(nullptr)}};
    const auto images_per_s = trainer.train_images_per_s();
    summary["train_images_per_s"] = images_per_s ? json(*images_per_s) : json(nullptr);
    summary["first_step_unix_time"] = trainer.first_step_unix_time();
    summary["mean_epoch_seconds"] = trainer.mean_epoch_seconds();
    summary["peak_rss_mib_all_ranks"] = rss_total;
    summary["peak_gpu_mib"] = peak_gpu_mib(device);  // rank 0's GPU; 0 on CPU
    // What libtorch was really set to (launch.cudnn_benchmark, train.deterministic), and what
    // the loader and the model really ran with (data.num_workers, data.prefetch_batches,
    // train.channels_last), read from the objects, not the config.
    summary["torch_settings"] = {
        {"cudnn_benchmark", at::globalContext().benchmarkCuDNN()},
        {"deterministic_algorithms", at::globalContext().deterministicAlgorithms()}};
    const data::LoaderStats loader = trainer.train_loader_stats();
    summary["train_loader"] = {{"worker_threads", loader.worker_threads},
                               {"prefetch_batches", loader.prefetch},
                               {"batches_made_on", loader.made_on}};
    summary["model_memory_format"] = memory_format_of(trainer.model());
    summary["checkpoints"] = {{"policy", experiment.train.checkpoints}, {"kept", json::object()}};
    for (const auto& [name, bytes] : kept_checkpoints) summary["checkpoints"]["kept"][name] = bytes;
    if (const dist::DataParallel* dp = trainer.data_parallel())  // train.bucket_cap_mb, ...
      summary["gradient_sync"] = {{"buckets", dp->bucket_count()},
                                  {"find_unused_parameters", dp->options().find_unused_parameters},
                                  {"transport", dp->transport()}};
  }
  write_summary("finished", {});
  if (world->is_main()) {
    std::string line;
    for (const auto& [k, v] : best) line += fmt::format(" {} {:.4f}", k, v);
    spdlog::info("done in {:.1f} s; best weights:{}; checkpoints: {}; run directory {}",
                 trainer.run_seconds(), line, checkpoints_text(kept_checkpoints), run_dir);
  }
  world->barrier();
  return 0;
}

}  // namespace

int run_experiment(const config::Experiment& e, const RunOptions& options) {
  try {
    return run_in_world(e, options);
  } catch (const std::exception& err) {
    log_error_to_file(err.what());
    throw;
  }
}

}  // namespace runner::run
