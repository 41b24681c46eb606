#!/usr/bin/env bash
# Where batches are made (data.device): the per-sample loader (loader threads, OpenCV, collate)
# against data.device cpu (the split as one uint8 tensor, each batch augmented whole by the
# batched transforms), in whole training runs on Fashion-MNIST with the reference workload's
# transforms at 56 px: small_cnn, where data dominates, and convnext_atto, where compute does.
# One process with 2 threads, and 2 processes with 1 thread each (the reference workload's
# layout), fp32; the two paths interleaved per repetition. Prints images/s and
# the share of the training loop spent waiting for the next batch (step records' data_wait,
# the first window left out), and the CPU seconds the whole run took (all threads of all ranks).
#
#   bench/data_device.sh          (REPS=3; BUILD_DIR=build)
#   SPECS="convnext_atto 32 100 2 1" bench/data_device.sh   (backbone batch steps processes threads; ';' between)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-3}
OUT=${OUT:-bench/out/data_device}
PYTHON=${PYTHON:-.venv/bin/python}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
mkdir -p "$OUT"

source bench/reference_experiment.sh

report() {  # label run_dir
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
label, run_dir = sys.argv[1], sys.argv[2]
user, system = map(float, open(f"{run_dir}.cpu").read().split()[-2:])
summary = json.load(open(f"{run_dir}/summary.json"))
steps = [json.loads(l) for l in open(f"{run_dir}/metrics.jsonl") if '"kind":"step"' in l]
waits = [s["data_wait"] for s in steps[1:]] or [float("nan")]
print(f"{label:<40} {summary['train_images_per_s']:6.1f} img/s   data wait {100 * sum(waits) / len(waits):4.1f}%"
      f"   CPU {user + system:6.1f} s   ({summary['train_loader']['batches_made_on']})")
PY
}

SPECS=${SPECS:-"small_cnn 128 120 1 2;convnext_atto 64 100 1 2;convnext_atto 32 100 2 1"}
IFS=';' read -ra SPEC_LIST <<<"$SPECS"
for spec in "${SPEC_LIST[@]}"; do
  set -- $spec
  name=$1_$4x$5
  reference_experiment "data_device_$name" "$1" "$4" "$5" "$2" "$3" 0.1310 0.30854 >"$OUT/$name.yaml"
  for rep in $(seq 1 "$REPS"); do
    for device in loader cpu; do
      dir=$OUT/$name.$device.$rep
      rm -rf "$dir"
      # CPU seconds of the launcher and its ranks (GNU time counts waited-for children).
      /usr/bin/time -f "%U %S" -o "$dir.cpu" "$RUNNER" run "$OUT/$name.yaml" \
        --set "output.run_dir=$dir" --set "data.device=$device" >"$dir.log" 2>&1 ||
        { echo "failed: see $dir.log" >&2; exit 1; }
      report "rep $rep $name data.device=$device" "$dir"
    done
  done
done
