#include "run/lr_find.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "dist/world.hpp"
#include "log/logging.hpp"
#include "models/freeze.hpp"
#include "output/lr_find_page.hpp"
#include "output/progress.hpp"
#include "run/build_run_parts.hpp"
#include "run/rank_setup.hpp"
#include "runner/error.hpp"
#include "train/auto_batch.hpp"
#include "train/batch_source.hpp"
#include "train/device_options.hpp"
#include "train/mixup.hpp"
#include "train/step_rig.hpp"
#include "util/atomic_file.hpp"
#include "util/local_timestamp.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

std::string default_folder(const std::string& name) {
  return "lr_find/" + name + "-" + util::local_timestamp();
}

// A folder of its own: new, or empty.
fs::path open_folder(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    throw ConfigError("runner lr-find: " + dir +
                      " is not empty: give another -o DIR (lr-find writes a folder of its own)");
  fs::create_directories(dir, ec);
  if (ec)
    throw ConfigError("runner lr-find: cannot create " + dir + " (" + ec.message() +
                      "): give a writable -o DIR");
  return dir;
}

// The test's steps on the experiment's step; fills `test` until it stops or reaches its steps.
void run_steps(const config::ExperimentOptions& o, const RankSetup& setup, train::RunParts& parts,
               int64_t batch_size, train::LrRangeTest& test, const train::LrRangeOptions& range) {
  train::BatchSource batches(setup.rank, parts, o.data, o.seed);
  const auto loader = batches.training_loader(batch_size);
  train::StepRigOptions rig_options;
  rig_options.clip_grad_norm = o.train.clip_grad_norm;
  rig_options.lrs = train::range_test_lrs(range);
  train::StepRig rig(setup.rank, parts.model, *parts.optimizer, *parts.loss, rig_options);
  std::optional<train::Mixup> mixup;
  if (o.train.mixup.enabled())
    mixup.emplace(o.train.mixup, std::max<int64_t>(1, parts.splits.num_classes));
  parts.model->train();
  models::keep_frozen_statistics(parts.frozen);
  const int64_t accum = o.train.grad_accum_steps;
  int64_t epoch = 0, batch_number = 0;
  loader->start_epoch(0);
  output::Progress progress(true, log::stdout_is_terminal(), 10);
  progress.start("lr-find", range.steps);
  for (int64_t step = 0; step < range.steps; ++step) {
    for (int64_t micro = 0; micro < accum; ++micro) {
      auto batch = loader->next();
      if (!batch) {  // the split is shorter than the test: the next epoch's order goes on
        loader->start_epoch(static_cast<uint64_t>(++epoch));
        batch_number = 0;
        batch = loader->next();
      }
      torch::Tensor images = batch->images.to(setup.rank.device, true);
      torch::Tensor targets =
          (batch->targets.defined() ? batch->targets : batch->labels).to(setup.rank.device, true);
      if (mixup)  // as the run mixes its batch (Mixup::mix_batch, rank 0 of 1)
        std::tie(images, targets) =
            mixup->mix_batch(o.seed, epoch, batch_number, 0, 1, images, targets);
      ++batch_number;
      rig.step().micro_batch(images, targets, accum, micro == accum - 1);
    }
    const double lr = rig_options.lrs[static_cast<size_t>(step)];
    rig.step().finish();
    const train::WindowReading window = rig.read_window();
    const double loss = window.finite > 0 && window.nonfinite == 0
                            ? window.loss_sum / window.finite
                            : std::numeric_limits<double>::quiet_NaN();
    const bool stop = test.record(lr, loss);
    progress.update(step + 1, 0.0, test.smoothed().back());
    if (stop) break;
  }
  progress.finish();
}

