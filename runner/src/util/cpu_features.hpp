#pragma once
// What the CPU does natively that changes how runner runs: bf16 arithmetic (AVX512-BF16 or
// AMX), with which autocast in bf16 is faster than fp32 instead of slower; and which of ATen's
// CPU kernel sets it can run at all. Torch-free.

#include <string>

namespace runner::util {

/// The CPU flag that gives native bf16 ("amx_bf16" or "avx512_bf16", from /proc/cpuinfo), or ""
/// when there is none. RUNNER_CPU_NATIVE_BF16=0 or =1 overrides the answer (tests, and users who
/// want to choose): 0 gives "", 1 gives "RUNNER_CPU_NATIVE_BF16".
std::string native_bf16_feature();

/// The best of ATen's x86 CPU kernel sets this CPU runs, by ATen's own rule: "avx512" (AVX-512
/// F, VL, BW, DQ and FMA), "avx2" (AVX2 and FMA) or "default". From the CPU's feature bits (and
/// the kernel's saving of their registers), whatever ATEN_CPU_CAPABILITY says.
std::string cpu_aten_capability();

/// The CPU features that ATen's kernel set `capability` ("avx512", "avx2", "default") needs and
/// this CPU lacks, comma-separated; "" when it has them all or ATen does not take the name.
std::string aten_capability_missing_features(const std::string& capability);

/// "" when ATEN_CPU_CAPABILITY is unset or names kernels this CPU runs; else one line saying
/// what would happen and what to do. ATen 2.11 takes the variable at its word: kernels for a
/// capability the CPU lacks stop the process with an illegal instruction at their first call.
std::string aten_capability_refusal();

}  // namespace runner::util
