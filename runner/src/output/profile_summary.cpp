#include "output/profile_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "runner/error.hpp"

namespace runner::output {
namespace {

using Kind = ProfiledEvent::Kind;

struct Span {
  int64_t start_ns, end_ns;
};

// The step span holding `at`, if any (spans sorted by start, not overlapping).
bool in_steps(const std::vector<Span>& steps, int64_t at) {
  auto it = std::upper_bound(steps.begin(), steps.end(), at,
                             [](int64_t t, const Span& s) { return t < s.start_ns; });
  if (it == steps.begin()) return false;
  --it;
  return at <= it->end_ns;
}

// Each host event's self time (its duration less its direct children's on the same thread), and
// whether it runs inside a fused optimizer op: those read their lr with item() from host memory
// on the CPU (their CUDA twins read it on the device), which is no wait for a device.
struct Nesting {
  std::vector<int64_t> self;
  std::vector<bool> in_fused_op;
};

Nesting nesting_of(const std::vector<ProfiledEvent>& events) {
  std::vector<size_t> order;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind != Kind::kKernel && events[i].kind != Kind::kCopy) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ProfiledEvent &x = events[a], &y = events[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;  // the parent before a child starting with it
  });
  Nesting n{std::vector<int64_t>(events.size(), 0), std::vector<bool>(events.size(), false)};
  std::vector<size_t> open;
  uint64_t thread = 0;
  for (size_t i : order) {
    const ProfiledEvent& e = events[i];
    if (open.empty() || e.thread != thread) open.clear();
    thread = e.thread;
    while (!open.empty() && events[open.back()].end_ns <= e.start_ns) open.pop_back();
    n.self[i] = e.end_ns - e.start_ns;
    if (!open.empty()) {
      const size_t parent = open.back();
      n.self[parent] -= e.end_ns - e.start_ns;
      n.in_fused_op[i] =
          n.in_fused_op[parent] || events[parent].name.rfind("aten::_fused_", 0) == 0;
    }
    open.push_back(i);
  }
  return n;
}

struct Tally {
  int64_t calls = 0, ns = 0;
};

std::vector<ProfiledOp> top_ten(const std::map<std::string, Tally>& tallies, double steps,
                                double whole_ms_per_step) {
  std::vector<ProfiledOp> ops;
  for (const auto& [name, t] : tallies)
    ops.push_back({name, t.calls / steps, t.ns / 1e6 / steps,
                   whole_ms_per_step > 0 ? t.ns / 1e6 / steps / whole_ms_per_step : 0.0});
  std::sort(ops.begin(), ops.end(), [](const ProfiledOp& a, const ProfiledOp& b) {
    return a.ms_per_step != b.ms_per_step ? a.ms_per_step > b.ms_per_step : a.name < b.name;
  });
  if (ops.size() > 10) ops.resize(10);
  return ops;
}

