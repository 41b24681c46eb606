// A rank program for the distributed integration tests (until the engine runs real
// experiments): joins the world from the environment and does what argv asks.
//
//   dist_worker [launcher flags] spawn NPROC MODE ARGS...   own launcher around this program
//   dist_worker join                      rendezvous + barrier, print JOINED
//   dist_worker ddp STEPS BATCH ACCUM OPT [unused]  N ranks x BATCH == 1 rank x N*BATCH
//                                         (OPT: sgd|adam; unused: a parameter without gradient)
//   dist_worker gather N BATCH [nopad]    gather_for_metrics gives rows 0..N-1 exactly once
//   dist_worker hold SECONDS              all_reduce in a loop (to be killed by a test)
//   dist_worker crash RANK AFTER_S CODE   RANK exits with CODE after AFTER_S; others hold
//   dist_worker bn STEPS                  BatchNorm buffers follow rank 0 after each sync
//   dist_worker raise RANK                RANK throws runner::Error (error file under torchrun)
//   dist_worker late RANK SLEEP_S         RANK sleeps before an all_reduce the others wait in
//   dist_worker syncbn STEPS B0 B1 ...    SyncBatchNorm, rank r with batch Br == 1 rank with
//                                         plain BatchNorm on the concatenated batch
//   dist_worker layout [NAME...]          every registered backbone (or NAMEs), contiguous and
//                                         channels_last, under DataParallel: no gradient
//                                         reaches the reducer with other strides than its
//                                         bucket view, and libtorch warns of none
// Launcher flags: --nnodes N --node-rank R --master-addr A --master-port P --grace S
// Environment: DIST_TIMEOUT_S (default 60) for rendezvous and collectives.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "config/pretrained_source.hpp"
#include "dist/data_parallel.hpp"
#include "dist/sync_batch_norm.hpp"
#include "dist/world.hpp"
#include "launch/spawn.hpp"
#include "runner/error.hpp"
#include "runner/models/batch_norm.hpp"
#include "runner/models/model.hpp"
#include "runner/registries.hpp"

namespace {

using runner::dist::DataParallel;
using runner::dist::World;

std::shared_ptr<World> join_world() {
  runner::dist::WorldOptions options;
  options.backend = "gloo";
  if (const char* t = std::getenv("DIST_TIMEOUT_S"))
    options.timeout_s = std::atof(t);
  else
    options.timeout_s = 60;
  return World::init(options);
}

// With `spare`, a registered Linear that forward never calls: its parameters get no gradient.
torch::nn::Sequential make_model(int seed, bool spare = false) {
  torch::manual_seed(seed);
  torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::Tanh(),
                              torch::nn::Linear(16, 4));
  if (spare) model->register_module("spare", torch::nn::Linear(4, 4));
  return model;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Sequential& model,
                                                        const std::string& name) {
  if (name == "adam") {
    return std::make_unique<torch::optim::Adam>(model->parameters(),
                                                torch::optim::AdamOptions(1e-2));
  }
  return std::make_unique<torch::optim::SGD>(model->parameters(),
                                             torch::optim::SGDOptions(0.1).momentum(0.9));
}

torch::Tensor flat(const std::vector<torch::Tensor>& tensors, bool grads) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : tensors) {
    torch::Tensor value = grads ? t.grad() : t;
    parts.push_back(value.defined() ? value.detach().flatten() : torch::zeros({t.numel()}));
  }
  return torch::cat(parts);
}

// Largest difference between any rank's copy of `local` and rank 0's.
double spread_across_ranks(World& world, const torch::Tensor& local) {
  auto all = world.all_gather(local);
  return (all - all[0]).abs().max().item<double>();
}

