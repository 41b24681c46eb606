#include "train/trainer.hpp"

#include "compat/torch_compat.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "dist/sync_batch_norm.hpp"
#include "log/logging.hpp"
#include "output/best_evaluation.hpp"
#include "output/plot.hpp"
#include "output/run_report.hpp"
#include "runner/error.hpp"
#include "train/autocast_guard.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/stop_request.hpp"
#include "util/atomic_file.hpp"
#include "util/counted.hpp"
#include "util/seconds_since.hpp"

namespace runner::train {
// From the layers below this one (run/ above train/ above output/).
using output::confident_mistakes;
using output::confusion_summary;
using output::MetricsWriter;
using output::peak_rss_mib;
using output::Progress;

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Kaggle's ids: the first column of sample_submission.csv beside the test file when there is
// one (it names the order Kaggle scores), else 1..n as the digit-recognizer's.
std::vector<std::string> submission_ids(const std::string& test_file, int64_t rows) {
  std::vector<std::string> ids;
  std::error_code ec;
  const fs::path sample = fs::path(test_file).parent_path() / "sample_submission.csv";
  if (fs::is_regular_file(test_file, ec) && fs::is_regular_file(sample, ec)) {
    std::ifstream in(sample);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line))
      if (!line.empty() && line != "\r") ids.push_back(line.substr(0, line.find(',')));
    if (static_cast<int64_t>(ids.size()) != rows)
      throw DataError(sample.string() + " has " + std::to_string(ids.size()) +
                      " rows but the test split has " + std::to_string(rows) +
                      ": use the sample submission of this test file, or remove it");
    spdlog::info("submission ids from {}", sample.string());
    return ids;
  }
  for (int64_t i = 0; i < rows; ++i) ids.push_back(std::to_string(i + 1));
  return ids;
}

}  // namespace