int64_t step_number(const std::string& name) {
  const auto hash = name.rfind('#');
  try {
    return hash == std::string::npos ? 0 : std::stoll(name.substr(hash + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

ProfileSummary summarize_profile(const std::vector<ProfiledEvent>& events) {
  ProfileSummary s;
  std::vector<Span> steps;
  int64_t step_ns = 0;
  for (const ProfiledEvent& e : events)
    if (e.kind == Kind::kStep) {
      steps.push_back({e.start_ns, e.end_ns});
      step_ns += e.end_ns - e.start_ns;
      const int64_t number = step_number(e.name);
      if (s.first_step == 0 || (number > 0 && number < s.first_step)) s.first_step = number;
    }
  if (steps.empty()) throw Error("internal: a profile without a ProfilerStep span");
  std::sort(steps.begin(), steps.end(),
            [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  const double n = static_cast<double>(steps.size());
  s.steps = static_cast<int64_t>(steps.size());
  s.host_ms_per_step = step_ns / 1e6 / n;
  // The median: an epoch's end (a validation pass) inside the window is one long gap.
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < steps.size(); ++i) gaps.push_back(steps[i].start_ns - steps[i - 1].end_ns);
  if (!gaps.empty()) {
    std::sort(gaps.begin(), gaps.end());
    s.between_steps_ms = gaps[(gaps.size() - 1) / 2] / 1e6;
  }

  const Nesting nesting = nesting_of(events);
  std::unordered_map<uint64_t, int64_t> launched_at;  // correlation -> the runtime call's start
  for (const ProfiledEvent& e : events)
    if (e.kind == Kind::kRuntime && e.correlation != 0) launched_at[e.correlation] = e.start_ns;
  std::map<std::string, Tally> host_ops, kernels;
  int64_t host_ops_count = 0, reads = 0, kernel_count = 0, kernel_ns = 0, copies = 0, syncs = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const ProfiledEvent& e = events[i];
    const bool on_gpu = e.kind == Kind::kKernel || e.kind == Kind::kCopy;
    s.gpu = s.gpu || on_gpu;
    int64_t at = e.start_ns;
    if (on_gpu)
      if (const auto it = launched_at.find(e.correlation); it != launched_at.end()) at = it->second;
    if (!in_steps(steps, at)) continue;
    switch (e.kind) {
      case Kind::kHostOp: {
        ++host_ops_count;
        if (e.name == "aten::_local_scalar_dense" && !nesting.in_fused_op[i]) ++reads;
        Tally& t = host_ops[e.name];
        ++t.calls;
        t.ns += nesting.self[i];
        break;
      }
      case Kind::kRuntime:
        // Waits of the host for the GPU: explicit ones and a synchronous copy.
        if (e.name.find("Synchronize") != std::string::npos || e.name == "cudaMemcpy") ++syncs;
        break;
      case Kind::kKernel: {
        ++kernel_count;
        kernel_ns += e.end_ns - e.start_ns;
        Tally& t = kernels[e.name];
        ++t.calls;
        t.ns += e.end_ns - e.start_ns;
        break;
      }
      case Kind::kCopy:
        ++copies;
        break;
      default:
        break;
    }
  }
  s.host_ops_per_step = host_ops_count / n;
  s.device_reads_per_step = reads / n;
  s.kernels_per_step = kernel_count / n;
  s.gpu_ms_per_step = kernel_ns / 1e6 / n;
  s.copies_per_step = copies / n;
  s.syncs_per_step = syncs / n;
  s.top_host_ops = top_ten(host_ops, n, s.host_ms_per_step);
  s.top_kernels = top_ten(kernels, n, s.gpu_ms_per_step);
  return s;
}

nlohmann::json profile_json(const ProfileSummary& s) {
  const auto ops = [](const std::vector<ProfiledOp>& list, const char* time_key) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ProfiledOp& op : list)
      rows.push_back({{"name", op.name},
                      {"calls_per_step", op.calls_per_step},
                      {time_key, op.ms_per_step},
                      {"share", op.share}});
    return rows;
  };
  nlohmann::json j = {{"first_step", s.first_step},
                      {"steps", s.steps},
                      {"steps_asked", s.steps_asked},
                      {"device", s.device},
                      {"trace", "profile/trace.json"},
                      {"host_ms_per_step", s.host_ms_per_step},
                      {"between_steps_ms", s.between_steps_ms},
                      {"host_ops_per_step", s.host_ops_per_step},
                      {"device_reads_per_step", s.device_reads_per_step},
                      {"top_host_ops", ops(s.top_host_ops, "self_ms_per_step")}};
  if (s.gpu)
    j.update({{"kernels_per_step", s.kernels_per_step},
              {"gpu_ms_per_step", s.gpu_ms_per_step},
              {"copies_per_step", s.copies_per_step},
              {"syncs_per_step", s.syncs_per_step},
              {"top_kernels", ops(s.top_kernels, "gpu_ms_per_step")}});
  return j;
}

std::string profile_markdown(const ProfileSummary& s) {
  std::string md = fmt::format(
      "# Profile of optimizer steps {}-{} ({} of {} asked), main process, {}\n\n"
      "The trace: `trace.json` beside this file (open it in https://ui.perfetto.dev or "
      "chrome://tracing); one `ProfilerStep#N` span per step, from its first batch in hand to "
      "its end.\n\n| a step | |\n| --- | ---: |\n| host time | {:.2f} ms |\n| between steps "
      "(the next batch, the loop; median) | {:.2f} ms |\n| host ops | {:.0f} |\n| device "
      "values read to the host (aten::_local_scalar_dense) | {:.2f} |\n",
      s.first_step, s.first_step + s.steps - 1, s.steps, s.steps_asked, s.device,
      s.host_ms_per_step, s.between_steps_ms, s.host_ops_per_step, s.device_reads_per_step);
  if (s.gpu)
    md += fmt::format(
        "| GPU kernels | {:.0f} |\n| GPU time in kernels | {:.2f} ms ({:.0f}% of the host "
        "time) |\n| GPU copies and sets | {:.1f} |\n| host waits for the GPU (synchronize, "
        "synchronous copies) | {:.1f} |\n",
        s.kernels_per_step, s.gpu_ms_per_step,
        s.host_ms_per_step > 0 ? 100 * s.gpu_ms_per_step / s.host_ms_per_step : 0.0,
        s.copies_per_step, s.syncs_per_step);
  const auto table = [&](const std::string& title, const std::vector<ProfiledOp>& ops,
                         const std::string& time, const std::string& of) {
    md += "\n## " + title + "\n\n| | calls a step | " + time + " a step | share of " + of +
          " |\n| --- | ---: | ---: | ---: |\n";
    for (const ProfiledOp& op : ops)
      md += fmt::format("| `{}` | {:.1f} | {:.3f} ms | {:.1f}% |\n", op.name, op.calls_per_step,
                        op.ms_per_step, 100 * op.share);
  };
  table("The ten host ops with the most self time", s.top_host_ops, "self time", "host time");
  if (s.gpu) table("The ten longest GPU kernels", s.top_kernels, "GPU time", "GPU time");
  return md;
}

std::string profile_line(const ProfileSummary& s) {
  std::string line = fmt::format(
      "train.profile: optimizer steps {}-{} recorded: {:.1f} ms a step on the host ({:.1f} ms "
      "between steps), {:.0f} host ops, {:.1f} device reads",
      s.first_step, s.first_step + s.steps - 1, s.host_ms_per_step, s.between_steps_ms,
      s.host_ops_per_step, s.device_reads_per_step);
  if (s.gpu)
    line += fmt::format(", {:.0f} GPU kernels ({:.1f} ms), {:.1f} syncs", s.kernels_per_step,
                        s.gpu_ms_per_step, s.syncs_per_step);
  if (!s.top_host_ops.empty())
    line += fmt::format("; most self time: {} {:.0f}%", s.top_host_ops.front().name,
                        100 * s.top_host_ops.front().share);
  return line + "; profile/summary.md, profile/trace.json";
}

}  // namespace runner::output
