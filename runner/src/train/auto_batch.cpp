#include "train/auto_batch.hpp"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "data/batch.hpp"
#include "dist/world.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/step_rig.hpp"

namespace runner::train {
namespace {

double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

// Resets the kernel's peak-RSS mark (VmHWM); false where the kernel does not allow it.
bool reset_peak_resident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

double peak_resident_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      double kib = 0;
      fields >> kib;
      return kib / 1024.0;
    }
  }
  return 0;
}

bool is_out_of_memory(const c10::Error& err) {
  return std::string(err.what()).find("out of memory") != std::string::npos;
}

}  // namespace

int64_t search_batch_size(int64_t max, const std::function<bool(int64_t)>& fits,
                          const std::function<bool(bool)>& agree, std::vector<BatchTrial>* trials) {
  if (max < 1) throw Error("auto batch size: train.auto_batch.max must be at least 1");
  const auto attempt = [&](int64_t batch) {
    bool ok = fits(batch);
    if (agree) ok = agree(ok);
    if (trials) trials->push_back({batch, ok});
    return ok;
  };
  // The search starts at 2: a training batch of one sample is an error in every BatchNorm after
  // global pooling (timm's heads: "Expected more than 1 value per channel"), and a model that
  // takes 2 takes 1 in memory. 1 is tried only when 2 does not fit.
  int64_t good = 0, bad = 0;  // bad == 0: no failing size seen yet
  for (int64_t batch = std::min<int64_t>(2, max);; batch = std::min(batch * 2, max)) {
    if (!attempt(batch)) {
      bad = batch;
      break;
    }
    good = batch;
    if (batch == max) return max;
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    if (attempt(mid))
      good = mid;
    else
      bad = mid;
  }
  if (good == 0)
    throw Error(
        "auto batch size: even a batch of 1 does not fit in memory: use a smaller model or input, "
        "or raise train.auto_batch.memory_budget_mb");
  return good;
}

int64_t find_auto_batch_size(const RankContext& rank, const RunParts& parts,
                             const config::ExperimentOptions& options) {
  dist::World& world = *rank.world;
  const torch::Device device = rank.device;
  int64_t max = options.train.auto_batch.max;
  const double budget = options.train.auto_batch.memory_budget_mb.value_or(0.0);

  // One real training sample, through the train transforms, gives the input shape.
  const auto& train = parts.splits.train;
  if (!train || train->size() == 0)
    throw ConfigError("train.batch_size: auto needs a training split with samples");
  const int64_t per_rank = static_cast<int64_t>(train->size()) / world.world_size();
  max = std::max<int64_t>(1, std::min(max, per_rank));
  data::Sample sample = train->get(0);
  parts.train_pipeline.apply(sample, options.seed, 0, 0);
  const auto one = data::collate({sample}, {0}, {false}).images.to(device);
  const int64_t num_classes = std::max<int64_t>(1, parts.splits.num_classes);

  // The trials draw initial weights and labels: the run's random stream goes on as if they had
  // not (a run with batch_size: auto trains as one given the batch it chose).
  const torch::Tensor random_state = cpu_rng_state();
  auto model = parts.make_model();
  model->to(device);
  apply_memory_format(options.train.channels_last, *model);  // as the run
  model->train();
  auto optimizer = parts.make_optimizer(*model);
  StepRigOptions rig_options;
  rig_options.clip_grad_norm = options.train.clip_grad_norm;
  rig_options.lrs = {optim::first_group_lr(optimizer->torch_optimizer())};
  StepRig rig(rank, model, *optimizer, *parts.loss, rig_options);
  TrainStep& step = rig.step();
  const bool measure_host = device.is_cpu() && budget > 0;

  const auto fits = [&](int64_t batch) {
    double before = 0;
    bool hwm = false;
    if (measure_host) {
      ::malloc_trim(0);  // freed memory of earlier trials goes back, so growth is this trial's
      before = resident_mib();
      hwm = reset_peak_resident();
    }
    double sampled_peak = 0;
    try {
      auto images = one.expand({batch, one.size(1), one.size(2), one.size(3)}).contiguous();
      auto labels = torch::randint(num_classes, {batch}, torch::kLong).to(device);
      step.micro_batch(images, labels, 1, true);
      if (measure_host) sampled_peak = std::max(sampled_peak, resident_mib());
      step.finish();
      if (measure_host) sampled_peak = std::max(sampled_peak, resident_mib());
    } catch (const c10::OutOfMemoryError&) {
      optimizer->torch_optimizer().zero_grad();
      return false;
    } catch (const c10::Error& err) {
      if (!is_out_of_memory(err)) throw;
      optimizer->torch_optimizer().zero_grad();
      return false;
    }
    if (!measure_host) return true;
    const double peak = hwm ? std::max(peak_resident_mib(), sampled_peak) : sampled_peak;
    const double need = peak - before;
    spdlog::debug("auto batch size: batch {} needs {:.0f} MiB of host memory (budget {:.0f})",
                  batch, need, budget);
    return need <= budget;
  };
  const auto agree = [&](bool ok) {
    return world.all_reduce(ok ? 1.0 : 0.0, dist::ReduceOp::kMin) > 0.5;
  };
  // One unmeasured step first: libtorch's one-time allocations (kernel caches, thread pools,
  // the optimizer's state) would otherwise be charged to the first trial's batch.
  if (measure_host) (void)fits(std::min<int64_t>(2, max));
  std::vector<BatchTrial> trials;
  const int64_t chosen = search_batch_size(max, fits, agree, &trials);
  set_cpu_rng_state(random_state);
  if (world.is_main()) {
    std::string tried;
    for (const auto& t : trials) tried += fmt::format(" {}{}", t.batch, t.fits ? "" : "(no)");
    spdlog::info("auto batch size: {} per process (max {}{}); tried{}", chosen, max,
                 measure_host ? fmt::format(", host budget {:.0f} MiB", budget) : std::string(),
                 tried);
  }
  return chosen;
}

}  // namespace runner::train
