// train.profile's summary from the profiler's events: per-step figures over the step spans only,
// self time as the op's own (its children's taken out), GPU work counted by the step that
// launched it.

#include <gtest/gtest.h>

#include "output/profile_summary.hpp"

namespace runner::output {
namespace {

using Kind = ProfiledEvent::Kind;
constexpr int64_t kMs = 1000000;

ProfiledEvent host(Kind kind, const std::string& name, int64_t start_ms, int64_t end_ms,
                   uint64_t thread = 1, uint64_t correlation = 0) {
  return {kind, name, thread, start_ms * kMs, end_ms * kMs, correlation};
}

TEST(ProfileSummary, CountsOnlyWhatStartsInAStepAndTakesChildrenOutOfSelfTime) {
  const std::vector<ProfiledEvent> events = {
      host(Kind::kStep, "ProfilerStep#11", 0, 10),
      host(Kind::kHostOp, "aten::conv2d", 1, 7),
      host(Kind::kHostOp, "aten::mkldnn_convolution", 2, 6),  // 4 ms of conv2d's 6
      host(Kind::kHostOp, "aten::_local_scalar_dense", 8, 9),
      host(Kind::kHostOp, "aten::_fused_adam_", 9, 10),
      host(Kind::kHostOp, "aten::_local_scalar_dense", 9, 10),  // its lr: not a device read
      host(Kind::kStep, "ProfilerStep#12", 20, 30),
      host(Kind::kHostOp, "aten::conv2d", 21, 27),
      host(Kind::kHostOp, "aten::mkldnn_convolution", 22, 26),
      // Between the steps (a validation pass): not counted.
      host(Kind::kHostOp, "aten::addmm", 12, 19),
      // Another thread (autograd's): its own nesting.
      host(Kind::kHostOp, "autograd::engine::evaluate_function", 3, 5, 2),
  };
  const ProfileSummary s = summarize_profile(events);
  EXPECT_EQ(s.first_step, 11);
  EXPECT_EQ(s.steps, 2);
  EXPECT_DOUBLE_EQ(s.host_ms_per_step, 10.0);
  EXPECT_DOUBLE_EQ(s.between_steps_ms, 10.0) << "from step 11's end to step 12's start";
  EXPECT_DOUBLE_EQ(s.host_ops_per_step, 4.0)
      << "8 ops in the spans (one on thread 2), addmm outside";
  EXPECT_DOUBLE_EQ(s.device_reads_per_step, 0.5);
  EXPECT_FALSE(s.gpu);
  ASSERT_GE(s.top_host_ops.size(), 3u);
  EXPECT_EQ(s.top_host_ops[0].name, "aten::mkldnn_convolution");
  EXPECT_DOUBLE_EQ(s.top_host_ops[0].ms_per_step, 4.0);
  EXPECT_DOUBLE_EQ(s.top_host_ops[0].share, 0.4);
  EXPECT_EQ(s.top_host_ops[1].name, "aten::conv2d");
  EXPECT_DOUBLE_EQ(s.top_host_ops[1].ms_per_step, 2.0) << "6 ms less its child's 4";
  for (const ProfiledOp& op : s.top_host_ops) EXPECT_NE(op.name, "aten::addmm");
  EXPECT_EQ(profile_json(s).count("kernels_per_step"), 0u) << "no GPU figures on the CPU";
}

TEST(ProfileSummary, TheGapBetweenStepsIsTheMedianSoAValidationPassDoesNotCount) {
  const ProfileSummary s = summarize_profile({
      host(Kind::kStep, "ProfilerStep#4", 100, 101),  // after a validation pass
      host(Kind::kStep, "ProfilerStep#1", 0, 1),
      host(Kind::kStep, "ProfilerStep#2", 3, 4),
      host(Kind::kStep, "ProfilerStep#3", 5, 6),
  });
  EXPECT_EQ(s.first_step, 1);
  EXPECT_EQ(s.steps, 4);
  EXPECT_DOUBLE_EQ(s.between_steps_ms, 2.0) << "gaps 2, 1 and 94 ms";
}

TEST(ProfileSummary, GpuWorkBelongsToTheStepThatLaunchedIt) {
  const std::vector<ProfiledEvent> events = {
      host(Kind::kStep, "ProfilerStep#3", 0, 10),
      host(Kind::kRuntime, "cudaLaunchKernel", 1, 2, 1, 100),
      host(Kind::kRuntime, "cudaLaunchKernel", 3, 4, 1, 101),
      host(Kind::kRuntime, "cudaStreamSynchronize", 8, 9, 1, 102),
      // The kernel of correlation 101 runs after the step's span ended: still the step's.
      host(Kind::kKernel, "sm90_gemm", 5, 9, 0, 100),
      host(Kind::kKernel, "sm90_gemm", 11, 13, 0, 101),
      host(Kind::kCopy, "Memcpy DtoH", 9, 10, 0, 103),  // no launch recorded: its own start
      // Launched outside every step.
      host(Kind::kRuntime, "cudaLaunchKernel", 14, 15, 1, 200),
      host(Kind::kKernel, "reduce_kernel", 16, 17, 0, 200),
  };
  const ProfileSummary s = summarize_profile(events);
  EXPECT_TRUE(s.gpu);
  EXPECT_DOUBLE_EQ(s.kernels_per_step, 2.0);
  EXPECT_DOUBLE_EQ(s.gpu_ms_per_step, 6.0);
  EXPECT_DOUBLE_EQ(s.copies_per_step, 1.0);
  EXPECT_DOUBLE_EQ(s.syncs_per_step, 1.0);
  ASSERT_EQ(s.top_kernels.size(), 1u);
  EXPECT_EQ(s.top_kernels[0].name, "sm90_gemm");
  EXPECT_DOUBLE_EQ(s.top_kernels[0].calls_per_step, 2.0);
  const nlohmann::json j = profile_json(s);
  EXPECT_EQ(j.at("kernels_per_step"), 2.0);
  EXPECT_NE(profile_markdown(s).find("| GPU kernels | 2 |"), std::string::npos);
}

}  // namespace
}  // namespace runner::output