int run_ddp(int steps, int batch, int accum, const std::string& opt_name, bool unused) {
  auto world = join_world();
  const int w = world->world_size();
  const int r = world->rank();
  // Each rank starts from different weights: DataParallel must copy rank 0's.
  auto model = make_model(1234 + r, unused);
  runner::dist::DataParallelOptions dp_options;
  dp_options.find_unused_parameters = unused;
  dp_options.bucket_cap_mb = 0.0005;  // several buckets even for this small model
  DataParallel dp(world, model.ptr(), dp_options);
  auto optimizer = make_optimizer(model, opt_name);

  torch::manual_seed(42);
  const int block = w * batch;
  auto x = torch::randn({steps * accum * block, 8});
  auto y = torch::randn({steps * accum * block, 4});

  bool nosync_seen_differ = accum == 1;
  for (int s = 0; s < steps; ++s) {
    for (int m = 0; m < accum; ++m) {
      const bool sync = m == accum - 1;
      const int start = (s * accum + m) * block + r * batch;
      dp.before_forward();
      auto loss = torch::mse_loss(model->forward(x.slice(0, start, start + batch)),
                                  y.slice(0, start, start + batch)) /
                  accum;
      dp.before_backward({loss}, sync);
      loss.backward();
      double grad_spread = spread_across_ranks(*world, flat(model->parameters(), true));
      if (!sync && grad_spread > 0) nosync_seen_differ = true;
      if (sync && grad_spread > 1e-7) {
        std::cout << "DDP_FAIL rank=" << r << " gradients differ across ranks after a synced "
                  << "backward by " << grad_spread << std::endl;
        return 1;
      }
    }
    optimizer->step();
    dp.zero_grad();
  }
  if (!nosync_seen_differ) {
    std::cout << "DDP_FAIL rank=" << r << " no_sync backward still averaged gradients" << std::endl;
    return 1;
  }
  double param_spread = spread_across_ranks(*world, flat(model->parameters(), false));
  double max_diff = 0;
  if (r == 0) {
    auto reference = make_model(1234, unused);
    auto ref_opt = make_optimizer(reference, opt_name);
    for (int s = 0; s < steps; ++s) {
      for (int m = 0; m < accum; ++m) {
        const int start = (s * accum + m) * block;
        auto loss = torch::mse_loss(reference->forward(x.slice(0, start, start + block)),
                                    y.slice(0, start, start + block)) /
                    accum;
        loss.backward();
      }
      ref_opt->step();
      ref_opt->zero_grad();
    }
    max_diff = (flat(model->parameters(), false) - flat(reference->parameters(), false))
                   .abs()
                   .max()
                   .item<double>();
  }
  const bool ok = param_spread <= 1e-7 && max_diff <= 1e-5;
  std::cout << (ok ? "DDP_OK" : "DDP_FAIL") << " rank=" << r << " world=" << w
            << " replica_spread=" << param_spread << " max_diff_vs_single=" << max_diff
            << std::endl;
  return ok ? 0 : 1;
}

// BatchNorm running statistics follow rank 0: ranks see different data, yet after the next
// step's buffer sync every rank holds rank 0's statistics.
int run_batchnorm(int steps) {
  auto world = join_world();
  const int r = world->rank();
  torch::manual_seed(7);
  auto model = torch::nn::Sequential(torch::nn::Linear(4, 6), torch::nn::BatchNorm1d(6),
                                     torch::nn::Linear(6, 1));
  DataParallel dp(world, model.ptr());
  torch::optim::SGD optimizer(model->parameters(), 0.05);
  for (int s = 0; s < steps; ++s) {
    dp.before_forward();
    auto x = torch::randn({8, 4}) * (r + 1) + r;  // rank-dependent data and statistics
    auto loss = model->forward(x).pow(2).mean();
    dp.before_backward(std::vector<torch::Tensor>{loss});
    loss.backward();
    optimizer.step();
    dp.zero_grad();
  }
  auto stats = [&] {
    std::vector<torch::Tensor> parts;
    for (const auto& b : model->buffers()) parts.push_back(b.flatten().to(torch::kDouble));
    return torch::cat(parts);
  };
  auto before = stats();
  const double spread_before = spread_across_ranks(*world, before);
  dp.before_forward();
  const double spread_after = spread_across_ranks(*world, stats());
  const bool root_kept = r != 0 || torch::equal(before, stats());
  const bool ok = spread_before > 0 && spread_after == 0 && root_kept;
  std::cout << (ok ? "BN_OK" : "BN_FAIL") << " rank=" << r
            << " spread_before_sync=" << spread_before << " spread_after_sync=" << spread_after
            << std::endl;
  return ok ? 0 : 1;
}