Trainer::Trainer(TrainerParts parts, config::ExperimentOptions options, std::string run_dir)
    : parts_(std::move(parts)),
      options_(std::move(options)),
      run_dir_(std::move(run_dir)),
      progress_(parts_.world->is_main(), log::stdout_is_terminal(),
                options_.train.log_every_steps) {
  const config::TrainOptions& train = options_.train;
  if (!train.batch_size) throw Error("internal: train.batch_size auto was not resolved");
  epochs_ = train.epochs;
  batch_size_ = *train.batch_size;
  eval_batch_size_ = train.eval_batch_size.value_or(2 * batch_size_);
  accum_ = train.grad_accum_steps;
  log_every_ = train.log_every_steps;
  max_nonfinite_ = train.max_nonfinite_steps;
  max_steps_ = train.max_steps;
  clip_ = train.clip_grad_norm;
  checkpoint_every_steps_ = train.checkpoint_every_steps.value_or(0);
  checkpoint_every_seconds_ = 60.0 * train.checkpoint_every_minutes.value_or(0.0);
  segment_start_ = last_save_ = Clock::now();
  best_metric_ = train.best_metric;
  best_mode_ = train.best_mode;
  if (best_mode_ == "auto") {
    best_mode_ = best_metric_ == "loss" ? "min" : "max";
    for (const auto& m : parts_.metrics)
      if (m->name() == best_metric_) best_mode_ = m->mode();
  }
  patience_ = train.patience;
  min_delta_ = train.min_delta;
  // Prediction needs none of the training pieces: no gradient reducer, loss scaler, loader,
  // schedule (nor a training split the schedule fits) or metrics files.
  data_device_ = resolve_data_device();
  if (parts_.predict_only) return;

  dist::DataParallelOptions dp;
  dp.bucket_cap_mb = train.bucket_cap_mb;
  dp.find_unused_parameters = train.find_unused_parameters;
  dp.grad_comm = train.grad_comm;
  dp.grad_transport = train.grad_transport;
  dp.broadcast_buffers = train.bn_sync == "broadcast";
  // Attached before DataParallel so that the first training forward already synchronises.
  if (train.bn_sync == "sync") {
    const int layers = dist::convert_sync_batchnorm(*parts_.model, parts_.world);
    if (parts_.world->is_main()) {
      spdlog::info("SyncBatchNorm: {} BatchNorm layer(s) take statistics over the global batch",
                   layers);
    }
  }
  data_parallel_ = std::make_unique<dist::DataParallel>(
      parts_.world, std::static_pointer_cast<torch::nn::Module>(parts_.model), dp);

  GradScalerOptions so;
  so.enabled = parts_.precision == config::Precision::kFp16;
  // No all-reduce of its found-inf flag: DataParallel averaged the gradients, so an inf on any
  // rank is an inf on every rank, and every rank skips the same steps.
  scaler_ = std::make_unique<GradScaler>(so);

  if (!parts_.splits.train) throw ConfigError("the dataset has no training split to train on");
  train_loader_ = std::make_unique<data::DataLoader>(
      parts_.splits.train, parts_.train_pipeline,
      loader_options(batch_size_, /*training=*/true, parts_.splits.train));
  if (train_loader_->num_batches() == 0) {
    throw ConfigError("train.batch_size " + std::to_string(batch_size_) + " x " +
                      util::counted(parts_.world->world_size(), "process", "processes") +
                      " is larger than the training split (" +
                      std::to_string(parts_.splits.train->size()) +
                      " samples): lower train.batch_size or raise data.limit.train");
  }

  const int64_t steps_per_epoch =
      (static_cast<int64_t>(train_loader_->num_batches()) + accum_ - 1) / accum_;
  // metrics.jsonl's step records (the report's curves): at least report_points over the run, at
  // most one per step, never sparser than train.log_every_steps (the console's cadence). A run
  // of 15 steps has 15 points; one of 100000 steps one per log_every_steps.
  const int64_t run_steps =
      std::min(steps_per_epoch * epochs_, max_steps_.value_or(steps_per_epoch * epochs_));
  record_every_ =
      std::clamp<int64_t>(run_steps / std::max<int64_t>(1, train.report_points), 1, log_every_);
  optim::ScheduleContext context;
  // The lr the optimizer plugin was built with (its first group's): the core reads no plugin
  // parameter, so an optimizer whose parameters name no `lr` works too.
  context.base_lr = optim::first_group_lr(parts_.optimizer->torch_optimizer());
  context.steps_per_epoch = steps_per_epoch;
  context.total_steps = steps_per_epoch * epochs_;
  scheduler_ = parts_.make_scheduler(context);
  // A plugin fits itself to the run (a warmup longer than a shortened run); said once.
  if (const std::string note = scheduler_->adjustment(); !note.empty() && parts_.world->is_main())
    spdlog::warn("{}", note);
  std::vector<double> lrs(static_cast<size_t>(context.total_steps) + 1);
  for (size_t k = 0; k < lrs.size(); ++k) lrs[k] = scheduler_->lr_at(static_cast<int64_t>(k));
  schedule_ = std::make_unique<DeviceSchedule>(lrs, parts_.device);
  lr_ = lrs.front();
  TrainStepParts step;
  step.model = parts_.model.get();
  step.optimizer = parts_.optimizer.get();
  step.schedule = schedule_.get();
  step.loss = parts_.loss.get();
  step.scaler = scaler_.get();
  step.data_parallel = data_parallel_.get();
  step.precision = parts_.precision;
  step.device = parts_.device;
  step.clip_grad_norm = clip_;
  train_step_ = std::make_unique<TrainStep>(step);

  if (parts_.world->is_main()) {
    std::vector<std::string> names;
    for (const auto& m : parts_.metrics) names.push_back(m->name());
    writer_ = std::make_unique<MetricsWriter>(run_dir_, names, options_.output.tensorboard);
  }
  history_ = {
      {"step", json::array()},  {"train_loss", json::array()},     {"lr", json::array()},
      {"epoch", json::array()}, {"epoch_end_step", json::array()}, {"val_loss", json::array()},
      {"metric", json::array()}};
}

Trainer::~Trainer() = default;

std::optional<torch::Device> Trainer::resolve_data_device() {
  const std::string& choice = options_.data.device;
  if (choice == "loader") return std::nullopt;
  if (choice == "cpu") return torch::Device(torch::kCPU);
  if (choice == "cuda") {
    if (!parts_.device.is_cuda())
      throw ConfigError("data.device is cuda but this rank trains on " + parts_.device.str() +
                        ": set data.device: cpu, auto or loader");
    return parts_.device;
  }
  // auto: on a GPU when the training split can be kept there, else the loader (said once, with
  // why). On CPU the loader: bench/data_device.sh finds whole CPU runs equally fast either way
  // (data waits are under 1% of the step on both paths), and the loader streams, with no decoding
  // before the first step and no copy of the split per rank. Every rank decides from the same
  // config, data and kind of GPU, so they all choose alike.
  if (!parts_.device.is_cuda() || !parts_.splits.train) return std::nullopt;
  const data::ResidentChoice chosen = data::choose_resident(
      *parts_.splits.train,
      {{&parts_.train_pipeline, "data.train_transforms"},
       {&parts_.eval_pipeline, "data.eval_transforms"}},
      parts_.device, static_cast<double>(compat::cuda_total_bytes(parts_.device)),
      options_.data.device_memory_share);
  if (chosen.split) {
    resident_splits_[parts_.splits.train.get()] = chosen.split;
    return parts_.device;
  }
  if (parts_.world->is_main())
    spdlog::info("data.device auto: batches are made by the loader, as {}", chosen.why_not);
  return std::nullopt;
}

