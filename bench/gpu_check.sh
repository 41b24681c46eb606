#!/usr/bin/env bash
# The GPU device check, run ON the GPU machine from the repository root (after
# bench/gpu/prepare_deps.sh was run on the CPU machine and .gpu-deps/ travelled along):
#   1. unpack the Debian dependencies into .gpu-deps/root, build the stand-in libraries
#   2. configure with the machine's PyTorch (libtorch + CMake config inside the Python package)
#   3. build runner, unit_train and unit_recipe; run the CUDA unit tests
#   4. mnist_ddp_fp16.yaml on one GPU (the issue's "trains" check)
#   5. the reference workload (convnext_small, 56 px, batch 256, STEPS steps) in runner and in
#      Python (torch + timm + accelerate): fp16 and fp32, synthetic and Fashion-MNIST (IDX)
#   6. data.device loader and cuda (issue 27): images/s and the share of time waiting for data
#   7. a profile of runner's fp16 step (train.profile: steps 11-30; under $OUT when set)
#   8. one table: images/s, peak GPU MiB, runner/Python ratio
# Budget: under 8 minutes on one H200 with 16 cores. Usage: bench/gpu_check.sh [steps=60]
# GPU_CHECK_UNTIL=configure stops after configuring (a dry run of steps 1-2 on the CPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=${RUNNER_GPU_DEPS:-$ROOT/.gpu-deps}
BUILD=${RUNNER_GPU_BUILD:-$ROOT/build-gpu}
STEPS=${1:-60}
PY=${PYTHON:-python3}
T0=$SECONDS
say() { printf '\n== %s [%ds]\n' "$*" $((SECONDS - T0)); }
die() { echo "gpu_check: $*" >&2; exit 1; }

say "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available())' ||
  die "python3 cannot import torch (set PYTHON=...)"
command -v cmake >/dev/null || die "no cmake on PATH (pip's cmake package provides one)"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler on PATH"
[ -d "$DEPS/debs" ] || die "$DEPS/debs missing: run bench/gpu/prepare_deps.sh on the CPU machine first"