// conv + BN + ReLU + conv + BN, with syncable or plain torch BatchNorm (same initial weights).
template <typename Bn>
torch::nn::Sequential make_conv_bn_model() {
  torch::manual_seed(11);
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)),
                               Bn(4), torch::nn::ReLU(), torch::nn::Conv2d(4, 3, 1), Bn(3));
}

// max |a - b| relative to the size of b (at least 1).
double relative_diff(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(1.0, b.abs().max().item<double>());
  return (a - b).abs().max().item<double>() / scale;
}

// SyncBatchNorm over ranks with batch sizes `batches` (world size = batches.size()) gives the
// outputs, input and parameter gradients and running statistics of plain BatchNorm on one
// process holding the concatenated batch, step after step (through DataParallel, as the engine).
int run_sync_batchnorm(int steps, const std::vector<int>& batches) {
  auto world = join_world();
  const int w = world->world_size();
  const int r = world->rank();
  if (w != static_cast<int>(batches.size())) {
    throw runner::ConfigError("syncbn: " + std::to_string(batches.size()) +
                              " batch sizes for a world of " + std::to_string(w));
  }
  auto model = make_conv_bn_model<runner::models::BatchNorm2d>();
  const int layers = runner::dist::convert_sync_batchnorm(*model, world);
  runner::dist::DataParallelOptions dp_options;
  dp_options.broadcast_buffers = false;
  DataParallel dp(world, model.ptr(), dp_options);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  auto reference = make_conv_bn_model<torch::nn::BatchNorm2d>();
  // Its gradients are the total over ranks, DataParallel's their average: the same step.
  torch::optim::SGD ref_optimizer(reference->parameters(), torch::optim::SGDOptions(0.1 / w));

  int total = 0, start = 0;
  for (int i = 0; i < w; ++i) total += batches[i];
  for (int i = 0; i < r; ++i) start += batches[i];
  const int mine = batches[r];
  torch::manual_seed(42);
  double worst = 0;
  std::string worst_what = "-";
  for (int s = 0; s < steps; ++s) {
    auto x = torch::randn({total, 3, 5, 5}) * 2 + 0.5;
    auto loss_weights = torch::randn({total, 3, 5, 5});

    auto x_local = x.slice(0, start, start + mine).clone().requires_grad_(true);
    dp.before_forward();
    auto out = model->forward(x_local);
    auto loss = (out * loss_weights.slice(0, start, start + mine)).sum();
    dp.before_backward(std::vector<torch::Tensor>{loss});
    loss.backward();

    auto x_ref = x.clone().requires_grad_(true);
    auto out_ref = reference->forward(x_ref);
    (out_ref * loss_weights).sum().backward();

    const double diffs[] = {
        relative_diff(out, out_ref.slice(0, start, start + mine)),
        relative_diff(x_local.grad(), x_ref.grad().slice(0, start, start + mine)),
        // DataParallel averages the ranks' gradients of their summed losses: the total over W.
        relative_diff(flat(model->parameters(), true) * w, flat(reference->parameters(), true)),
        relative_diff(flat(model->buffers(), false).to(torch::kFloat),
                      flat(reference->buffers(), false).to(torch::kFloat))};
    const char* names[] = {"output", "input_grad", "param_grad", "buffers"};
    for (int i = 0; i < 4; ++i) {
      if (diffs[i] > worst) {
        worst = diffs[i];
        worst_what = names[i] + std::string(" at step ") + std::to_string(s);
      }
    }
    optimizer.step();
    dp.zero_grad();
    ref_optimizer.step();
    ref_optimizer.zero_grad();
  }
  const bool ok = layers == 2 && worst <= 1e-5;
  std::cout << (ok ? "SYNCBN_OK" : "SYNCBN_FAIL") << " rank=" << r << " world=" << w
            << " batch=" << mine << " layers=" << layers << " max_rel_diff_vs_single=" << worst
            << " (" << worst_what << ")" << std::endl;
  return ok ? 0 : 1;
}