data::LoaderOptions Trainer::loader_options(int64_t batch_size, bool training,
                                            const std::shared_ptr<data::Dataset>& dataset) {
  data::LoaderOptions lo;
  lo.transforms_key = training ? "data.train_transforms" : "data.eval_transforms";
  if (data_device_ && dataset) {
    auto& resident = resident_splits_[dataset.get()];
    if (!resident) resident = data::make_resident_split(*dataset, *data_device_);
    lo.resident = resident;
  }
  lo.batch_size = static_cast<size_t>(batch_size);
  lo.shuffle = training;    // evaluation keeps dataset order for gather_for_metrics
  lo.drop_last = training;  // every rank takes the same number of steps
  lo.num_workers = options_.data.num_workers;
  lo.prefetch = options_.data.prefetch_batches;
  lo.seed = options_.seed;
  lo.rank = static_cast<size_t>(parts_.world->rank());
  lo.world_size = static_cast<size_t>(parts_.world->world_size());
  lo.pin_memory = parts_.device.is_cuda();
  return lo;
}

void Trainer::LossTotals::add(const LossTotals& other) {
  sum += other.sum;
  finite += other.finite;
  nonfinite += other.nonfinite;
}

double Trainer::LossTotals::mean() const { return finite > 0 ? sum / finite : NAN; }

json Trainer::LossTotals::to_json() const {
  return {{"sum", sum}, {"finite", finite}, {"nonfinite", nonfinite}};
}

Trainer::LossTotals Trainer::LossTotals::from_json(const json& j) {
  if (!j.is_object()) return {};
  return {j.value("sum", 0.0), j.value("finite", 0.0), j.value("nonfinite", 0.0)};
}

double Trainer::run_seconds() const {
  return seconds_before_ + util::seconds_since(segment_start_);
}

Trainer::StepFlags Trainer::agree_on_flags(bool save_due) {
  const int mine = stop_requested_by();
  torch::Tensor flags = torch::tensor(
      {mine == SIGINT ? 1.0f : 0.0f, mine == SIGTERM ? 1.0f : 0.0f, save_due ? 1.0f : 0.0f});
  // On the host beside the device's work: the step's kernels keep running meanwhile.
  parts_.world->all_reduce_on_host_(flags, dist::ReduceOp::kSum);
  const auto f = flags.accessor<float, 1>();
  StepFlags agreed;
  agreed.stop_signal = f[0] > 0 ? SIGINT : f[1] > 0 ? SIGTERM : 0;
  agreed.save_due = f[2] > 0;
  return agreed;
}

int Trainer::agree_on_stop() { return agree_on_flags(false).stop_signal; }

void Trainer::read_window(int64_t epoch) {
  auto& world = *parts_.world;
  const WindowSums w = train_step_->take_window();
  torch::Tensor sums = torch::stack({w.loss, w.finite, w.nonfinite});
  torch::Tensor runs = torch::stack({w.longest_nonfinite_run, train_step_->nonfinite_run()});
  if (world.distributed()) {
    world.all_reduce_(sums, dist::ReduceOp::kSum);
    world.all_reduce_(runs, dist::ReduceOp::kMax);
  }
  const auto as_double = [&](const torch::Tensor& t) {
    return t.to(parts_.device, torch::kDouble).reshape({-1});
  };
  // The window's one host read.
  const torch::Tensor values =
      torch::cat({as_double(sums), as_double(runs), as_double(schedule_->steps_taken()),
                  as_double(schedule_->lr()), as_double(scaler_->scale_tensor())})
          .to(torch::kCPU);
  const auto v = values.accessor<double, 1>();
  const LossTotals read{v[0], v[1], v[2]};
  window_totals_.add(read);
  epoch_totals_.add(read);
  const auto longest_run = static_cast<int64_t>(std::llround(v[3]));
  nonfinite_run_ = static_cast<int64_t>(std::llround(v[4]));
  optimizer_steps_ = static_cast<int64_t>(std::llround(v[5]));
  lr_ = v[6];
  scale_ = v[7];
  attempted_at_read_ = steps_attempted_;
  if (longest_run >= max_nonfinite_) {
    throw Error("the training loss was NaN or inf for " + std::to_string(longest_run) +
                " consecutive steps (epoch " + std::to_string(epoch + 1) + ", by step " +
                std::to_string(steps_attempted_) +
                "; checked at every metrics record): training diverged; lower "
                "optimizer.lr, set train.clip_grad_norm, or check the data "
                "(train.max_nonfinite_steps sets the patience)");
  }
}

