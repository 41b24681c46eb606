// train.profile's recorder on the CPU: the window starts after skip_steps, holds `steps` step
// spans, reports once to the observer, and its trace is Kineto's Chrome trace; the other ranks
// (main false) record nothing. The same code records the GPU's kernels on CUDA.

#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/error.hpp"
#include "temp_files.hpp"
#include "train/device_options.hpp"
#include "train/step_profiler.hpp"

namespace runner::train {
namespace {

struct ProfileCatcher : output::RunObserver {
  std::vector<output::ProfileReport> reports;
  void on_profile(const output::ProfileReport& report) override { reports.push_back(report); }
};

// train.profile on, recording `steps` steps after `skip`.
config::ProfileOptions window(int64_t skip, int64_t steps) {
  config::ProfileOptions options;
  options.enabled = true;
  options.skip_steps = skip;
  options.steps = steps;
  return options;
}

// `steps` steps of a small convolution's training, each reading its loss once (item()).
void train_steps(StepProfiler& profiler, int64_t first, int64_t steps,
                 const torch::Device& device = torch::kCPU) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 4, 3));
  conv->to(device);
  const torch::Tensor x = torch::randn({2, 1, 12, 12}, device);
  for (int64_t step = first; step < first + steps; ++step) {
    profiler.step_begins(step);
    torch::Tensor loss = conv(x).relu().mean();
    loss.backward();
    (void)loss.item<float>();
    profiler.step_ends();
  }
}

TEST(StepProfiler, RecordsTheWindowAfterTheSkippedStepsAndReportsItOnce) {
  ProfileCatcher catcher;
  const config::ProfileOptions options = window(2, 3);
  StepProfiler profiler(options, /*main=*/true, torch::kCPU, catcher);
  train_steps(profiler, 1, 7);
  profiler.finish();
  ASSERT_EQ(catcher.reports.size(), 1u);
  const output::ProfileSummary& s = catcher.reports[0].summary;
  EXPECT_EQ(s.first_step, 3);
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.steps_asked, 3);
  EXPECT_EQ(s.device, "cpu");
  EXPECT_FALSE(s.gpu);
  EXPECT_DOUBLE_EQ(s.device_reads_per_step, 1.0) << "one item() a step";
  EXPECT_GT(s.host_ms_per_step, 0);
  ASSERT_FALSE(s.top_host_ops.empty());
  bool convolution = false;
  for (const output::ProfiledOp& op : s.top_host_ops)
    convolution = convolution || op.name.find("convolution") != std::string::npos;
  EXPECT_TRUE(convolution) << s.top_host_ops[0].name;

  runner::testing::TempDir dir;
  const std::string path = (dir.path() / "trace.json").string();
  catcher.reports[0].save_trace(path);
  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));
  std::vector<std::string> spans;
  for (const auto& event : trace.at("traceEvents"))
    if (event.value("name", "").rfind("ProfilerStep#", 0) == 0) spans.push_back(event["name"]);
  EXPECT_EQ(spans,
            (std::vector<std::string>{"ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"}));
}

TEST(StepProfiler, ATraceThatCannotBeWrittenIsAnErrorNamingTheFile) {
  ProfileCatcher catcher;
  const config::ProfileOptions options = window(0, 1);
  StepProfiler profiler(options, /*main=*/true, torch::kCPU, catcher);
  train_steps(profiler, 1, 1);
  ASSERT_EQ(catcher.reports.size(), 1u);
  runner::testing::TempDir dir;
  const std::string path = (dir.path() / "missing" / "trace.json").string();
  try {
    catcher.reports[0].save_trace(path);
    FAIL() << "no error for " << path;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

TEST(StepProfiler, AWindowTheRunEndsInIsReportedWithItsStepsAndOtherRanksRecordNothing) {
  const config::ProfileOptions options = window(1, 10);
  ProfileCatcher cut, other;
  StepProfiler profiler(options, /*main=*/true, torch::kCPU, cut);
  train_steps(profiler, 1, 3);
  profiler.finish();
  ASSERT_EQ(cut.reports.size(), 1u);
  EXPECT_EQ(cut.reports[0].summary.steps, 2);
  EXPECT_EQ(cut.reports[0].summary.steps_asked, 10);

  StepProfiler not_main(options, /*main=*/false, torch::kCPU, other);
  train_steps(not_main, 1, 12);
  not_main.finish();
  EXPECT_TRUE(other.reports.empty());
}

// In the suite bench/gpu_check.sh runs on a GPU (CudaPaths.*); skips without one.
TEST(CudaPaths, StepProfilerRecordsTheKernelsAndTheHostWaitsOfEachStep) {
  if (!torch::cuda::is_available() || !built_with_cuda()) GTEST_SKIP() << "no CUDA";
  ProfileCatcher catcher;
  const config::ProfileOptions options = window(2, 3);
  const torch::Device cuda(torch::kCUDA, 0);
  StepProfiler profiler(options, /*main=*/true, cuda, catcher);
  train_steps(profiler, 1, 6, cuda);
  profiler.finish();
  ASSERT_EQ(catcher.reports.size(), 1u);
  const output::ProfileSummary& s = catcher.reports[0].summary;
  EXPECT_TRUE(s.gpu);
  EXPECT_EQ(s.device, "cuda:0");
  EXPECT_GE(s.kernels_per_step, 4) << "forward, backward and the reduction run on the GPU";
  EXPECT_GT(s.gpu_ms_per_step, 0);
  EXPECT_GE(s.syncs_per_step, 1) << "item() waits for the GPU each step";
  EXPECT_DOUBLE_EQ(s.device_reads_per_step, 1.0);
  EXPECT_FALSE(s.top_kernels.empty());
}

}  // namespace
}  // namespace runner::train
