// The CUDA-only paths: peak GPU memory, the loss scaler with torch's CUDA kernels, channels_last
// weights (CUDA autocast is exercised by bench/gpu_check.sh's fp16 runs). CUDA tests skip on
// machines without a GPU (bench/gpu_check.sh runs them on one); the CPU halves run everywhere.

#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/device_options.hpp"
#include "engine/grad_scaler.hpp"

namespace {

using runner::engine::GradScaler;
using runner::engine::GradScalerOptions;

#define REQUIRE_CUDA()                                                    \
  if (!torch::cuda::is_available() || !runner::engine::built_with_cuda()) \
  GTEST_SKIP() << "no "                                                   \
                  "CUDA"

TEST(CudaPaths, CpuDeviceReportsNoGpuMemory) {
  EXPECT_EQ(runner::engine::peak_gpu_mib(torch::Device(torch::kCPU)), 0.0);
}

TEST(CudaPaths, ChannelsLastStoresConvWeightsNhwcAndKeepsTheFunction) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  const auto x = torch::randn({2, 3, 7, 7});
  const auto expected = conv->forward(x).detach();
  runner::engine::apply_memory_format({{"train", {{"channels_last", false}}}}, *conv);
  EXPECT_FALSE(conv->weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  runner::engine::apply_memory_format({{"train", {{"channels_last", true}}}}, *conv);
  EXPECT_TRUE(conv->weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(conv->forward(x), expected, 1e-5, 1e-6));
}

TEST(CudaPaths, PeakGpuMemoryCoversALiveTensor) {
  REQUIRE_CUDA();
  const torch::Device device(torch::kCUDA, 0);
  runner::engine::apply_device_settings({{"launch", {{"cudnn_benchmark", true}}}}, device);
  const auto block =
      torch::empty({64 << 20}, torch::TensorOptions().dtype(torch::kByte).device(device));
  EXPECT_GE(runner::engine::peak_gpu_mib(device), 64.0);
}

TEST(CudaPaths, ScalerSkipsInfStepAndBacksOffOnCuda) {
  REQUIRE_CUDA();
  const torch::Device device(torch::kCUDA, 0);
  torch::nn::Linear model(4, 2);
  model->to(device);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  GradScaler scaler(GradScalerOptions{});
  const auto before = model->weight.detach().clone();

  sgd.zero_grad();
  scaler.scale(model->forward(torch::ones({1, 4}, device)).sum()).backward();
  model->weight.mutable_grad()[0][0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.step(sgd));
  scaler.update();
  EXPECT_TRUE(torch::equal(model->weight.detach(), before));
  EXPECT_EQ(scaler.scale(), 32768.0);

  sgd.zero_grad();
  scaler.scale(model->forward(torch::ones({1, 4}, device)).sum()).backward();
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_FALSE(torch::equal(model->weight.detach(), before));
  EXPECT_EQ(scaler.scale(), 32768.0);
}

}  // namespace
