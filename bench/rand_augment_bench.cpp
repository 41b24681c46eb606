// transforms.rand_augment's batched forms against its per-sample one, per batch of 128 u8
// images (rand-m9-mstd0.5-inc1, p 0.5 as timm): the per-sample OpenCV code in one thread; the
// batched transform as data.device runs it (on the CPU: the per-sample code over the samples in
// parallel on the ATen threads); the tensor form on the CPU; and the tensor form on a GPU when
// there is one. Why apply_batch picks the per-sample code on the CPU.
//
// Usage: rand_augment_bench [repeats=20]

#include <chrono>
#include <cstdio>
#include <string>

#include <torch/torch.h>
#include <opencv2/core.hpp>

#include "data/pipeline.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/registries.hpp"
#include "transforms/rand_augment_batched.hpp"
#include "transforms/rand_augment_plan.hpp"

namespace ra = runner::data::rand_augment;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The ops of step `step` of each sample, from the transform's draws [N, 5 num_ops].
std::vector<ra::SampleOp> step_ops(const torch::Tensor& draws, int step) {
  std::vector<ra::SampleOp> ops;
  for (int64_t s = 0; s < draws.size(0); ++s) {
    const double* d = draws[s].data_ptr<double>() + 5 * step;
    const auto op = static_cast<ra::Op>(static_cast<int>(d[0]));
    ops.push_back({op, ra::op_argument(op, true, d[2], d[3] != 0), d[4] != 0, d[1] != 0});
  }
  return ops;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::stoi(argv[1]) : 20;
  runner::register_builtin_plugins(runner::registries());
  const auto transform = runner::registries()
                             .transforms.at("rand_augment")
                             .factory(nlohmann::json::parse(
                                 R"({"config": "rand-m9-mstd0.5-inc1", "num_ops": 2, "magnitude": 9,
        "magnitude_std": 0.5, "magnitude_max": 10, "increasing": true, "p": 0.5, "fill": 128,
        "interpolation": "random"})"));
  const auto* batched = dynamic_cast<const runner::data::BatchedTransform*>(transform.get());
  std::printf(
      "| images (128 per batch) | per sample, 1 thread | batched on CPU (%d threads) | "
      "tensor form on CPU | tensor form on GPU |\n| --- | --- | --- | --- | --- |\n",
      at::get_num_threads());
  for (const auto& [size, channels] : {std::pair{28, 1}, {56, 1}, {112, 1}, {112, 3}}) {
    const torch::Tensor batch = torch::randint(0, 256, {128, channels, size, size}, torch::kByte);
    torch::Tensor draws =
        torch::empty({128, static_cast<int64_t>(batched->draws_per_sample())}, torch::kDouble);
    for (int64_t s = 0; s < 128; ++s) {
      runner::data::Rng rng(1, 0, static_cast<uint64_t>(s));
      batched->draw(rng, size, size, draws[s].data_ptr<double>());
    }
    const torch::Tensor hwc = batch.permute({0, 2, 3, 1}).contiguous();
    const auto time = [&](const auto& work) {
      work();
      const double t0 = now();
      for (int r = 0; r < repeats; ++r) work();
      return (now() - t0) / repeats * 1e3;
    };
    const double per_sample = time([&] {
      for (int64_t s = 0; s < 128; ++s) {
        cv::Mat image(size, size, CV_8UC(channels), hwc[s].data_ptr<uint8_t>());
        cv::Mat copy = image.clone();
        runner::data::Rng rng(1, 0, static_cast<uint64_t>(s));
        transform->apply(copy, rng);
      }
    });
    const double on_host = time([&] { batched->apply_batch(batch, draws); });
    const auto tensor_form = [&](const torch::Tensor& images) {
      torch::Tensor out = images;
      for (int step = 0; step < 2; ++step)
        out = ra::apply_ops(out, step_ops(draws, step), {128, 128, 128});
      return out;
    };
    const double tensor_cpu = time([&] { tensor_form(batch); });
    std::string gpu = "no GPU";
    if (torch::cuda::is_available()) {
      const torch::Tensor on_gpu = batch.cuda();
      const double ms = time([&] {
        tensor_form(on_gpu);
        torch::cuda::synchronize();
      });
      gpu = std::to_string(ms).substr(0, 5) + " ms";
    }
    std::printf("| %dx%dx%d | %.2f ms | %.2f ms | %.2f ms | %s |\n", size, size, channels,
                per_sample, on_host, tensor_cpu, gpu.c_str());
  }
}
