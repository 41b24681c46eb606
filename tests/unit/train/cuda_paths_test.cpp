// The CUDA-only paths: peak GPU memory, the loss scaler and the fused optimizers with torch's
// CUDA kernels, channels_last
// weights (CUDA autocast is exercised by bench/gpu_check.sh's fp16 runs). CUDA tests skip on
// machines without a GPU (bench/gpu_check.sh runs them on one); the CPU halves run everywhere.

#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugin_params.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "train/device_options.hpp"
#include "train/device_schedule.hpp"
#include "train/grad_scaler.hpp"

namespace {

using runner::train::GradScaler;
using runner::train::GradScalerOptions;

#define REQUIRE_CUDA()                                                   \
  if (!torch::cuda::is_available() || !runner::train::built_with_cuda()) \
  GTEST_SKIP() << "no "                                                  \
                  "CUDA"

TEST(CudaPaths, CpuDeviceReportsNoGpuMemory) {
  EXPECT_EQ(runner::train::peak_gpu_mib(torch::Device(torch::kCPU)), 0.0);
}

TEST(CudaPaths, ChannelsLastAutoIsNhwcOnlyOnCudaInReducedPrecision) {
  using runner::config::Precision;
  using runner::train::channels_last_as_run;
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA, 0);
  std::string reason;
  EXPECT_TRUE(channels_last_as_run("auto", cuda, Precision::kBf16, &reason));
  EXPECT_NE(reason.find("tensor cores"), std::string::npos) << reason;
  EXPECT_TRUE(channels_last_as_run("auto", cuda, Precision::kFp16));
  EXPECT_FALSE(channels_last_as_run("auto", cuda, Precision::kFp32));
  EXPECT_FALSE(channels_last_as_run("auto", cpu, Precision::kBf16, &reason));
  EXPECT_NE(reason.find("CPU"), std::string::npos) << reason;
  EXPECT_FALSE(channels_last_as_run("auto", cpu, Precision::kFp32));
  // Given explicitly, the config wins on every device.
  EXPECT_TRUE(channels_last_as_run("true", cpu, Precision::kFp32));
  EXPECT_FALSE(channels_last_as_run("false", cuda, Precision::kBf16));
}

TEST(CudaPaths, ChannelsLastStoresConvWeightsNhwcAndKeepsTheFunction) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  const auto x = torch::randn({2, 3, 7, 7});
  const auto expected = conv->forward(x).detach();
  runner::train::apply_memory_format(false, *conv);
  EXPECT_FALSE(conv->weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  runner::train::apply_memory_format(true, *conv);
  EXPECT_TRUE(conv->weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(conv->forward(x), expected, 1e-5, 1e-6));
}

TEST(CudaPaths, PeakGpuMemoryCoversALiveTensor) {
  REQUIRE_CUDA();
  const torch::Device device(torch::kCUDA, 0);
  runner::train::apply_device_settings(true, device);
  const auto block =
      torch::empty({64 << 20}, torch::TensorOptions().dtype(torch::kByte).device(device));
  EXPECT_GE(runner::train::peak_gpu_mib(device), 64.0);
}

// The step as the engine takes it on CUDA: the scaler's verdict and the schedule's float32 lr
// as device tensors read by the fused kernels (adam, adamw, sgd); an inf step changes nothing,
// and the good steps equal the same steps on CPU (float64 lr there).
TEST(CudaPaths, FusedOptimizersSkipOnTheDeviceAndMatchTheCpu) {
  REQUIRE_CUDA();
  for (const char* name : {"adam", "adamw", "sgd"}) {
    std::vector<torch::Tensor> weights;
    for (const torch::Device device :
         {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0)}) {
      torch::manual_seed(0);
      torch::nn::Linear model(4, 2);
      model->to(device);
      const auto& entry = runner::registries().optimizers.at(name);
      const nlohmann::json user = std::string(name) == "sgd"
                                      ? nlohmann::json{{"lr", 0.1}, {"momentum", 0.9}}
                                      : nlohmann::json{{"lr", 0.1}};
      auto optimizer = entry.factory(runner::test::with_defaults(entry.schema, user), *model);
      runner::train::DeviceSchedule schedule({0.1, 0.05, 0.02}, device);
      GradScaler scaler(GradScalerOptions{});
      const auto before = model->weight.detach().clone();
      for (int step = 0; step < 3; ++step) {
        optimizer->torch_optimizer().zero_grad();
        scaler.scale(model->forward(torch::ones({1, 4}, device)).sum()).backward();
        if (step == 0) model->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
        const auto found_inf = scaler.unscale_(optimizer->torch_optimizer());
        optimizer->update(schedule.lr(), found_inf);
        schedule.count_step(found_inf);
        scaler.update();
        if (step == 0) {
          EXPECT_TRUE(torch::equal(model->weight.detach(), before)) << name << " " << device;
          EXPECT_EQ(scaler.scale(), 32768.0);
        }
      }
      EXPECT_EQ(schedule.steps_taken().item<int64_t>(), 2) << name << " " << device;
      weights.push_back(model->weight.detach().cpu());
    }
    EXPECT_TRUE(torch::allclose(weights[0], weights[1], 1e-5, 1e-6)) << name;
  }
}

}  // namespace
