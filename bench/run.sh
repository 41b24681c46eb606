#!/usr/bin/env bash
# Runner vs the Python baseline (bench/python_baseline.py), interleaved A B A B, against the compute
# floor (floor_bench). Prints a table and writes it to $OUT/RESULTS.md (bench/RESULTS.md holds the
# hand-written sections of later sessions below its first table: copy the new table over the
# first part by hand). Not part of the test suite.
#
#   bench/run.sh                 quick mode: a few steps per config, small val/test (~10 min idle)
#   MODE=full bench/run.sh       whole epochs on all the data (hours on 2 cores)
#   REPS=3 CONFIGS="small_cnn_28_1x2 resnet18_56_2x1" STEPS_SCALE=2 bench/run.sh
# Env: BUILD_DIR (build), RUNNER and FLOOR (the binaries, default under BUILD_DIR), PYTHON (.venv/bin/python: the project venv made by `make deps`), OUT (bench/out), REPS (2), MODE (quick),
#      STEPS_SCALE (1: multiplies the quick steps), PY_FLOOR (1: also time the Python floor),
#      BUSY (0: number of busy-loop processes competing for the cores during the whole run, to see
#      how each side copes with shared cores).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-bench/out}
REPS=${REPS:-2}
MODE=${MODE:-quick}
STEPS_SCALE=${STEPS_SCALE:-1}
PY_FLOOR=${PY_FLOOR:-1}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
FLOOR=${FLOOR:-$BUILD_DIR/bench/floor_bench}
ROOT=/usr/share/datasets/fashion-mnist
LR=1e-3