say "unpacking the dependencies"
PREFIX=$BUILD/deps-root  # outside .gpu-deps, so what travels stays small
LIB=$PREFIX/usr/lib/x86_64-linux-gnu
if [ ! -f "$PREFIX/.done" ]; then
  mkdir -p "$PREFIX/stubs"
  for deb in "$DEPS"/debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$PREFIX"
    else  # a .deb is an ar archive holding data.tar.{xz,zst}
      tmp=$(mktemp -d) && (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$PREFIX") && rm -rf "$tmp"
    fi || die "unpacking $deb failed"
  done
  for c in "$DEPS"/stubs/*.c; do
    so=$(basename "$c" .c)
    cc -shared -fPIC -o "$PREFIX/stubs/$so" -Wl,-soname,"$so" "$c" || die "building stub $so failed"
  done
  # Development links point at absolute paths (libz.so -> /lib/...): point them into the prefix,
  # or the linker falls back to a static archive built without -fPIC.
  find "$PREFIX" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in /*) [ -e "$PREFIX$target" ] && ln -sfn "$PREFIX$target" "$link" ;; esac
  done
  # dpkg -x runs no maintainer scripts: make the BLAS/LAPACK alternatives' links by hand.
  ln -sf blas/libblas.so.3 "$LIB/libblas.so.3"
  ln -sf lapack/liblapack.so.3 "$LIB/liblapack.so.3"
  touch "$PREFIX/.done"
fi
du -sh "$PREFIX"
# PyTorch bundles fmt 12 in torch/include, which comes first among the system include dirs;
# Debian's spdlog 1.10 (and its compiled library) need fmt 9. An -I dir holding only fmt 9 is
# searched before every -isystem dir; fmt/base.h (new in fmt 11) maps to fmt 9's core.h.
FMT_FIRST=$BUILD/fmt9-first
if [ ! -f "$FMT_FIRST/fmt/base.h" ]; then
  mkdir -p "$FMT_FIRST" && cp -r "$PREFIX/usr/include/fmt" "$FMT_FIRST/"
  printf '#pragma once\n#include <fmt/core.h>\n' >"$FMT_FIRST/fmt/base.h"
fi

say "configuring"
TORCH_CMAKE=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$($PY -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
GEN=("-G" "Unix Makefiles")
if command -v ninja >/dev/null; then
  GEN=("-G" "Ninja")
elif NINJA=$($PY -c 'import ninja, os; print(os.path.join(ninja.BIN_DIR, "ninja"))' 2>/dev/null); then
  GEN=("-G" "Ninja" "-DCMAKE_MAKE_PROGRAM=$NINJA")
fi
# find_package(Torch) on a CUDA build looks for the CUDA toolkit (headers, cudart).
CUDA_ARGS=()
if ! command -v nvcc >/dev/null; then
  for dir in /usr/local/cuda /usr/local/cuda-13*; do
    [ -f "$dir/include/cuda_runtime_api.h" ] && CUDA_ARGS=("-DCUDAToolkit_ROOT=$dir") && break
  done
fi
LINK_PATHS="$LIB:$PREFIX/lib/x86_64-linux-gnu:$LIB/blas:$LIB/lapack:$PREFIX/stubs:$TORCH_LIB"
export LD_LIBRARY_PATH="$LINK_PATHS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "generator ${GEN[*]}; torch cmake $TORCH_CMAKE; ${CUDA_ARGS[*]:-nvcc: $(command -v nvcc)}"
cmake -S . -B "$BUILD" "${GEN[@]}" "${CUDA_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DRUNNER_PYTHON="$(command -v "$PY")" \
  -DCMAKE_PREFIX_PATH="$PREFIX/usr;$TORCH_CMAKE" -DCMAKE_LIBRARY_ARCHITECTURE=x86_64-linux-gnu \
  -DOpenCV_DIR="$ROOT/bench/gpu/cmake" -DRUNNER_DEPS_ROOT="$PREFIX" \
  -DBoost_DIR="$LIB/cmake/Boost-1.74.0" -DBoost_NO_SYSTEM_PATHS=ON \
  -DRUNNER_USE_CCACHE=OFF -DRUNNER_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-I$FMT_FIRST" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$LINK_PATHS" \
  -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$LINK_PATHS" >"$BUILD.configure.log" 2>&1 ||
  { tail -40 "$BUILD.configure.log"; die "configure failed (log: $BUILD.configure.log)"; }
grep -E "^(Torch_DIR|OpenCV_DIR|yaml-cpp_DIR|spdlog_DIR|Boost_DIR|GTest_DIR|VALIJSON_INCLUDE_DIR|GLOO_INCLUDE_DIR)" \
  "$BUILD/CMakeCache.txt"
[ "${GPU_CHECK_UNTIL:-}" = configure ] && exit 0

say "building runner and unit_train"
# -k 0: one call shows every compile error (device time is too short for one error per try).
KEEP_GOING=(-k 0)
[ "${GEN[1]}" = Ninja ] || KEEP_GOING=(-k)
TARGETS=(runner unit_train unit_recipe)
[ -n "${GPU_CHECK_SKIP_UNIT:-}" ] && TARGETS=(runner)  # a rerun after the unit tests passed
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$(nproc)" -- "${KEEP_GOING[@]}" >"$BUILD.build.log" 2>&1 ||
  { grep -E "error:|Error [0-9]|undefined reference" "$BUILD.build.log" | sort -u | head -80
    die "build failed (log: $BUILD.build.log)"; }
RUNNER=$BUILD/runner/runner
UNIT_TRAIN=$(find "$BUILD" -name unit_train -type f | head -1)
UNIT_RECIPE=$(find "$BUILD" -name unit_recipe -type f | head -1)

if [ -z "${GPU_CHECK_SKIP_UNIT:-}" ]; then
  say "unit tests that need CUDA (and the scaler's)"
  "$UNIT_TRAIN" --gtest_filter='CudaPaths.*:GradScaler*' --gtest_brief=1 || echo "UNIT TESTS FAILED"
  "$UNIT_RECIPE" --gtest_filter='RandAugmentBatched.*' --gtest_brief=1 || echo "UNIT TESTS FAILED"
fi

say "experiments/mnist_ddp_fp16.yaml on one GPU (Fashion-MNIST test split as data)"
MNIST_ROOT=$DEPS/fashion-mnist "$RUNNER" run experiments/mnist_ddp_fp16.yaml \
  --set launch.num_processes=1 --set data.dataset.val_split=9488 --set train.epochs=1 \
  --set output.root="$BUILD/runs" 2>&1 | tail -8 || echo "MNIST RUN FAILED"

# Issue 16: two ranks share the one GPU over Gloo (NCCL refuses two ranks on one device; runner
# says so before starting them, which the second command checks).
say "2 ranks on one GPU over gloo (launch.gpu_ids [0,0]), 1 epoch of the test split"
MNIST_ROOT=$DEPS/fashion-mnist "$RUNNER" run experiments/mnist_ddp_fp16.yaml \
  --set launch.backend=gloo --set "launch.gpu_ids=[0,0]" --set data.dataset.val_split=9488 \
  --set train.epochs=1 --set output.root="$BUILD/runs" 2>&1 | tail -8 || echo "GLOO 2-RANK RUN FAILED"
"$RUNNER" run experiments/mnist_ddp_fp16.yaml --set launch.backend=nccl --set "launch.gpu_ids=[0,0]" \
  2>&1 | tail -2

RESULTS=$BUILD/gpu_check_results.tsv
: >"$RESULTS"
run_runner() {  # data precision [data.device: auto when not given]
  local data=$1 precision=$2 device=${3:-auto} tag=${1}_${2}${3:+_$3}
  local yaml=$BUILD/check_$tag.yaml dataset transforms
  if [ "$data" = synthetic ]; then
    dataset="{name: synthetic, train_size: $((STEPS * 256 + 512)), val_size: 512, test_size: 0, height: 56, width: 56, channels: 1, num_classes: 10}"
    transforms="[{name: normalize, mean: 0.5, std: 0.25}]"
  else
    dataset="{name: mnist, root: $DEPS/fashion-mnist, val_split: 9488}"
    transforms="[{name: horizontal_flip, p: 0.5}, {name: resize, height: 56, width: 56, interpolation: lanczos4}, {name: normalize, mean: 0.2860, std: 0.3530}]"
  fi
  cat >"$yaml" <<YAML
name: gpu_check_$tag
seed: 0
launch: {num_processes: 1, device: cuda, cudnn_benchmark: true}
precision: $precision
data:
  dataset: $dataset
  train_transforms: $transforms
  eval_transforms: [{name: resize, height: 56, width: 56}]
  num_workers: 12
  device: $device
model: {backbone: convnext_small, pretrained: false, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 5.0e-5}
train: {epochs: 10, batch_size: 256, max_steps: $STEPS, log_every_steps: 5}
predict: {enabled: false}
output: {root: $BUILD/runs, run_dir: $BUILD/runs/check_$tag}
YAML
  [ "$data" = synthetic ] && sed -i 's/eval_transforms: .*/eval_transforms: []/' "$yaml"
  rm -rf "$BUILD/runs/check_$tag"
  "$RUNNER" run "$yaml" >"$BUILD/check_$tag.log" 2>&1 ||
    { tail -5 "$BUILD/check_$tag.log"; echo "runner $tag FAILED"; return; }
  $PY - "$BUILD/runs/check_$tag" "$data" "$precision" "${3:+:$3}" >>"$RESULTS" <<'PYEOF'
import json, sys
d, data, precision, device = sys.argv[1:]
s = json.load(open(d + "/summary.json"))
steps = [json.loads(l) for l in open(d + "/metrics.jsonl") if '"kind":"step"' in l]
scales = [r.get("scale") for r in steps if "scale" in r]
waits = [r["data_wait"] for r in steps[1:] if "data_wait" in r] or [float("nan")]
print(f"runner{device}\t{data}\t{precision}\t{s['train_images_per_s']:.0f}\t{s['peak_gpu_mib']:.0f}"
      f"\t{s['optimizer_steps']}\t{scales}\t{s['train_loader']['batches_made_on']}"
      f"\t{100 * sum(waits) / len(waits):.1f}")
PYEOF
}
run_python() {  # data precision
  [ -n "${GPU_CHECK_SKIP_PYTHON:-}" ] && return  # a rerun that keeps the earlier Python figures
  $PY bench/gpu/accelerate_reference.py --data "$1" --precision "$2" --steps "$STEPS" \
    --root "$DEPS/fashion-mnist" --workers 12 >>"$RESULTS" 2>"$BUILD/python_${1}_${2}.log" ||
    { tail -5 "$BUILD/python_${1}_${2}.log"; echo "python $1 $2 FAILED"; }
}
for data in synthetic fashion; do
  for precision in fp16 fp32; do
    say "reference workload: $data $precision ($STEPS steps, batch 256)"
    run_runner "$data" "$precision"
    run_python "$data" "$precision"
    tail -2 "$RESULTS"
  done
