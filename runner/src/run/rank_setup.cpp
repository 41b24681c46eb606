#include "run/rank_setup.hpp"

#include <spdlog/spdlog.h>

#include <opencv2/core/utility.hpp>

#include "dist/world.hpp"
#include "launch/world_env.hpp"
#include "log/logging.hpp"
#include "runner/error.hpp"
#include "runner/models/compute_copies.hpp"
#include "train/device_options.hpp"
#include "util/cpu_cores.hpp"
#include "util/cpu_features.hpp"
#include "util/process_title.hpp"

namespace runner::run {
namespace {

using config::Precision;

torch::Device choose_device(const config::LaunchOptions& launch, const dist::World& world) {
  train::require_cuda_if_asked(launch);
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

// The precision this device runs `wanted` in, with a note when it differs or when it is slow.
// CPUs have no fp16 kernels: fp16 runs as bf16 where the CPU has native bf16 (autocast in bf16
// is then faster than fp32: convnext_small 1.35x whole-run here), else as fp32.
Precision precision_cpu(Precision wanted, std::vector<SetupNote>& notes,
                        std::string* why_different);

// Under CPU bf16 the native models read kept bf16 copies of their weights; how the optimizer
// writes them depends on ATen's kernels here, noted once.
Precision precision_as_run(Precision wanted, const torch::Device& device,
                           std::vector<SetupNote>& notes, std::string* why_different) {
  if (!device.is_cpu() || wanted == Precision::kFp32) return wanted;
  const Precision as_run = precision_cpu(wanted, notes, why_different);
  if (as_run == Precision::kBf16 && models::compute_copies_on())
    notes.push_back({false, "bf16 weight copies (the native convnext's MLP): " +
                                models::compute_copy_writer()});
  return as_run;
}

Precision precision_cpu(Precision wanted, std::vector<SetupNote>& notes,
                        std::string* why_different) {
  const std::string feature = util::native_bf16_feature();
  if (wanted == Precision::kFp16) {
    *why_different = feature.empty()
                         ? "no fp16 kernels on CPU, and no native bf16 on this one"
                         : "no fp16 kernels on CPU; this one has native bf16 (" + feature + ")";
    notes.push_back({true, feature.empty()
                               ? "precision fp16 on CPU (no fp16 kernels there) runs in fp32: "
                                 "this CPU has no native bf16 either"
                               : "precision fp16 on CPU (no fp16 kernels there) runs as bf16: "
                                 "this CPU has native bf16 (" +
                                     feature + ")"});
    return train::precision_on_cpu(wanted);
  }
  if (feature.empty())
    notes.push_back({true,
                     "precision bf16 on a CPU without native bf16 (avx512_bf16, amx_bf16): "
                     "autocast emulates it and is usually slower than fp32"});
  else
    notes.push_back({false, "precision bf16 on CPU: native bf16 (" + feature + ")"});
  return wanted;
}

}  // namespace

std::string started_by(const dist::World& world) {
  const std::string& source = world.env().source;
  if (source == "slurm") return "srun";
  if (source == "mpi") return "mpirun";
  if (source == "none") return "runner";  // a single process, started as itself
  return source;                          // runner, torchrun
}

RankSetup set_up_rank(const config::ExperimentOptions& experiment) {
  const config::LaunchOptions& launch = experiment.launch;
  dist::WorldOptions wo;
  wo.backend = launch.backend;
  wo.timeout_s = launch.timeout_s;
  wo.gpu_ids = launch.gpu_ids;
  if (launch.device == "cpu" && wo.backend == "auto") wo.backend = "gloo";
  RankSetup setup;
  auto world = dist::World::init(wo);
  setup.rank.world = world;
  log::init_logging({world->rank(), world->world_size(), experiment.log_level, ""});
  // Ranks run the same command line: ps and top tell them apart by this.
  util::set_process_title("runner-engine rank " + std::to_string(world->rank()) + "/" +
                              std::to_string(world->world_size()) + " " + experiment.name,
                          "runner-rank" + std::to_string(world->rank()));
  setup.native_output = std::make_unique<log::NativeOutputCapture>();

  // Threads: cores shared by the local ranks unless the config says otherwise.
  setup.threads = launch.threads_per_process;
  if (setup.threads <= 0) setup.threads = util::default_threads_per_rank(world->local_world_size());
  torch::set_num_threads(setup.threads);
  // The loader's worker threads are the data parallelism; OpenCV's own pool would oversubscribe.
  cv::setNumThreads(0);

  setup.rank.device = choose_device(launch, *world);
  train::apply_device_settings(launch.cudnn_benchmark, setup.rank.device);
  setup.rank.precision = precision_as_run(experiment.precision, setup.rank.device, setup.notes,
                                          &setup.precision_reason);
  std::string layout_reason;
  setup.channels_last = train::channels_last_as_run(
      experiment.train.channels_last_mode, setup.rank.device, setup.rank.precision, &layout_reason);
  // The unusual choice is said at start; NCHW, the layout a config without the key always had,
  // only in the debug log.
  if (experiment.train.channels_last_mode == "auto" && setup.channels_last)
    setup.notes.push_back({false, layout_reason});
  else if (world->is_main() && experiment.train.channels_last_mode == "auto")
    spdlog::debug("{}", layout_reason);
  if (experiment.train.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  // Another launcher decides the world: the run is what it started, which the config may not say.
  const int configured = config::world_processes(launch);
  if (world->is_main() && world->world_size() != configured)
    spdlog::warn(
        "{} started {} processes but the config says {} (launch.num_processes {} x "
        "launch.nnodes {}): the run has {}, and its global batch is {} x the per-process "
        "batch",
        started_by(*world), world->world_size(), configured, launch.num_processes, launch.nnodes,
        world->world_size(), world->world_size());
  return setup;
}

void say_setup_notes(const RankSetup& setup) {
  if (!setup.rank.world->is_main()) return;
  for (const SetupNote& note : setup.notes) {
    if (note.warning)
      spdlog::warn("{}", note.text);
    else
      spdlog::info("{}", note.text);
  }
}

}  // namespace runner::run
