#!/usr/bin/env bash
# Where batches are made (data.device): the per-sample loader (loader threads, OpenCV, collate)
# against data.device cpu (the split as one uint8 tensor, each batch augmented whole by the
# batched transforms), in whole training runs on Fashion-MNIST with the reference workload's
# transforms at 56 px: small_cnn, where data dominates, and convnext_atto, where compute does.
# One process, 2 threads, fp32; the two paths interleaved per repetition. Prints images/s and
# the share of the training loop spent waiting for the next batch (step records' data_wait,
# the first window left out).
#
#   bench/data_device.sh          (REPS=3; BUILD_DIR=build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-3}
OUT=${OUT:-bench/out/data_device}
PYTHON=${PYTHON:-.venv/bin/python}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
mkdir -p "$OUT"

experiment() {  # backbone batch steps
  cat <<YAML
name: data_device_$1
seed: 42
launch: {num_processes: 1, device: cpu, threads_per_process: 2}
precision: fp32
data:
  dataset: {name: mnist, root: /usr/share/datasets/fashion-mnist, val_split: 50000}
  train_transforms:
    - {name: horizontal_flip, p: 0.5}
    - {name: vertical_flip, p: 0.5}
    - {name: random_brightness_contrast, p: 0.2}
    - {name: resize, height: 56, width: 56, interpolation: lanczos4}
    - {name: normalize, mean: 0.1310, std: 0.30854}
  eval_transforms:
    - {name: resize, height: 56, width: 56, interpolation: lanczos4}
    - {name: normalize, mean: 0.1310, std: 0.30854}
  num_workers: 2
  limit: {val: 256, test: 64}
model: {backbone: $1, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 1e-3}
scheduler: {name: none}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: $2, eval_batch_size: 256, max_steps: $3, log_every_steps: 5}
predict: {enabled: false}
YAML
}

report() {  # label run_dir
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
label, run_dir = sys.argv[1], sys.argv[2]
summary = json.load(open(f"{run_dir}/summary.json"))
steps = [json.loads(l) for l in open(f"{run_dir}/metrics.jsonl") if '"kind":"step"' in l]
waits = [s["data_wait"] for s in steps[1:]] or [float("nan")]
print(f"{label:<34} {summary['train_images_per_s']:8.1f} img/s   data wait {100 * sum(waits) / len(waits):5.1f}%"
      f"   ({summary['train_loader']['batches_made_on']})")
PY
}

for spec in "small_cnn 128 120" "convnext_atto 64 30"; do
  set -- $spec
  experiment "$1" "$2" "$3" >"$OUT/$1.yaml"
  for rep in $(seq 1 "$REPS"); do
    for device in loader cpu; do
      dir=$OUT/$1.$device.$rep
      rm -rf "$dir"
      "$RUNNER" run "$OUT/$1.yaml" --set "output.run_dir=$dir" --set "data.device=$device" \
        >"$dir.log" 2>&1 || { echo "failed: see $dir.log" >&2; exit 1; }
      report "rep $rep $1 data.device=$device" "$dir"
    done
  done
done