done

# Issue 75, item 2: where runner's fp16 step goes on the GPU. train.profile records steps 11-30
# of the synthetic fp16 run above with Kineto: kernels, host time, syncs a step, the top ops.
say "profile: runner's fp16 step (synthetic, batch 256, train.profile steps 11-30)"
PROFILE_RUN=$BUILD/runs/profile_fp16
rm -rf "$PROFILE_RUN"
"$RUNNER" run "$BUILD/check_synthetic_fp16.yaml" --set name=gpu_check_profile \
  --set output.run_dir="$PROFILE_RUN" --set train.profile.enabled=true \
  --set train.profile.skip_steps=10 --set train.profile.steps=20 >"$BUILD/profile_fp16.log" 2>&1 ||
  { tail -5 "$BUILD/profile_fp16.log"; echo "PROFILE FAILED"; }
cat "$PROFILE_RUN/profile/summary.md" 2>/dev/null
if [ -n "${OUT:-}" ] && [ -d "$PROFILE_RUN/profile" ]; then  # the device tool brings $OUT back
  mkdir -p "$OUT/profile_fp16"
  cp "$PROFILE_RUN/profile/summary.md" "$PROFILE_RUN/summary.json" "$OUT/profile_fp16/"
  gzip -c "$PROFILE_RUN/profile/trace.json" >"$OUT/profile_fp16/trace.json.gz"  # Perfetto opens it
