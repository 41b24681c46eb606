#!/usr/bin/env bash
# The suite on a CPU without AVX-512 (issue 76), on any x86-64 machine: QEMU's user-mode Haswell
# (AVX2 and FMA, no AVX-512; Debian's qemu-user-static) runs the tests that depend on the CPU's
# instruction sets: runner's target_clones kernels and the bf16 copies pick their AVX2 clones,
# a test forced onto AVX-512 kernels skips saying why, and runner refuses ATEN_CPU_CAPABILITY=
# avx512 in one line where ATen would stop with an illegal instruction. Small tensors only:
# QEMU runs vector code hundreds of times slower.
#
#   isa_avx2_test.sh UNIT_BIN_DIR RUNNER_ENGINE SOURCE_DIR
set -euo pipefail
bin=$1
engine=$2
src=$3
source "$src/tests/integration/lib.sh"
qemu=$(command -v qemu-x86_64-static || true)
if [ -z "$qemu" ]; then
  echo "SKIPPED: no qemu-x86_64-static (Debian's qemu-user-static; make test installs it)"
  exit 77
fi
[ "$(uname -m)" = x86_64 ] || { echo "SKIPPED: not an x86-64 machine"; exit 77; }
# Haswell without TSX, less what QEMU's TCG cannot give (each would print a warning line): the
# vector instruction sets are Haswell's (AVX2, FMA, F16C, no AVX-512).
haswell=("$qemu" -cpu Haswell-v2,-x2apic,-tsc-deadline,-invpcid,-pcid)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# runner-engine directly: `runner` execs it, and an exec leaves QEMU for the host's CPU.
export GOMP_SPINCOUNT=10000 OMP_NUM_THREADS=1

# The emulated CPU is what this test needs: ATen and runner both see AVX2 and no AVX-512.
expect_exit 0 "${haswell[@]}" "$engine" env --json
expect_output '"cpu_aten_capability": "avx2"'
expect_output '"aten_cpu_capability": "AVX2"'
if grep -qF '"cpu_aten_capability": "avx2"' <<<"$out"; then
  echo "ok: under QEMU's Haswell, runner and ATen see AVX2 and no AVX-512"
else
  echo "FAIL: QEMU's Haswell is not an AVX2-only CPU here; nothing below would prove anything"
  finish
fi

# runner env names the variable and what it would do, without running a kernel.
expect_exit 0 env ATEN_CPU_CAPABILITY=avx512 "${haswell[@]}" "$engine" env
expect_output "ATEN_CPU_CAPABILITY=avx512 but this CPU has no AVX-512"
expect_output "this CPU runs up to avx2"

# runner validate and runner run refuse it in one line, exit 2, before anything starts.
for verb in validate run; do
  expect_exit 2 env ATEN_CPU_CAPABILITY=avx512 "${haswell[@]}" "$engine" "$verb" \
    "$src/experiments/quickstart.yaml" --set "output.root=$tmp/runs"
  expect_output "runner: error: ATEN_CPU_CAPABILITY=avx512 but this CPU has no AVX-512 (avx512f, avx512vl, avx512bw, avx512dq missing): ATen would stop with an illegal instruction; unset it or use avx2"
  [ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: $verb said more than one line"; failures=$((failures + 1)); }
  [ ! -e "$tmp/runs" ] || { echo "FAIL: $verb made $tmp/runs"; failures=$((failures + 1)); }
done
echo "ok: validate and run refuse ATEN_CPU_CAPABILITY=avx512 in one line"

# A unit test forced onto AVX-512 kernels skips (ctest's SKIP_RETURN_CODE), naming what is missing.
expect_exit 77 env ATEN_CPU_CAPABILITY=avx512 "${haswell[@]}" "$bin/unit_models" \
  --gtest_filter='ComputeCopies.*'
expect_output "SKIPPED: ATEN_CPU_CAPABILITY=avx512 but this CPU has no AVX-512"
# Without the skip it would die: ATen runs the AVX-512 kernels it was told to (SIGILL, 128+4).
ulimit -c 0  # QEMU would write the guest's core file
expect_exit 132 env ATEN_CPU_CAPABILITY=avx512 RUNNER_TEST_IGNORE_CPU=1 "${haswell[@]}" \
  "$bin/unit_plugins" --gtest_filter='Optimizers.AdamAndAdamwWriteTheBf16CopiesAndStepAsWithAutocastsCast'
echo "ok: a test forced onto AVX-512 kernels skips (run anyway, ATen stops with SIGILL)"

# The capability rule, the bf16 copies and runner's own kernels on the AVX2 CPU: their clones
# and ATen's AVX2 kernels give the results the tests expect.
expect_exit 0 "${haswell[@]}" "$bin/unit_util" --gtest_filter='CpuFeatures.*'
expect_exit 0 "${haswell[@]}" "$bin/unit_plugins" \
  --gtest_filter='Optimizers.*Bf16Copies*:Optimizers.*Probe*:Optimizers.RunnersAdam*'
expect_output "[  PASSED  ]"
expect_exit 0 "${haswell[@]}" "$bin/unit_models" \
  --gtest_filter='ComputeCopies.*:CpuBatchNorm.*:MaxPool3x3s2.*:DepthwiseConv.*-ComputeCopies.TheNativeModelsTrainAsWithAutocastsCast'
expect_output "[  PASSED  ]"
echo "ok: the bf16 copies and runner's CPU kernels pass on an AVX2-only CPU"
finish