if [[ ! -x $RUNNER || ! -x $FLOOR ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
  cmake --build "$BUILD_DIR" --target runner floor_bench -j "$(nproc)"
fi
"$PYTHON" -c 'import torch, timm, accelerate, albumentations, cv2' 2>/dev/null || {
  echo "bench needs $PYTHON with torch, timm, accelerate, albumentations and cv2: run make deps" >&2
  exit 1
}

# name backbone size processes threads batch_per_process quick_steps
ALL_CONFIGS=(
  "small_cnn_28_1x2 small_cnn 28 1 2 128 20"
  "resnet18_56_1x2 resnet18 56 1 2 64 10"
  "resnet18_56_2x1 resnet18 56 2 1 32 10"
  "convnext_atto_56_1x2 convnext_atto 56 1 2 64 10"
  "convnext_small_56_2x1 convnext_small 56 2 1 16 30"
)
CONFIGS=${CONFIGS:-small_cnn_28_1x2 resnet18_56_1x2 resnet18_56_2x1 convnext_atto_56_1x2}

mkdir -p "$OUT"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

# Both sides build the models as timm does (resnets with timm's default zero_init_last: true),
# so accuracies compare.
runner_yaml() {  # name backbone size procs threads batch steps run_dir
  local resize="" limits="" steps="null"
  if [[ $3 != 28 ]]; then resize="    - {name: resize, height: $3, width: $3, interpolation: lanczos4}"; fi
  if [[ $MODE == quick ]]; then
    steps=$7
    limits="  limit: {val: 500, test: 500}"
  fi
  cat <<YAML
name: bench_$1
seed: 42
launch: {num_processes: $4, device: cpu, threads_per_process: $5}
precision: fp32
data:
  dataset: {name: mnist, root: $ROOT, val_split: 50000}
  train_transforms:
    - {name: horizontal_flip, p: 0.5}
    - {name: vertical_flip, p: 0.5}
    - {name: random_brightness_contrast, p: 0.2}
$resize
    - {name: normalize, mean: 0.2860, std: 0.3530}
  eval_transforms:
$resize
    - {name: normalize, mean: 0.2860, std: 0.3530}
  num_workers: 2
$limits
model: {backbone: $2, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: $LR}
scheduler: {name: none}
loss: {name: cross_entropy}
metrics: [{name: accuracy}]
train:
  epochs: 1
  batch_size: $6
  eval_batch_size: $(($6 * 2))
  max_steps: $steps
  best: {metric: accuracy, mode: max}
predict: {split: test, output: submission.csv, format: kaggle}
output: {run_dir: $8}
YAML
}

python_cmd() {  # name backbone size procs threads batch steps run_dir
  local args=(bench/python_baseline.py --model "$2" --image_size "$3" --bs "$6" --threads "$5" --lr $LR
    --ep 1 --num_workers 2 --root $ROOT --out "$8" --cpu)
  if [[ $MODE == quick ]]; then args+=(--max_steps "$7" --limit_val 500 --limit_test 500); fi
  if [[ $4 == 1 ]]; then
    echo "$PYTHON ${args[*]}"
  else
    echo "$PYTHON -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node $4 ${args[*]}"
  fi
}

record() {  # config side rep run_dir monitor.json
  "$PYTHON" - "$@" >>"$RESULTS" <<'PY'
import json, sys
cfg, side, rep, run_dir, mon = sys.argv[1:6]
s = json.load(open(f"{run_dir}/summary.json"))
m = json.load(open(mon))
acc = (s.get("best_metrics") or {}).get("accuracy")
print(json.dumps({"config": cfg, "side": side, "rep": int(rep), "images_per_s": s["train_images_per_s"],
                  "steps": s.get("optimizer_steps"), "first_step_s": s["first_step_unix_time"] - m["start_unix_time"],
                  "epoch_s": s["mean_epoch_seconds"], "wall_s": m["wall_seconds"], "peak_rss_mib": m["peak_rss_mib"],
                  "peak_pss_mib": m["peak_pss_mib"], "processes": m["max_processes"], "accuracy": acc}))
PY
}

floor() {  # config backbone size procs threads batch rep
  local steps=$((16 * STEPS_SCALE)) pids=() i
  for ((i = 0; i < $4; i++)); do
    "$FLOOR" "$2" "$3" "$6" "$5" $steps 3 >"$OUT/$1.floor.$i.json" &
    pids+=($!)
  done
  wait "${pids[@]}"
  if [[ $PY_FLOOR == 1 && $7 == 1 ]]; then
    pids=()
    for ((i = 0; i < $4; i++)); do
      "$PYTHON" bench/python_baseline.py --floor --model "$2" --image_size "$3" --bs "$6" --threads "$5" \
        --max_steps $steps >"$OUT/$1.pyfloor.$i.json" &
      pids+=($!)
    done
    wait "${pids[@]}"
  fi
  "$PYTHON" - "$1" "$4" "$OUT" "$PY_FLOOR" "$7" >>"$RESULTS" <<'PY'
import json, sys
cfg, n, out, rep = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[5])
py = sys.argv[4] == "1" and rep == 1
for side, stem in [("floor", "floor")] + ([("pyfloor", "pyfloor")] if py else []):
    ips = sum(json.load(open(f"{out}/{cfg}.{stem}.{i}.json"))["images_per_s"] for i in range(n))
    print(json.dumps({"config": cfg, "side": side, "rep": rep, "images_per_s": ips}))
PY
}

BUSY=${BUSY:-0}
export BUSY
busy_pids=()
for ((i = 0; i < BUSY; i++)); do
  sh -c 'while :; do :; done' &
  busy_pids+=($!)
done
trap '[[ ${#busy_pids[@]} -gt 0 ]] && kill "${busy_pids[@]}" 2>/dev/null' EXIT

echo "bench: mode $MODE, $REPS reps, busy loops $BUSY, configs: $CONFIGS" >&2
for rep in $(seq 1 "$REPS"); do
  for spec in "${ALL_CONFIGS[@]}"; do
    read -r name backbone size procs threads batch steps <<<"$spec"
    [[ " $CONFIGS " == *" $name "* ]] || continue
    steps=$((steps * STEPS_SCALE))
    # Alternate which side goes first so that drift in machine load hits both equally.
    sides=(runner python)
    if ((rep % 2 == 0)); then sides=(python runner); fi
    for side in "${sides[@]}"; do
      dir=$OUT/$name.$side.$rep
      rm -rf "$dir"
      mkdir -p "$dir"
      if [[ $side == runner ]]; then
        runner_yaml "$name" "$backbone" "$size" "$procs" "$threads" "$batch" "$steps" "$dir" >"$OUT/$name.yaml"
        cmd="$RUNNER run $OUT/$name.yaml"
      else
        cmd=$(python_cmd "$name" "$backbone" "$size" "$procs" "$threads" "$batch" "$steps" "$dir")
      fi
      echo "[$rep/$REPS] $name $side: $cmd" >&2
      echo "$name $side $cmd" >>"$OUT/commands.txt"
      # shellcheck disable=SC2086
      "$PYTHON" bench/monitor.py "$dir.monitor.json" -- $cmd >"$dir.log" 2>&1 || {
        echo "FAILED: $cmd (log: $dir.log)" >&2
        tail -5 "$dir.log" >&2
        continue
      }
      record "$name" "$side" "$rep" "$dir" "$dir.monitor.json"
    done
    # The floor in every repetition, beside the runs it is compared with: the machine drifts
    # (+-10% between minutes), and the report takes the median.
    echo "[floor] $name" >&2
    floor "$name" "$backbone" "$size" "$procs" "$threads" "$batch" "$rep"
  done
done

"$PYTHON" bench/report.py "$RESULTS" "$RUNNER" "$MODE" "$REPS" >"$OUT/RESULTS.md"
cat "$OUT/RESULTS.md"
