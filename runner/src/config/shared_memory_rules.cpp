#include "config/shared_memory_rules.hpp"

namespace runner::config {

std::string why_no_shared_memory(const SharedMemoryFacts& f) {
  if (!f.cpu_ranks) return "it is for CPU ranks, this run trains on CUDA";
  if (f.nodes > 1)
    return "it needs every rank on one host, this run spans " + std::to_string(f.nodes) + " nodes";
  if (f.grad_comm == "fp16") return "it averages fp32 or bf16 gradients, train.grad_comm is fp16";
  return "";
}

std::string why_not_sharded(const SharedMemoryFacts& f) {
  if (f.grad_transport == "process_group")
    return "it needs the gradients in shared memory, train.grad_transport is process_group";
  if (const std::string why = why_no_shared_memory(f); !why.empty()) return why;
  if (f.grad_comm != "fp32") return "it averages fp32 gradients, train.grad_comm is " + f.grad_comm;
  // bf16 and fp16 steps keep compute copies of the weights that each share would refresh.
  if (f.precision != Precision::kFp32)
    return "it steps fp32 weights without compute copies, precision is " +
           precision_name(f.precision);
  if (!f.optimizer_steps_shares)
    return f.optimizer.empty() ? "the optimizer steps whole parameters only"
                               : "adam and adamw step shares, the optimizer is " + f.optimizer;
  if (f.clip_grad_norm) return "train.clip_grad_norm needs the whole gradient's norm on every rank";
  // Every rank swaps the weights with their average to evaluate it: one shared copy cannot.
  if (f.ema)
    return "train.ema swaps the weights with its average on every rank, one shared copy cannot";
  return "";
}

}  // namespace runner::config