int run_gather(int n, int batch, bool pad) {
  auto world = join_world();
  const int w = world->world_size();
  const int r = world->rank();
  // A padding sampler wraps around to give every rank ceil(n/W) positions; without padding
  // ranks hold one position fewer or more, and their last batches differ in size.
  const int per_rank = pad ? (n + w - 1) / w : (n - r + w - 1) / w;
  std::vector<torch::Tensor> pieces;
  for (int start = 0; start < per_rank; start += batch) {
    const int len = std::min(batch, per_rank - start);
    auto positions = torch::arange(start, start + len, torch::kLong) * w + r;
    auto sample = positions.remainder(n);
    auto values = torch::stack({sample.to(torch::kFloat), sample.to(torch::kFloat) * 2}, 1);
    pieces.push_back(runner::dist::gather_for_metrics(*world, values, positions < n));
  }
  auto all = torch::cat(pieces);
  const bool ok = all.size(0) == n &&
                  torch::equal(all.select(1, 0), torch::arange(n, torch::kFloat)) &&
                  torch::equal(all.select(1, 1), torch::arange(n, torch::kFloat) * 2);
  std::cout << (ok ? "GATHER_OK" : "GATHER_FAIL") << " rank=" << r << " world=" << w
            << " rows=" << all.size(0) << " samples=" << n << std::endl;
  return ok ? 0 : 1;
}

