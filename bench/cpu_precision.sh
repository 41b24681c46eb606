#!/usr/bin/env bash
# precision: bf16 on a CPU with native bf16, whole runs side by side (issue 26, item 6): runner fp32
# and bf16 against the Python original (timm + Accelerate, --mixed_precision bf16), interleaved,
# on the reference model scaled to CPU: MODEL (convnext_small; any native backbone or timm/<name>,
# the original then runs timm's <name>), 56 px, PROCESSES x 1 thread, batch 16 per process, STEPS
# optimizer steps (the first 3 excluded from images/s). runner's bf16 runs add
# train.channels_last (CHANNELS_LAST=1, its best CPU setting); the original runs as written
# (Accelerate's bf16; torchrun for 2 processes). Prints images/s and the ratios.
#   bench/cpu_precision.sh                      # REPS=2 STEPS=12 PROCESSES=1 (~5 minutes)
#   PROCESSES=2 STEPS=20 bench/cpu_precision.sh # the issue-42 setup: 2 ranks, as ddp_train.py
# Env: BUILD_DIR (build), PYTHON (.venv/bin/python), MODEL, REPS, STEPS, PROCESSES, CHANNELS_LAST,
#      OUT (bench/out/cpu_precision); RUNNER_ALT_ENV (e.g. RUNNER_SCRIPTED_KERNELS=aten): each
#      round also runs runner under that environment, as the side "runner_alt" (an A/B in the
#      same interleaving).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
PYTHON=${PYTHON:-.venv/bin/python}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
REPS=${REPS:-2}
STEPS=${STEPS:-12}
PROCESSES=${PROCESSES:-1}
CHANNELS_LAST=${CHANNELS_LAST:-1}
OUT=${OUT:-bench/out/cpu_precision}
MODEL=${MODEL:-convnext_small}
PY_MODEL=${MODEL#timm/}
ROOT=/usr/share/datasets/fashion-mnist
mkdir -p "$OUT"
grep -qw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo || echo "note: this CPU has no native bf16"

cat >"$OUT/cs.yaml" <<YAML
name: cpu_precision
seed: 42
launch: {num_processes: $PROCESSES, device: cpu, threads_per_process: 1}
data:
  dataset: {name: mnist, root: $ROOT, val_split: 50000}
  limit: {train: $((16 * PROCESSES * (STEPS + 2))), val: 64, test: 64}
  train_transforms: [{name: horizontal_flip, p: 0.5}, {name: resize, height: 56, width: 56, interpolation: lanczos4}, {name: normalize, mean: 0.2860, std: 0.3530}]
  eval_transforms: [{name: resize, height: 56, width: 56, interpolation: lanczos4}, {name: normalize, mean: 0.2860, std: 0.3530}]
  num_workers: 1
model: {backbone: $MODEL, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 5.0e-5}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: 16, max_steps: $STEPS, log_every_steps: 4}
predict: {enabled: false}
output: {tensorboard: false, root: $OUT/runs}
YAML

results=$OUT/results.tsv
: >"$results"
for rep in $(seq 1 "$REPS"); do
  for precision in fp32 bf16; do
    layout=()
    [[ $precision == bf16 && $CHANNELS_LAST == 1 ]] && layout=(--set train.channels_last=true)
    "$RUNNER" run "$OUT/cs.yaml" --set precision=$precision --set log_level=warn "${layout[@]}" >/dev/null 2>&1
    d=$(ls -td "$OUT"/runs/cpu_precision/* | head -1)
    ips=$("$PYTHON" -c "import json;print(json.load(open('$d/summary.json'))['train_images_per_s'])")
    printf 'runner\t%s\t%s\n' $precision "$ips" | tee -a "$results"
    if [[ -n ${RUNNER_ALT_ENV:-} ]]; then
      env $RUNNER_ALT_ENV "$RUNNER" run "$OUT/cs.yaml" --set precision=$precision --set log_level=warn \
        "${layout[@]}" >/dev/null 2>&1
      d=$(ls -td "$OUT"/runs/cpu_precision/* | head -1)
      ips=$("$PYTHON" -c "import json;print(json.load(open('$d/summary.json'))['train_images_per_s'])")
      printf 'runner_alt\t%s\t%s\n' $precision "$ips" | tee -a "$results"
    fi
    mp=no
    [[ $precision == bf16 ]] && mp=bf16
    launcher=("$PYTHON")
    [[ $PROCESSES -gt 1 ]] && launcher=("$PYTHON" -m torch.distributed.run --nproc_per_node "$PROCESSES")
    OMP_NUM_THREADS=1 "${launcher[@]}" bench/python_baseline.py --model "$PY_MODEL" --image_size 56 \
      --bs 16 --threads 1 --lr 5e-5 --ep 1 --num_workers 1 --root $ROOT --cpu --max_steps "$STEPS" \
      --limit_val 64 --limit_test 64 --mixed_precision $mp --out "$OUT/python" >/dev/null 2>&1
    ips=$("$PYTHON" -c "import json;print(json.load(open('$OUT/python/summary.json'))['train_images_per_s'])")
    printf 'python\t%s\t%s\n' $precision "$ips" | tee -a "$results"
  done
done
"$PYTHON" - "$results" <<'PY'
import sys, statistics
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
m = {}
for side, p, v in rows:
    m.setdefault((side, p), []).append(float(v))
mean = {k: statistics.mean(v) for k, v in m.items()}
for k in sorted(mean):
    print(f"{k[0]:7s} {k[1]}: {mean[k]:.1f} img/s  ({', '.join(f'{x:.1f}' for x in m[k])})")
print(f"runner bf16 / runner fp32: {mean[('runner', 'bf16')] / mean[('runner', 'fp32')]:.2f}x")
print(f"python bf16 / python fp32: {mean[('python', 'bf16')] / mean[('python', 'fp32')]:.2f}x")
print(f"runner bf16 / python bf16: {mean[('runner', 'bf16')] / mean[('python', 'bf16')]:.2f}x")
print(f"runner fp32 / python fp32: {mean[('runner', 'fp32')] / mean[('python', 'fp32')]:.2f}x")
for p in ("fp32", "bf16"):
    if ("runner_alt", p) in mean:
        print(f"runner {p} / runner_alt {p}: {mean[('runner', p)] / mean[('runner_alt', p)]:.2f}x")
PY
