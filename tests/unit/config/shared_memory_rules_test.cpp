#include "config/shared_memory_rules.hpp"

#include <gtest/gtest.h>

namespace runner::config {
namespace {

SharedMemoryFacts applies() {
  SharedMemoryFacts facts;
  facts.optimizer = "adam";
  facts.optimizer_steps_shares = true;
  return facts;
}

// The one rule `runner validate` and the ranks ask: each fact that rules the sharded step out
// is named in the reason a user reads after "train.shard_optimizer: on cannot be used here".
TEST(SharedMemoryRules, EachFactThatRulesTheShardedStepOutIsNamed) {
  EXPECT_EQ(why_not_sharded(applies()), "");
  struct Case {
    void (*change)(SharedMemoryFacts&);
    const char* named;
  };
  const Case cases[] = {
      {[](SharedMemoryFacts& f) { f.cpu_ranks = false; }, "CUDA"},
      {[](SharedMemoryFacts& f) { f.nodes = 2; }, "2 nodes"},
      {[](SharedMemoryFacts& f) { f.grad_transport = "process_group"; }, "process_group"},
      {[](SharedMemoryFacts& f) { f.grad_comm = "bf16"; }, "grad_comm is bf16"},
      {[](SharedMemoryFacts& f) { f.precision = Precision::kBf16; }, "precision is bf16"},
      {[](SharedMemoryFacts& f) {
         f.optimizer = "sgd";
         f.optimizer_steps_shares = false;
       },
       "the optimizer is sgd"},
      {[](SharedMemoryFacts& f) {
         f.optimizer = "";
         f.optimizer_steps_shares = false;
       },
       "whole parameters only"},
      {[](SharedMemoryFacts& f) { f.clip_grad_norm = true; }, "train.clip_grad_norm"},
      {[](SharedMemoryFacts& f) { f.ema = true; }, "train.ema"},
  };
  for (const Case& c : cases) {
    SharedMemoryFacts facts = applies();
    c.change(facts);
    EXPECT_NE(why_not_sharded(facts).find(c.named), std::string::npos)
        << c.named << ": " << why_not_sharded(facts);
  }
}

// The transport's rule is the sharded step's first part: CPU ranks of one host, no fp16.
TEST(SharedMemoryRules, GradientsGoThroughSharedMemoryOnlyOnOneHostOfCpuRanks) {
  SharedMemoryFacts facts;
  EXPECT_EQ(why_no_shared_memory(facts), "");
  facts.grad_comm = "bf16";
  EXPECT_EQ(why_no_shared_memory(facts), "") << "bf16 gradients go through shared memory";
  facts.grad_comm = "fp16";
  EXPECT_NE(why_no_shared_memory(facts).find("train.grad_comm is fp16"), std::string::npos);
  facts.grad_comm = "fp32";
  facts.nodes = 3;
  EXPECT_NE(why_no_shared_memory(facts).find("spans 3 nodes"), std::string::npos);
  facts.nodes = 1;
  facts.cpu_ranks = false;
  EXPECT_NE(why_no_shared_memory(facts).find("CUDA"), std::string::npos);
}

}  // namespace
}  // namespace runner::config