void write_results(const fs::path& dir, const std::string& name, const train::LrRangeTest& test,
                   const std::optional<size_t>& suggested, const nlohmann::json& about) {
  std::string csv = "step,lr,loss,smoothed_loss\n";
  for (size_t i = 0; i < test.lrs().size(); ++i)
    csv += fmt::format("{},{:.9g},{:.9g},{:.9g}\n", i + 1, test.lrs()[i], test.losses()[i],
                       test.smoothed()[i]);
  util::write_file_atomically((dir / "lr_find.csv").string(), csv);
  nlohmann::json record = about;
  record["steps_run"] = test.lrs().size();
  record["stopped_early"] = test.stop_reason()[0] ? nlohmann::json(test.stop_reason()) : nullptr;
  record["suggested_lr"] = suggested ? nlohmann::json(test.lrs()[*suggested]) : nullptr;
  record["suggested_step"] = suggested ? nlohmann::json(*suggested + 1) : nullptr;
  util::write_file_atomically((dir / "lr_find.json").string(), record.dump(1) + "\n");

  output::LrFindPage page;
  page.experiment = name;
  page.lrs = test.lrs();
  page.losses = test.losses();
  page.smoothed = test.smoothed();
  page.suggested = suggested;
  page.stop_reason = test.stop_reason();
  util::write_file_atomically((dir / "lr_find.html").string(), output::lr_find_page(page));
}

}  // namespace

int lr_find(const config::Experiment& e, const LrFindOptions& options) {
  const train::LrRangeOptions& range = options.range;
  if (!(range.min_lr > 0) || !(range.max_lr > range.min_lr) || range.steps < 2)
    throw ConfigError(fmt::format(
        "runner lr-find: --min-lr {:g} --max-lr {:g} --steps {}: need 0 < min-lr < max-lr and "
        "at least 2 steps",
        range.min_lr, range.max_lr, range.steps));
  config::ExperimentOptions o = e.options;
  // One process: the range test is the per-process step, whatever the run's world.
  o.launch.num_processes = 1;
  o.launch.nnodes = 1;
  const std::string dir_text =
      options.output_dir.empty() ? default_folder(o.name) : options.output_dir;
  const fs::path dir = open_folder(dir_text);
  const RankSetup setup = set_up_rank(o);
  say_setup_notes(setup);
  o.train.channels_last = setup.channels_last;
  PartsRequest request;
  request.device = setup.rank.device;
  request.channels_last = setup.channels_last;
  request.announce = true;
  train::RunParts parts = build_run_parts(e, request);
  // The lr the optimizer plugin was built with (the range test moves it): the core reads no
  // plugin parameter from the document.
  const double configured_lr = optim::first_group_lr(parts.optimizer->torch_optimizer());
  const int64_t batch_size =
      o.train.batch_size ? *o.train.batch_size : train::find_auto_batch_size(setup.rank, parts, o);
  spdlog::info("lr-find: {} steps from lr {:g} to {:g} (exponential), batch {} on {}, {}",
               range.steps, range.min_lr, range.max_lr, batch_size, setup.rank.device.str(),
               config::precision_name(setup.rank.precision));

  train::LrRangeTest test(range);
  run_steps(o, setup, parts, batch_size, test, range);
  const std::optional<size_t> suggested = test.suggestion();
  const nlohmann::json about = {
      {"experiment", e.path},
      {"min_lr", range.min_lr},
      {"max_lr", range.max_lr},
      {"steps", range.steps},
      {"early_stop_threshold",
       range.early_stop_threshold ? nlohmann::json(*range.early_stop_threshold) : nullptr},
      {"beta", range.beta},
      {"batch_size", batch_size},
      {"grad_accum_steps", o.train.grad_accum_steps},
      {"device", setup.rank.device.str()},
      {"precision", config::precision_name(setup.rank.precision)},
      {"optimizer_lr", configured_lr}};
  write_results(dir, o.name, test, suggested, about);
  if (test.stop_reason()[0])
    spdlog::info("lr-find stopped after {} steps: {}", test.lrs().size(), test.stop_reason());
  std::cout << "wrote " << (dir / "lr_find.html").string() << ", lr_find.csv and lr_find.json\n";
  if (!suggested) {
    std::cout << "no lr suggested: " << test.lrs().size()
              << " steps leave fewer than 2 points after the first 10 and the last; raise "
                 "--steps or lower --max-lr\n";
    return 1;
  }
  std::cout << fmt::format(
      "suggested lr {:.3g} (steepest fall of the smoothed loss, as Lightning's lr_find): set "
      "optimizer.lr: {:.3g}\n",
      test.lrs()[*suggested], test.lrs()[*suggested]);
  return 0;
}

}  // namespace runner::run