void Trainer::log_window(int64_t epoch, double seconds, double data_wait_seconds, int64_t images) {
  // A window whose steps the loss scaler all skipped has no step of its own to log.
  if (writer_ && optimizer_steps_ > last_logged_step_) {
    const double loss = window_totals_.mean();
    writer_->write("step", optimizer_steps_,
                   {{"epoch", epoch + 1},
                    {"loss", loss},
                    {"lr", lr_},
                    {"scale", scale_},
                    {"images_per_s", seconds > 0 ? images / seconds : 0.0},
                    {"data_wait", seconds > 0 ? data_wait_seconds / seconds : 0.0},
                    {"peak_rss_mib", peak_rss_mib()}});
  }
  if (optimizer_steps_ > last_logged_step_) {
    history_["step"].push_back(optimizer_steps_);
    history_["train_loss"].push_back(window_totals_.mean());
    history_["lr"].push_back(lr_);
  }
  last_logged_step_ = optimizer_steps_;
  window_totals_ = {};
}

bool Trainer::improved(double value) const {
  if (!best_value_) return true;
  return best_mode_ == "max" ? value > *best_value_ + min_delta_
                             : value < *best_value_ - min_delta_;
}

json Trainer::state_json() const {
  const auto scaler = scaler_->state();
  return {{"epoch", epoch_},
          {"batches_done", batches_done_},
          {"optimizer_steps", optimizer_steps_},
          {"steps_attempted", steps_attempted_},
          {"nonfinite_streak", nonfinite_run_},
          {"window_loss", window_totals_.to_json()},
          {"epoch_loss", epoch_totals_.to_json()},
          {"best_value", best_value_ ? json(*best_value_) : json(nullptr)},
          {"best_metric", best_metric_},
          {"best_epoch", best_epoch_},
          {"epochs_without_improvement", epochs_without_improvement_},
          {"scaler", {{"scale", scaler.scale}, {"growth_tracker", scaler.growth_tracker}}},
          {"world_size", parts_.world->world_size()},
          {"run_seconds", run_seconds()},
          {"history", history_}};
}

void Trainer::save(const std::string& name, bool with_optimizer) {
  // The position saved is the host's: what the device has summed since the last read joins it.
  if (steps_attempted_ != attempted_at_read_) read_window(epoch_);
  // Every rank's RNG state travels to the main process, which alone writes; the others wait.
  CheckpointContent content;
  content.meta = state_json();
  content.rng_states =
      parts_.world->all_gather(cpu_rng_state().to(torch::kFloat)).to(torch::kUInt8);
  if (parts_.world->is_main()) {
    const fs::path dir = fs::path(run_dir_) / "checkpoints";
    fs::create_directories(dir);
    save_checkpoint((dir / (name + ".pt")).string(), *parts_.model,
                    with_optimizer ? parts_.optimizer.get() : nullptr, content);
  }
  if (name == "last") last_save_ = Clock::now();
  parts_.world->barrier();
}

