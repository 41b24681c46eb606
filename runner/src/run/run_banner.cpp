#include "run/run_banner.hpp"

#include <spdlog/spdlog.h>

#include <map>

#include "dist/world.hpp"
#include "run/build_run_parts.hpp"
#include "util/counted.hpp"

namespace runner::run {
namespace {

size_t size_of(const std::shared_ptr<data::Dataset>& dataset) {
  return dataset ? dataset->size() : size_t{0};
}

// Who started the processes, and how they talk: "1 process (no distributed backend)",
// "2 processes started by runner, backend gloo".
std::string world_text(const dist::World& world) {
  const std::string processes = util::counted(world.world_size(), "process", "processes");
  if (world.world_size() == 1) return processes + " (no distributed backend)";
  return processes + " started by " + started_by(world) + ", backend " + world.backend();
}

}  // namespace

void log_run_banner(const RankSetup& setup, const config::ExperimentOptions& experiment,
                    const train::RunParts& parts, const RunOptions& options,
                    const std::string& run_dir) {
  const dist::World& world = *setup.rank.world;
  if (!world.is_main()) return;
  const std::string device = setup.rank.device.str();
  const std::string precision = config::precision_name(setup.rank.precision);
  const std::string processes = util::counted(world.world_size(), "process", "processes");
  const std::string threads = util::counted(setup.threads, "thread", "threads") +
                              (world.world_size() > 1 ? " per process" : "");
  const int64_t params = count_parameters(*parts.model).first;
  if (options.predict_only) {
    spdlog::info("predict: {}, device {}, precision {}, {}", processes, device, precision, threads);
    const std::string& split = experiment.predict.split;
    const std::string what =
        !options.predict_input.empty()
            ? "the images in " + options.predict_input
            : "the " + split + " split: " +
                  std::to_string(size_of(split == "val" ? parts.splits.val : parts.splits.test)) +
                  " images";
    spdlog::info("model {}: {} parameters; weights {}; {}", parts.about.backbone, params,
                 options.checkpoint.empty() ? std::string("model.pretrained") : options.checkpoint,
                 what);
    return;
  }
  const int64_t batch = *experiment.train.batch_size;
  const int64_t accum = experiment.train.grad_accum_steps;
  spdlog::info("run {}: {}, device {}, precision {}, {}", run_dir, world_text(world), device,
               precision, threads);
  spdlog::info("batch: {} per process x {} x {} = {} global", batch, processes,
               util::counted(accum, "accumulation step", "accumulation steps"),
               config::global_batch(batch, world.world_size(), accum));
  spdlog::info("model {}: {} parameters; data: train {}, val {}, test {}", parts.about.backbone,
               params, size_of(parts.splits.train), size_of(parts.splits.val),
               size_of(parts.splits.test));
}

}  // namespace runner::run
