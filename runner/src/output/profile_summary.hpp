#pragma once
// What a profiled window of training steps (train.profile) says, from the profiler's events:
// per-step figures, the host ops with the most self time and, on CUDA, the longest kernels.
// Written as RUN/profile/summary.md and summary.json's "profile". Torch-free: the step profiler
// (train/step_profiler) turns Kineto's events into ProfiledEvent records.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::output {

/// One event of the profiler's trace, in the terms the summary needs.
struct ProfiledEvent {
  enum class Kind {
    kStep,     ///< a ProfilerStep#N span around one optimizer step (host)
    kHostOp,   ///< an op or autograd function on a host thread
    kRuntime,  ///< a CUDA runtime or driver call on a host thread (cudaLaunchKernel, ...)
    kKernel,   ///< a kernel on the GPU
    kCopy,     ///< a memcpy or memset on the GPU
    kOther,
  };
  Kind kind = Kind::kOther;
  std::string name;
  uint64_t thread = 0;  ///< host thread (host events)
  int64_t start_ns = 0, end_ns = 0;
  uint64_t correlation = 0;  ///< a GPU event's launching runtime call shares it
};

/// An op's (or kernel's) share of the window, per step.
struct ProfiledOp {
  std::string name;
  double calls_per_step = 0;
  double ms_per_step = 0;  ///< host ops: self time; kernels: time on the GPU
  double share = 0;        ///< of the host time a step (host ops) or the GPU time a step
};

struct ProfileSummary {
  int64_t first_step = 0;  ///< 1-based: the first optimizer step recorded
  int64_t steps = 0;       ///< steps recorded (fewer than asked when the run ended first)
  int64_t steps_asked = 0;
  std::string device = "cpu";  ///< the main process's device ("cuda:0")
  double host_ms_per_step = 0;
  /// The median gap from one step's span to the next's (the lower middle one): the wait for the
  /// next batch and the loop's own work between steps. 0 with one step.
  double between_steps_ms = 0;
  double host_ops_per_step = 0;  ///< every op span on a host thread, nested ones too
  /// aten::_local_scalar_dense (item()): a value read to the host; not those inside a fused
  /// optimizer op (on the CPU they read their lr from host memory)
  double device_reads_per_step = 0;
  bool gpu = false;  ///< GPU activity was recorded
  double kernels_per_step = 0, gpu_ms_per_step = 0, copies_per_step = 0, syncs_per_step = 0;
  std::vector<ProfiledOp> top_host_ops;  ///< by self time, at most ten
  std::vector<ProfiledOp> top_kernels;   ///< by GPU time, at most ten
};

/// Summarises the events inside the step spans of `events` (an event counts where it starts in a
/// step's span; a GPU event where its launching call does). Requires at least one kStep event.
ProfileSummary summarize_profile(const std::vector<ProfiledEvent>& events);

/// summary.json's "profile".
nlohmann::json profile_json(const ProfileSummary& summary);

/// RUN/profile/summary.md: the figures and the tables, and how to open the trace.
std::string profile_markdown(const ProfileSummary& summary);

/// One line for the log: the window and its main figures.
std::string profile_line(const ProfileSummary& summary);

}  // namespace runner::output