void Trainer::resume_from(const std::string& checkpoint) {
  const auto content = load_checkpoint(checkpoint, *parts_.model, parts_.optimizer.get());
  const json& m = content.meta;
  if (m.value("world_size", 1) != parts_.world->world_size()) {
    throw ConfigError(
        "cannot resume '" + checkpoint + "' with " + std::to_string(parts_.world->world_size()) +
        " processes: it was written by " + std::to_string(m.value("world_size", 1)) +
        " (the sampler's order depends on the world size); use launch.num_processes=" +
        std::to_string(m.value("world_size", 1)));
  }
  epoch_ = m.at("epoch").get<int64_t>();
  batches_done_ = m.at("batches_done").get<int64_t>();
  optimizer_steps_ = m.at("optimizer_steps").get<int64_t>();
  // Checkpoints before the device-side step lack these: every step counted then.
  steps_attempted_ = attempted_at_read_ = m.value("steps_attempted", optimizer_steps_);
  last_logged_step_ = optimizer_steps_;
  nonfinite_run_ = m.at("nonfinite_streak").get<int64_t>();
  window_totals_ = LossTotals::from_json(m.value("window_loss", json()));
  epoch_totals_ = LossTotals::from_json(m.value("epoch_loss", json()));
  schedule_->set_steps_taken(optimizer_steps_);
  train_step_->set_nonfinite_run(nonfinite_run_);
  if (!m.at("best_value").is_null()) best_value_ = m.at("best_value").get<double>();
  best_epoch_ = m.at("best_epoch").get<int64_t>();
  epochs_without_improvement_ = m.at("epochs_without_improvement").get<int64_t>();
  scaler_->load_state({m.at("scaler").at("scale").get<double>(),
                       m.at("scaler").at("growth_tracker").get<int64_t>()});
  history_ = m.at("history");
  seconds_before_ = m.value("run_seconds", 0.0);
  if (content.rng_states.defined() && content.rng_states.size(0) > parts_.world->rank())
    set_cpu_rng_state(content.rng_states[parts_.world->rank()]
                          .clone());  // offset 0: 2.x reads from the storage start
  if (writer_) writer_->drop_records_after(optimizer_steps_);  // the steps it will write again
  if (parts_.world->is_main())
    spdlog::info("resumed from {}: epoch {}, batch {} of it, optimizer step {}", checkpoint,
                 epoch_ + 1, batches_done_, optimizer_steps_);
}

Trainer::EpochResult Trainer::train_epoch(int64_t epoch) {
  EpochResult result;
  auto& model = *parts_.model;
  auto& world = *parts_.world;
  model.train();
  train_loader_->start_epoch(static_cast<uint64_t>(epoch), static_cast<size_t>(batches_done_));
  const int64_t num_batches = static_cast<int64_t>(train_loader_->num_batches());
  const int64_t epochs_left = epochs_ - epoch - 1;
  int64_t later = epochs_left * num_batches;
  if (max_steps_)  // the run ends at train.max_steps optimizer steps
    later = std::min(later, std::max<int64_t>(0, (*max_steps_ - optimizer_steps_) * accum_ -
                                                     (num_batches - batches_done_)));
  progress_.start("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs_), num_batches,
                  later);

  const int64_t images_per_batch = batch_size_ * world.world_size();
  const int warmup_batches = 3;  // excluded from the steady-state throughput
  int64_t counted_images = 0, batches_this_run = 0;
  Clock::time_point steady_start = Clock::now();
  Clock::time_point log_start = Clock::now();
  double log_wait_start = train_loader_->stats().wait_seconds;
  int64_t log_images = 0;
  if (batches_done_ == 0) epoch_totals_ = {};  // else a resume continues the epoch's totals
  train_step_->take_window();  // a window begins with the epoch (or where a resume continues)

  while (auto batch = train_loader_->next()) {
    const int64_t micro = batches_done_ % accum_;
    const bool sync = micro == accum_ - 1 || batches_done_ + 1 == num_batches;
    const auto images = batch->images.to(parts_.device, /*non_blocking=*/true);
    const auto labels = batch->labels.to(parts_.device, /*non_blocking=*/true);

    // The gradient is the mean over the accumulation window; the epoch's last window may be short.
    const int64_t window = std::min(accum_, num_batches - (batches_done_ - micro));
    train_step_->micro_batch(images, labels, window, sync);
    ++batches_done_;
    ++batches_this_run;
    if (batches_this_run == warmup_batches) {
      steady_start = Clock::now();
      counted_images = 0;
    } else {
      counted_images += images_per_batch;
    }
    log_images += images_per_batch;

    if (sync) {
      train_step_->finish();
      ++steps_attempted_;
      if (first_step_unix_time_ == 0) {
        first_step_unix_time_ =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
      }
      // Every step, on the host (no device read): whether any rank was asked to stop (SIGINT,
      // SIGTERM) and whether rank 0's clock says a checkpoint is due, so that every rank stops
      // and saves after the same step.
      const bool save_due_here = world.is_main() && checkpoint_every_seconds_ > 0 &&
                                 util::seconds_since(last_save_) >= checkpoint_every_seconds_;
      const StepFlags flags = agree_on_flags(save_due_here);
      const bool window_end = steps_attempted_ % record_every_ == 0;
      const bool save_every_steps =
          checkpoint_every_steps_ > 0 && steps_attempted_ % checkpoint_every_steps_ == 0;
      // Steps taken are known at reads; near train.max_steps read every step to stop exactly.
      const bool near_max_steps =
          max_steps_ && optimizer_steps_ + (steps_attempted_ - attempted_at_read_) >= *max_steps_;
      // The device's losses are read once per log window, and where the host needs them now.
      if (window_end || flags.stop_signal || flags.save_due || save_every_steps || near_max_steps ||
          batches_done_ == num_batches)
        read_window(epoch);
      if (window_end) {
        log_window(epoch, util::seconds_since(log_start),
                   train_loader_->stats().wait_seconds - log_wait_start, log_images);
        log_start = Clock::now();
        log_wait_start = train_loader_->stats().wait_seconds;
        log_images = 0;
      }
      if (flags.stop_signal) {
        result.stopped_by_signal = flags.stop_signal;
        break;
      }
      if (max_steps_ && optimizer_steps_ >= *max_steps_) {
        result.stopped_by_max_steps = true;
        break;
      }
      // Crash safety: last.pt within the epoch, at the sampler's position.
      if ((save_every_steps || flags.save_due) && batches_done_ < num_batches) {
        save("last", true);
        if (world.is_main())
          spdlog::debug("checkpoints/last.pt at optimizer step {} (epoch {}, batch {})",
                        optimizer_steps_, epoch + 1, batches_done_);
      }
    }
    const double elapsed = util::seconds_since(steady_start);
    progress_.update(
        batches_done_,
        elapsed > 0 && batches_this_run > warmup_batches ? counted_images / elapsed : 0.0,
        epoch_totals_.mean());
  }
  progress_.finish();
  const double elapsed = util::seconds_since(steady_start);
  images_per_s_.reset();  // a pass within the warm-up exclusion has no steady-state figure
  if (batches_this_run > warmup_batches && elapsed > 0) images_per_s_ = counted_images / elapsed;
  result.loss = epoch_totals_.mean();
  return result;
}

