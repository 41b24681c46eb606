#!/usr/bin/env bash
# model.grad_checkpointing: the host memory a training run's peak needs with and without
# recomputing each block in backward, and what it costs in speed, as whole runs on the CPU
# (synthetic 1-channel images, one process, fp32), the two interleaved per repetition. Prints
# each run's peak RSS (summary.json's peak_rss_mib_all_ranks: the whole process, weights,
# optimizer state and libtorch included) and steady images/s, then the ratios.
#
#   bench/grad_checkpointing.sh        (REPS=2; SPECS="backbone size batch steps; ...")
#   DEVICE=cuda bench/grad_checkpointing.sh   (bench/gpu_check.sh: the CUDA caching allocator's
#                                              peak, summary.json's peak_gpu_mib, is compared)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-2}
SPECS=${SPECS:-"convnext_tiny 128 32 6; resnet50 128 32 6"}
OUT=${OUT:-bench/out/grad_checkpointing}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cpu}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
mkdir -p "$OUT"
IFS=';' read -ra specs <<<"$SPECS"
for spec in "${specs[@]}"; do
  read -r backbone size batch steps <<<"$spec"
  cat >"$OUT/$backbone.yaml" <<YAML
name: ckpt_bench
seed: 0
launch: {num_processes: 1, device: $DEVICE, threads_per_process: 2}
data:
  dataset: {name: synthetic, height: $size, width: $size, train_size: $((batch * steps)), val_size: 0, test_size: 0}
  num_workers: 1
model: {backbone: $backbone, in_chans: 1, num_classes: 10}
optimizer: {name: adamw, lr: 0.001}
scheduler: {name: none}
train: {epochs: 1, batch_size: $batch, log_every_steps: 1}
predict: {enabled: false}
output: {tensorboard: false}
YAML
  for rep in $(seq "$REPS"); do
    for on in false true; do
      dir="$OUT/${backbone}_${on}_$rep"
      rm -rf "$dir"
      "$RUNNER" run "$OUT/$backbone.yaml" --set "output.run_dir=$dir" \
        --set "model.grad_checkpointing=$on" >"$dir.log" 2>&1
      "$PYTHON" - "$backbone" "$on" "$dir" <<'PY'
import json, sys
backbone, on, run_dir = sys.argv[1:]
summary = json.load(open(f"{run_dir}/summary.json"))
steps = [json.loads(l) for l in open(f"{run_dir}/metrics.jsonl") if '"kind":"step"' in l]
speed = sorted(s["images_per_s"] for s in steps[1:])[len(steps[1:]) // 2]
gpu = summary.get("peak_gpu_mib", 0.0)
# On a GPU the activations live in device memory: its peak is what checkpointing saves there.
memory = gpu if gpu > 0 else summary["peak_rss_mib_all_ranks"]
print(f"{backbone:14s} checkpointing {on:5s}  peak {'GPU' if gpu > 0 else 'RSS'} {memory:7.0f} MiB  "
      f"{speed:6.1f} img/s", flush=True)
with open(f"{run_dir}.result", "w") as f:
    json.dump({"rss": memory, "speed": speed}, f)
PY
    done
  done
  "$PYTHON" - "$OUT" "$backbone" "$REPS" <<'PY'
import json, sys
out, backbone, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
load = lambda on: [json.load(open(f"{out}/{backbone}_{on}_{r}.result")) for r in range(1, reps + 1)]
off, on = load("false"), load("true")
rss = min(r["rss"] for r in on) / min(r["rss"] for r in off)
speed = max(r["speed"] for r in on) / max(r["speed"] for r in off)
saved = min(r["rss"] for r in off) - min(r["rss"] for r in on)
print(f"{backbone}: peak memory x{rss:.2f} ({saved:.0f} MiB saved), speed x{speed:.2f} with grad checkpointing")
PY
done
