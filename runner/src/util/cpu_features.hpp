#pragma once
// What the CPU does natively that changes how runner runs: bf16 arithmetic (AVX512-BF16 or
// AMX), with which autocast in bf16 is faster than fp32 instead of slower. Torch-free.

#include <string>

namespace runner::util {

/// The CPU flag that gives native bf16 ("amx_bf16" or "avx512_bf16", from /proc/cpuinfo), or ""
/// when there is none. RUNNER_CPU_NATIVE_BF16=0 or =1 overrides the answer (tests, and users who
/// want to choose): 0 gives "", 1 gives "RUNNER_CPU_NATIVE_BF16".
std::string native_bf16_feature();

}  // namespace runner::util