torch::Tensor Trainer::predict_logits(const std::shared_ptr<data::Dataset>& dataset) {
  auto& world = *parts_.world;
  data::DataLoader loader(dataset, parts_.eval_pipeline,
                          loader_options(eval_batch_size_, /*training=*/false, dataset));
  loader.start_epoch(0);
  if (world.is_main())
    spdlog::debug("inference pass: {} samples in {} batches of {} per process", dataset->size(),
                  loader.num_batches(), eval_batch_size_);
  // Each rank's BatchNorm statistics moved in its last training forward; evaluate with rank 0's
  // everywhere, as the checkpoint holds them.
  if (world.distributed()) world.broadcast_module(*parts_.model);
  parts_.model->eval();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  // A line for passes long enough to wonder about (a big validation or test split).
  Progress progress(world.is_main(), log::stdout_is_terminal(), log_every_);
  progress.start(dataset.get() == parts_.splits.val.get() ? "validate" : "predict",
                 static_cast<int64_t>(loader.num_batches()), 0, /*quiet_seconds=*/3.0);
  int64_t done = 0;
  while (auto batch = loader.next()) {
    torch::Tensor logits;
    {
      // Inference mode skips autograd's version counters and view tracking too; the logits
      // leave it as a plain copy, so the collectives below see an ordinary tensor.
      c10::InferenceMode inference;
      AutocastGuard autocast(parts_.precision, parts_.device);
      logits = parts_.model->forward(batch->images.to(parts_.device, true)).to(torch::kFloat);
    }
    logits = logits.clone();
    const auto valid = batch->padding.logical_not().to(logits.device());
    parts.push_back(dist::gather_for_metrics(world, logits, valid).cpu());
    progress.update(++done, 0.0, NAN);
  }
  progress.finish();
  parts_.model->train();
  if (parts.empty()) return torch::empty({0, 0});
  return torch::cat(parts);
}

MetricValues Trainer::compute_metrics(const torch::Tensor& logits, const torch::Tensor& labels) {
  MetricValues out;
  out["loss"] = parts_.loss->compute(logits, labels).item<double>();
  for (const auto& m : parts_.metrics) out[m->name()] = m->compute(logits, labels);
  return out;
}

