// ZeRO stage 1 on one host, measured before it is built (issue 55, item 3): two processes x 1
// thread run floor_bench's step (forward, backward, the adam plugin's kernel) with the
// parameters and Adam's moments in one shared-memory copy. After each backward every rank
// publishes the other rank's half of each gradient, averages its own half with the other's
// published one, and steps Adam over its half alone; a barrier, and the next forward reads the
// updated shared parameters. Compare its images/s with twice floor_bench's (the pair's floor).
// Usage: sharded_step_bench <backbone> <size> <batch> [steps=30] [warmup=3]
// Prints one JSON line: {"backbone":..., "images_per_s":... (both ranks), "ms_per_step":...}.

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/models/model.hpp"
#include "runner/registries.hpp"
#include "util/malloc_tuning.hpp"

namespace {

constexpr int kRanks = 2;

// A sense-free barrier over a shared counter: arrival number k waits for k rounded up to a
// multiple of the ranks.
struct SharedBarrier {
  std::atomic<uint64_t> arrived{0};
  void wait(uint64_t& passed) {
    passed += kRanks;
    arrived.fetch_add(1);
    for (int spin = 0; arrived.load() < passed; ++spin)
      if (spin > 2000) sched_yield();
  }
};

struct Param {
  torch::Tensor param;
  size_t offset, numel;
  size_t begin(int rank) const { return rank == 0 ? 0 : numel / 2; }
  size_t end(int rank) const { return rank == 0 ? numel / 2 : numel; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sharded_step_bench <backbone> <size> <batch> [steps] [warmup]\n");
    return 2;
  }
  runner::util::tune_malloc_for_training();
  runner::register_builtin_plugins(runner::registries());
  const std::string name = argv[1];
  const int64_t size = std::stoll(argv[2]), batch = std::stoll(argv[3]);
  const int steps = argc > 4 ? std::stoi(argv[4]) : 30;
  const int warmup = argc > 5 ? std::stoi(argv[5]) : 3;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const nlohmann::json options = {{"backbone", name},
                                  {"in_chans", 1},
                                  {"num_classes", 10},
                                  {"drop_path_rate", 0.0},
                                  {"pretrained", false}};
  auto model = runner::registries().models.at(name).factory(options);
  model->train();

  // One shared copy of the parameters and moments, and one gradient slot per rank.
  std::vector<Param> params;
  size_t total = 0;
  for (auto& p : model->parameters()) {
    params.push_back({p, total, static_cast<size_t>(p.numel())});
    total += static_cast<size_t>(p.numel());
  }
  const size_t bytes = sizeof(SharedBarrier) + 64 + (3 + kRanks) * total * sizeof(float);
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 1;
  auto* barrier = new (region) SharedBarrier();
  float* floats = reinterpret_cast<float*>(static_cast<char*>(region) + sizeof(SharedBarrier) + 64);
  float *shared_params = floats, *exp_avg = floats + total, *exp_avg_sq = floats + 2 * total;
  auto slot = [&](int rank) { return floats + (3 + rank) * total; };
  for (auto& p : params) {
    float* at = shared_params + p.offset;
    std::memcpy(at, p.param.contiguous().data_ptr<float>(), p.numel * sizeof(float));
    torch::NoGradGuard no_grad;
    p.param.set_data(torch::from_blob(at, p.param.sizes()));
  }

  const int rank = fork() == 0 ? 1 : 0;
  torch::manual_seed(1 + rank);
  const torch::Tensor x = torch::randn({batch, 1, size, size});
  const torch::Tensor y = torch::randint(0, 10, {batch});
  std::vector<torch::Tensor> counts;
  for (size_t i = 0; i < params.size(); ++i) counts.push_back(torch::zeros({}));
  const torch::Tensor lr = torch::full({}, 1e-3, torch::kDouble);
  uint64_t passed = 0;
  auto step = [&] {
    for (auto& p : params) p.param.mutable_grad() = torch::Tensor();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    torch::NoGradGuard no_grad;
    const int other = 1 - rank;
    for (auto& p : params) {  // the other rank's half of my gradient, for it to read
      const float* grad = p.param.grad().contiguous().data_ptr<float>();
      std::memcpy(slot(rank) + p.offset + p.begin(other), grad + p.begin(other),
                  (p.end(other) - p.begin(other)) * sizeof(float));
    }
    barrier->wait(passed);
    std::vector<torch::Tensor> ps, gs, ms, vs, ns;
    for (size_t i = 0; i < params.size(); ++i) {
      auto& p = params[i];
      const auto b = p.begin(rank), n = p.end(rank) - b;
      if (n == 0) continue;
      torch::Tensor grad = p.param.grad().contiguous().view(-1).narrow(0, b, n);
      const float* theirs = slot(other) + p.offset + b;
      float* mine = grad.data_ptr<float>();
      for (size_t k = 0; k < n; ++k) mine[k] = (mine[k] + theirs[k]) * 0.5f;
      ps.push_back(torch::from_blob(shared_params + p.offset + b, {static_cast<int64_t>(n)}));
      gs.push_back(grad);
      ms.push_back(torch::from_blob(exp_avg + p.offset + b, {static_cast<int64_t>(n)}));
      vs.push_back(torch::from_blob(exp_avg_sq + p.offset + b, {static_cast<int64_t>(n)}));
      ns.push_back(counts[i]);
    }
    at::_foreach_add_(ns, 1.0);
    at::_fused_adam_(ps, gs, ms, vs, {}, ns, lr, 0.9, 0.999, 0.0, 1e-8, false, false, std::nullopt,
                     std::nullopt);
    barrier->wait(passed);  // every half stepped before the next forward reads them
  };
  for (int i = 0; i < warmup; ++i) step();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank == 1) _exit(0);
  int status = 0;
  wait(&status);
  std::printf("{\"backbone\":\"%s\",\"ranks\":2,\"images_per_s\":%.3f,\"ms_per_step\":%.3f}\n",
              name.c_str(), kRanks * steps * batch / seconds, 1000.0 * seconds / steps);
  return 0;
}