int run_hold(double seconds, int fail_rank, double fail_after, int fail_code) {
  auto world = join_world();
  std::cout << "HOLD_READY rank=" << world->rank() << " pid=" << ::getpid() << std::endl;
  const auto start = std::chrono::steady_clock::now();
  auto tensor = torch::ones({16});
  while (true) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (world->rank() == fail_rank && elapsed >= fail_after) {
      std::cout << "rank " << fail_rank << " failing on purpose with code " << fail_code
                << std::endl;
      std::exit(fail_code);
    }
    if (elapsed >= seconds) break;
    world->all_reduce_(tensor);
    tensor.fill_(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cout << "HOLD_DONE rank=" << world->rank() << std::endl;
  return 0;
}

// Records libtorch's warnings (TORCH_WARN) instead of printing them.
struct WarningRecorder : c10::WarningHandler {
  std::vector<std::string> seen;
  void process(const c10::Warning& warning) override { seen.push_back(warning.msg()); }
};

int run_layout(std::vector<std::string> names) {
  auto world = join_world();
  runner::register_builtin_plugins(runner::registries());
  if (names.empty())
    for (const auto& name : runner::registries().models.names())
      if (!runner::config::is_scripted_backbone(name)) names.push_back(name);  // native ones
  WarningRecorder recorder;
  c10::WarningUtils::WarningHandlerGuard guard(&recorder);
  int bad = 0, checked = 0;
  for (const auto& name : names) {
    for (bool channels_last : {false, true}) {
      torch::manual_seed(1);
      auto model = runner::registries().models.at(name).factory(
          {{"backbone", name}, {"in_chans", 1}, {"num_classes", 10}});
      const auto format =
          channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
      {
        torch::NoGradGuard no_grad;  // as train.channels_last stores 4-D weights
        for (auto& p : model->parameters())
          if (p.dim() == 4) p.set_data(p.data().contiguous(format));
      }
      DataParallel dp(world, std::static_pointer_cast<torch::nn::Module>(model));
      model->train();
      for (int step = 0; step < 2; ++step) {
        dp.before_forward();
        auto x = torch::randn({2, 1, 32, 32}).contiguous(format);
        auto loss = model->forward(x).pow(2).mean();
        dp.before_backward(std::vector<torch::Tensor>{loss});
        loss.backward();
        for (const auto& p : model->named_parameters()) {
          const auto& g = p.value().grad();
          if (g.defined() && g.strides() != p.value().strides()) {
            std::cout << "LAYOUT_MISMATCH " << name << (channels_last ? " channels_last " : " ")
                      << p.key() << " grad strides " << g.strides() << " param strides "
                      << p.value().strides() << std::endl;
            ++bad;
          }
        }
        dp.zero_grad();
      }
      ++checked;
    }
  }
  for (const auto& w : recorder.seen) {
    std::cout << "LIBTORCH_WARNING " << w << std::endl;
    if (w.find("strides") != std::string::npos) ++bad;
  }
  if (bad) return 1;
  std::cout << "LAYOUT_OK rank=" << world->rank() << " checked=" << checked << std::endl;
  return 0;
}

int run(std::vector<std::string> args) {
  runner::launch::SpawnOptions spawn;
  while (!args.empty() && args[0].rfind("--", 0) == 0 && args.size() >= 2) {
    const std::string flag = args[0], value = args[1];
    if (flag == "--nnodes")
      spawn.nnodes = std::stoi(value);
    else if (flag == "--node-rank")
      spawn.node_rank = std::stoi(value);
    else if (flag == "--master-addr")
      spawn.master_addr = value;
    else if (flag == "--master-port")
      spawn.master_port = std::stoi(value);
    else if (flag == "--grace")
      spawn.stop_grace_s = std::stod(value);
    else
      throw runner::ConfigError("unknown flag " + flag);
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) throw runner::ConfigError("usage: dist_worker [flags] MODE ARGS...");
  const std::string mode = args[0];
  auto arg = [&](size_t i) {
    if (i >= args.size()) throw runner::ConfigError("mode " + mode + ": missing argument");
    return args[i];
  };
  if (mode == "spawn") {
    spawn.executable = runner::launch::self_executable();
    spawn.nproc_per_node = std::stoi(arg(1));
    spawn.args.assign(args.begin() + 2, args.end());
    return runner::launch::spawn_ranks(spawn).exit_code;
  }
  if (mode == "join") {
    auto world = join_world();
    world->barrier();
    std::cout << "JOINED rank=" << world->rank() << " world=" << world->world_size()
              << " backend=" << world->backend() << std::endl;
    return 0;
  }
  if (mode == "ddp")
    return run_ddp(std::stoi(arg(1)), std::stoi(arg(2)), std::stoi(arg(3)), arg(4),
                   args.size() > 5 && args[5] == "unused");
  if (mode == "gather") {
    return run_gather(std::stoi(arg(1)), std::stoi(arg(2)), args.size() < 4 || args[3] != "nopad");
  }
  if (mode == "raise") {
    auto world = join_world();
    if (world->rank() == std::stoi(arg(1))) {
      throw runner::Error("rank " + std::to_string(world->rank()) +
                          ": deliberate failure for the test");
    }
    return run_hold(60, -1, 0, 0);
  }
  if (mode == "late") {
    auto world = join_world();
    world->barrier();
    if (world->rank() == std::stoi(arg(1))) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(arg(2))));
    }
    auto tensor = torch::ones({4});
    world->all_reduce_(tensor);
    std::cout << "LATE_DONE rank=" << world->rank() << std::endl;
    return 0;
  }
  if (mode == "bn") return run_batchnorm(std::stoi(arg(1)));
  if (mode == "syncbn") {
    std::vector<int> batches;
    for (size_t i = 2; i < args.size(); ++i) batches.push_back(std::stoi(args[i]));
    return run_sync_batchnorm(std::stoi(arg(1)), batches);
  }
  if (mode == "layout") return run_layout({args.begin() + 1, args.end()});
  if (mode == "hold") return run_hold(std::stod(arg(1)), -1, 0, 0);
  if (mode == "crash") return run_hold(60, std::stoi(arg(1)), std::stod(arg(2)), std::stoi(arg(3)));
  throw runner::ConfigError("unknown mode '" + mode + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    runner::launch::write_torchelastic_error(e.what());
    return 1;
  }
}