MetricValues Trainer::evaluate() {
  const auto& val = parts_.splits.val;
  if (!val || val->size() == 0) return {};
  const torch::Tensor logits = predict_logits(val);
  std::vector<int64_t> labels(val->size());
  for (size_t i = 0; i < val->size(); ++i) labels[i] = val->label(i);
  if (logits.size(0) != static_cast<int64_t>(labels.size())) {
    throw Error("internal: gathered " + std::to_string(logits.size(0)) + " predictions for " +
                std::to_string(labels.size()) + " validation samples");
  }
  last_val_logits_ = logits;
  last_val_labels_ = labels;
  return compute_metrics(logits, torch::tensor(labels, torch::kInt64));
}

void Trainer::record_best_epoch(int64_t epoch) {
  if (!parts_.world->is_main() || !last_val_logits_.defined() || last_val_logits_.dim() != 2)
    return;
  // The report's per-class table, confusion matrix and most confident mistakes.
  json record = confusion_summary(last_val_logits_, last_val_labels_, parts_.splits.class_names);
  record["epoch"] = epoch;
  record["metric"] = best_metric_;
  record["value"] = *best_value_;
  writer_->write("best", optimizer_steps_, record);
  const json examples = confident_mistakes(last_val_logits_, last_val_labels_, *parts_.splits.val,
                                           parts_.splits.class_names, 24);
  util::write_file_atomically((fs::path(run_dir_) / "best_examples.json").string(),
                              examples.dump() + "\n");
}

MetricValues Trainer::fit() {
  auto& world = *parts_.world;
  MetricValues last;
  const auto num_batches = static_cast<int64_t>(train_loader_->num_batches());
  while (epoch_ < epochs_ && !finished_) {
    const auto epoch_start = Clock::now();
    const int64_t epoch = epoch_;
    const EpochResult r = train_epoch(epoch);
    const bool epoch_complete = batches_done_ >= num_batches;
    if (epoch_complete) {
      ++epoch_;
      batches_done_ = 0;
    }
    const double train_seconds = util::seconds_since(epoch_start);
    if (r.stopped_by_signal && !epoch_complete) {
      // Stopped within the epoch: no validation (a resume finishes the epoch and validates it),
      // only the position, so that the resumed run goes on as if it had never stopped.
      stopped_by_ = r.stopped_by_signal;
      save("last", true);
      if (world.is_main())
        spdlog::warn(
            "{}: stopped at epoch {}, batch {} of {}, optimizer step {}; saved "
            "checkpoints/last.pt",
            stop_signal_name(stopped_by_), epoch + 1, batches_done_, num_batches, optimizer_steps_);
      break;
    }
    // Every pass counts, also one cut short by train.max_steps: the benchmark compares such runs.
    epoch_seconds_sum_ += train_seconds;
    ++epochs_timed_;
    last = evaluate();
    json record = {{"epoch", epoch + 1},
                   {"loss", r.loss},
                   {"images_per_s", images_per_s_ ? json(*images_per_s_) : json(nullptr)},
                   {"epoch_seconds", train_seconds},
                   {"peak_rss_mib", peak_rss_mib()},
                   {"peak_gpu_mib", peak_gpu_mib(parts_.device)}};
    if (!epoch_complete) record["partial_epoch"] = true;
    std::string line = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs_) +
                       ": train loss " + fmt::format("{:.4f}", r.loss);
    for (const auto& [name, value] : last) {
      record[name == "loss" ? "val_loss" : "val_" + name] = value;
      line += fmt::format(", val {} {:.4f}", name, value);
    }
    line += images_per_s_ ? fmt::format(", {:.0f} img/s", *images_per_s_) : ", n/a img/s";
    line += fmt::format(", {:.1f} s", train_seconds);
    if (world.is_main()) {
      spdlog::info("{}", line);
      writer_->write("epoch", optimizer_steps_, record);
    }
    history_["epoch"].push_back(epoch + 1);
    history_["epoch_end_step"].push_back(optimizer_steps_);
    history_["val_loss"].push_back(last.count("loss") ? last["loss"] : NAN);
    history_["metric"].push_back(last.count(best_metric_) ? last[best_metric_] : NAN);

    // Only whole epochs compete for best.pt and count for early stopping: an evaluation after a
    // mid-epoch stop (train.max_steps) is logged, but a run resumed from there must end as if it
    // had never stopped.
    if (epoch_complete && last.count(best_metric_)) {
      const double value = last[best_metric_];
      if (improved(value)) {
        best_value_ = value;
        best_epoch_ = epoch + 1;
        epochs_without_improvement_ = 0;
        save("best", false);
        record_best_epoch(epoch + 1);
        if (world.is_main())
          spdlog::info("new best {} {:.4f} at epoch {}: checkpoints/best.pt", best_metric_, value,
                       epoch + 1);
      } else {
        ++epochs_without_improvement_;
      }
      if (patience_ > 0 && epochs_without_improvement_ >= patience_) {
        if (world.is_main())
          spdlog::info("early stopping: no {} improvement for {} epoch(s); best {:.4f} at epoch {}",
                       best_metric_, patience_, *best_value_, best_epoch_);
        finished_ = true;
      }
    }
    save("last", true);
    if (world.is_main()) {
      output::TrainingHistory h;
      // NaN (no validation that epoch) is written as null in a checkpoint's history: read back
      // after a resume, it is null here.
      auto vec = [&](const char* key) {
        std::vector<double> out;
        for (const json& v : history_[key]) out.push_back(v.is_number() ? v.get<double>() : NAN);
        return out;
      };
      h.step = vec("step");
      h.train_loss = vec("train_loss");
      h.lr = vec("lr");
      h.epoch = vec("epoch");
      h.epoch_end_step = vec("epoch_end_step");
      h.val_loss = vec("val_loss");
      h.metric = vec("metric");
      h.metric_name = best_metric_;
      try {
        output::save_training_curves(fs::path(run_dir_) / "curves.png", h, options_.name);
        output::write_run_report(run_dir_, "running: epoch " + std::to_string(epoch + 1) + " of " +
                                               std::to_string(epochs_) + " done");
      } catch (const std::exception& e) {
        spdlog::warn("could not draw curves.png or report.html: {}", e.what());
      }
    }
    if (r.stopped_by_max_steps) {
      if (world.is_main())
        spdlog::info("stopped after train.max_steps={} optimizer steps", *max_steps_);
      break;
    }
    // A signal during the validation pass or at the epoch's last step: the epoch is complete
    // and saved, stop here.
    stopped_by_ = r.stopped_by_signal ? r.stopped_by_signal : agree_on_stop();
    if (stopped_by_) {
      if (world.is_main())
        spdlog::warn("{}: stopped after epoch {}; saved checkpoints/last.pt",
                     stop_signal_name(stopped_by_), epoch + 1);
      break;
    }
  }
  return last;
}