fi

# Issue 27: where batches are made (data.device), the reference transforms on Fashion-MNIST.
for device in loader cuda; do
  say "data.device $device: fashion fp16 ($STEPS steps, batch 256)"
  run_runner fashion fp16 "$device"
  tail -1 "$RESULTS"
done

# Issue 52: model.grad_checkpointing's GPU memory saved (the CUDA caching allocator's peak).
say "grad checkpointing on cuda: convnext_small and resnet50, 224 px, batch 64"
DEVICE=cuda REPS=1 RUNNER="$RUNNER" PYTHON="$PY" OUT="$BUILD/grad_checkpointing" \
  SPECS="convnext_small 224 64 20; resnet50 224 64 20" bench/grad_checkpointing.sh ||
  echo "grad checkpointing bench FAILED"

say "results (images/s excludes the first 3 steps; peak = CUDA caching allocator's peak)"
$PY - "$RESULTS" <<'PYEOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
table = {(r[0], r[1], r[2]): r for r in rows}
print(f"{'data':10} {'prec':5} {'runner img/s':>12} {'python img/s':>12} {'ratio':>6} {'runner MiB':>10} {'python MiB':>10}")
for data in ("synthetic", "fashion"):
    for precision in ("fp16", "fp32"):
        r, p = table.get(("runner", data, precision)), table.get(("python", data, precision))
        ri = float(r[3]) if r else 0.0
        pi = float(p[3]) if p else 0.0
        ratio = f"{ri / pi:.2f}" if ri and pi else "-"
        print(f"{data:10} {precision:5} {ri:12.0f} {pi:12.0f} {ratio:>6} {r[4] if r else '-':>10} {p[4] if p else '-':>10}")
print(f"\n{'data.device':14} {'img/s':>7} {'made on':>8} {'data wait %':>11} {'MiB':>7}")
for r in rows:
    if r[0].startswith("runner") and len(r) > 8:
        print(f"{r[0]:14} {r[3]:>7} {r[7]:>8} {r[8]:>11} {r[4]:>7}")
for r in rows:
    if r[0] == "runner" and r[2] == "fp16":
        print(f"runner {r[1]} fp16: {r[5]} optimizer steps; loss scale every 5 steps: {r[6]}")
PYEOF
say "done"
