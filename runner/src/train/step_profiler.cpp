#include "train/step_profiler.hpp"

#include <ATen/record_function.h>
#include <kineto/ActivityType.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::train {
namespace {

namespace kineto = torch::autograd::profiler;
namespace impl = torch::profiler::impl;
using Kind = output::ProfiledEvent::Kind;

std::set<impl::ActivityType> activities_for(const c10::Device& device) {
  if (device.is_cuda()) return {impl::ActivityType::CPU, impl::ActivityType::CUDA};
  return {impl::ActivityType::CPU};
}

impl::ProfilerConfig profiler_config() {
  // No shapes, memory, stacks, FLOPs or modules: the least the profiler adds to each op.
  return impl::ProfilerConfig(impl::ProfilerState::KINETO, /*report_input_shapes=*/false,
                              /*profile_memory=*/false, /*with_stack=*/false,
                              /*with_flops=*/false, /*with_modules=*/false);
}

Kind kind_of(const kineto::KinetoEvent& event) {
  switch (static_cast<libkineto::ActivityType>(event.activityType())) {
    case libkineto::ActivityType::USER_ANNOTATION:
      return event.name().rfind("ProfilerStep#", 0) == 0 ? Kind::kStep : Kind::kOther;
    case libkineto::ActivityType::CPU_OP:
      return Kind::kHostOp;
    case libkineto::ActivityType::CUDA_RUNTIME:
    case libkineto::ActivityType::CUDA_DRIVER:
      return Kind::kRuntime;
    case libkineto::ActivityType::CONCURRENT_KERNEL:
      return Kind::kKernel;
    case libkineto::ActivityType::GPU_MEMCPY:
    case libkineto::ActivityType::GPU_MEMSET:
      return Kind::kCopy;
    default:
      return Kind::kOther;
  }
}

std::vector<output::ProfiledEvent> events_of(const kineto::ProfilerResult& result) {
  std::vector<output::ProfiledEvent> events;
  events.reserve(result.events().size());
  for (const kineto::KinetoEvent& e : result.events()) {
    const Kind kind = kind_of(e);
    if (kind == Kind::kOther) continue;
    events.push_back({kind, e.name(), e.startThreadId(), static_cast<int64_t>(e.startNs()),
                      static_cast<int64_t>(e.endNs()), e.correlationId()});
  }
  return events;
}

}  // namespace

StepProfiler::StepProfiler(const config::ProfileOptions& options, bool main,
                           const c10::Device& device, output::RunObserver& observer)
    : options_(options), active_(options.enabled && main), device_(device), observer_(observer) {}

StepProfiler::~StepProfiler() {
  step_span_.reset();
  if (recording_) {
    try {
      kineto::disableProfiler();  // a failed run: the window is not reported
    } catch (...) {
    }
  }
}

void StepProfiler::start() {
  const auto activities = activities_for(device_);
  try {
    kineto::prepareProfiler(profiler_config(), activities);
    kineto::enableProfiler(profiler_config(), activities);
    recording_ = true;
  } catch (const c10::Error& error) {
    // The profile observes; a profiler that cannot start (no CUPTI on a GPU machine) leaves the
    // training as it is, with the reason.
    done_ = true;
    spdlog::warn(
        "train.profile: PyTorch's profiler did not start on {}: {}; the run goes on "
        "unrecorded",
        device_.str(), error.what_without_backtrace());
  }
}

void StepProfiler::step_begins(int64_t step) {
  if (!active_ || done_) return;
  if (!recording_ && steps_seen_ >= options_.skip_steps) start();
  if (!recording_) return;  // before the window, or the profiler did not start
  step_span_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (step_span_->isActive()) step_span_->before("ProfilerStep#" + std::to_string(step));
}

void StepProfiler::step_ends() {
  if (!active_ || done_) return;
  ++steps_seen_;
  if (!recording_) return;
  step_span_.reset();  // ends the span
  if (++steps_recorded_ >= options_.steps) stop_and_report();
}

void StepProfiler::finish() {
  if (!active_ || done_) return;
  step_span_.reset();
  if (recording_ && steps_recorded_ > 0) {
    stop_and_report();
    return;
  }
  if (recording_) {
    kineto::disableProfiler();
    recording_ = false;
  }
  done_ = true;
  spdlog::warn(
      "train.profile: the run ended after {} optimizer steps of this command, before the "
      "window's first (train.profile.skip_steps {}): nothing recorded",
      steps_seen_, options_.skip_steps);
}

void StepProfiler::stop_and_report() {
  // The GPU's work of the last step belongs in the window: its kernels end before the record.
  if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  std::shared_ptr<kineto::ProfilerResult> result = kineto::disableProfiler();
  recording_ = false;
  done_ = true;
  output::ProfileReport report;
  report.summary = output::summarize_profile(events_of(*result));
  report.summary.steps_asked = options_.steps;
  report.summary.device = device_.str();
  report.save_trace = [result](const std::string& path) {
    try {
      result->save(path);
    } catch (const c10::Error& error) {
      throw Error("cannot write " + path + ": " + error.what_without_backtrace());
    }
    // Kineto writes PATH.tmp and renames it to PATH; a failed write it only logs, leaving the
    // partial PATH.tmp. That goes, and the reason is the folder's, which Kineto does not say.
    std::error_code missing;
    if (std::filesystem::exists(path, missing)) return;
    const std::string folder = std::filesystem::path(path).parent_path().string();
    int reason = EIO;
    struct statvfs space {};
    if (::statvfs(folder.c_str(), &space) == 0 && space.f_bavail == 0)
      reason = ENOSPC;
    else if (::access(folder.c_str(), W_OK) != 0)
      reason = errno;
    std::filesystem::remove(path + ".tmp", missing);
    throw Error(util::write_failure(path, reason));
  };
  observer_.on_profile(report);
  spdlog::info("{}", output::profile_line(report.summary));
}

}  // namespace runner::train