void Trainer::load_best() {
  const std::string path = (fs::path(run_dir_) / "checkpoints" / "best.pt").string();
  parts_.world->barrier();
  if (!best_value_) return;
  load_checkpoint(path, *parts_.model, nullptr);
  if (parts_.world->is_main())
    spdlog::info("loaded the best weights ({} {:.4f}, epoch {})", best_metric_, *best_value_,
                 best_epoch_);
}

size_t Trainer::predict(const std::string& split, const std::string& output,
                        const std::string& format) {
  const auto& dataset = split == "val" ? parts_.splits.val : parts_.splits.test;
  if (!dataset || dataset->size() == 0) {
    if (parts_.world->is_main())
      spdlog::warn("no {} split to predict: no predictions written", split);
    return 0;
  }
  const torch::Tensor logits = predict_logits(dataset);
  if (!parts_.world->is_main()) return static_cast<size_t>(logits.size(0));
  const auto labels = logits.argmax(1);
  std::string text;
  if (format == "kaggle") {
    const auto ids = submission_ids(dataset->describe(), logits.size(0));
    text = "ImageId,Label\n";
    for (int64_t i = 0; i < logits.size(0); ++i)
      text += ids[i] + "," + std::to_string(labels[i].item<int64_t>()) + "\n";
  } else {
    const auto probs = torch::softmax(logits, 1);
    text = "index,label";
    for (int64_t c = 0; c < logits.size(1); ++c) text += ",prob_" + std::to_string(c);
    text += "\n";
    auto p = probs.accessor<float, 2>();
    for (int64_t i = 0; i < logits.size(0); ++i) {
      text += std::to_string(i) + "," + std::to_string(labels[i].item<int64_t>());
      for (int64_t c = 0; c < logits.size(1); ++c) text += fmt::format(",{:.6g}", p[i][c]);
      text += "\n";
    }
  }
  const fs::path path =
      fs::path(output).is_absolute() ? fs::path(output) : fs::path(run_dir_) / output;
  util::write_file_atomically(path.string(), text);
  spdlog::info("wrote {} predictions of the {} split to {}", logits.size(0), split, path.string());
  return static_cast<size_t>(logits.size(0));
}

}  // namespace runner::train
