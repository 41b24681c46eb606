// One epoch of small_cnn on Fashion-MNIST (28 px, AdamW lr 2e-3, batch 64, constant or cosine
// decay to 0), then test accuracy.
// Usage: small_cnn_fashion_bench DIR [cosine]   (DIR holds the four *-ubyte files, gunzipped)

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/models/model.hpp"
#include "runner/registries.hpp"

namespace {

// IDX file: big-endian header (magic, dims...), then uint8 data.
torch::Tensor read_idx(const std::string& path, int dims) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  auto be32 = [&] {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    return (int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  };
  be32();
  std::vector<int64_t> shape;
  for (int i = 0; i < dims; ++i) shape.push_back(be32());
  torch::Tensor t = torch::empty(shape, torch::kUInt8);
  in.read(static_cast<char*>(t.data_ptr()), t.numel());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  runner::register_builtin_plugins(runner::registries());
  torch::manual_seed(0);
  auto normalise = [](torch::Tensor images) {
    return (images.to(torch::kFloat).div(255.0).unsqueeze(1) - 0.2860) / 0.3530;
  };
  torch::Tensor train_x = normalise(read_idx(dir + "/train-images-idx3-ubyte", 3));
  torch::Tensor train_y = read_idx(dir + "/train-labels-idx1-ubyte", 1).to(torch::kLong);
  torch::Tensor test_x = normalise(read_idx(dir + "/t10k-images-idx3-ubyte", 3));
  torch::Tensor test_y = read_idx(dir + "/t10k-labels-idx1-ubyte", 1).to(torch::kLong);

  nlohmann::json params = {{"backbone", "small_cnn"},
                           {"in_chans", 1},
                           {"num_classes", 10},
                           {"drop_path_rate", 0.0},
                           {"pretrained", false}};
  auto model = runner::registries().models.at("small_cnn").factory(params);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(2e-3));
  const int64_t batch = 64;
  torch::Tensor order = torch::randperm(train_x.size(0));
  auto start = std::chrono::steady_clock::now();
  model->train();
  const bool cosine = argc > 2 && std::string(argv[2]) == "cosine";
  const int64_t steps = order.size(0) / batch;
  for (int64_t step = 0, i = 0; step < steps; ++step, i += batch) {
    if (cosine) {
      double lr = 1e-3 * (1.0 + std::cos(M_PI * step / steps));
      for (auto& group : optimizer.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    }
    torch::Tensor idx = order.slice(0, i, i + batch);
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(train_x.index_select(0, idx)),
                                         train_y.index_select(0, idx))
        .backward();
    optimizer.step();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  torch::NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0;
  for (int64_t i = 0; i < test_x.size(0); i += 500)
    correct += model->forward(test_x.slice(0, i, i + 500))
                   .argmax(1)
                   .eq(test_y.slice(0, i, i + 500))
                   .sum()
                   .item<int64_t>();
  std::printf("small_cnn, 1 epoch Fashion-MNIST (%s lr):", cosine ? "cosine" : "constant");
  std::printf(" test accuracy %.2f%%, train %.1f s\n", 100.0 * correct / test_x.size(0), seconds);
  return 0;
}
