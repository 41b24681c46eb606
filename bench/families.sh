#!/usr/bin/env bash
# Every family against the Python original, whole runs side by side (issue 55's targets): for
# each MODEL, bench/cpu_precision.sh's interleaved pairs (runner fp32 / the original fp32, runner
# bf16 / the original under Accelerate's bf16), 2 CPU ranks x 1 thread, batch 16 per rank, 56 px,
# the reference transforms, runner as configured by default (NCHW: train.channels_last auto), then
# a table of images/s and ratios. timm/<name> runs the TorchScript import (the original: timm's
# <name> in eager PyTorch).
#   bench/families.sh                 # REPS=2 STEPS=30, about 20 minutes on 2 cores
# Env: MODELS, REPS, STEPS, PROCESSES (2), OUT (bench/out/families).
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=${MODELS:-"resnet18 resnet50 timm/efficientnet_b0 convnext_small"}
REPS=${REPS:-2}
STEPS=${STEPS:-30}
PROCESSES=${PROCESSES:-2}
OUT=${OUT:-bench/out/families}
mkdir -p "$OUT"
table=$OUT/table.md
{
  echo "| model | runner fp32 | original fp32 | runner / original fp32 | runner bf16 | original bf16 (Accelerate) | runner / original bf16 |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
} >"$table"
for model in $MODELS; do
  dir=$OUT/${model//\//_}
  MODEL=$model REPS=$REPS STEPS=$STEPS PROCESSES=$PROCESSES CHANNELS_LAST=0 OUT=$dir \
    bench/cpu_precision.sh >"$dir.log" 2>&1 || { echo "$model: failed, see $dir.log"; continue; }
  python3 - "$model" "$dir/results.tsv" >>"$table" <<'PY'
import statistics, sys
model, path = sys.argv[1], sys.argv[2]
runs = {}
for line in open(path):
    side, precision, value = line.split("\t")
    runs.setdefault((side, precision), []).append(float(value))
m = {k: statistics.median(v) for k, v in runs.items()}
each = lambda k: ", ".join(f"{v:.1f}" for v in runs[k])
print(f"| {model} | {m['runner', 'fp32']:.1f} ({each(('runner', 'fp32'))}) | "
      f"{m['python', 'fp32']:.1f} ({each(('python', 'fp32'))}) | "
      f"**{m['runner', 'fp32'] / m['python', 'fp32']:.2f}** | "
      f"{m['runner', 'bf16']:.1f} ({each(('runner', 'bf16'))}) | "
      f"{m['python', 'bf16']:.1f} ({each(('python', 'bf16'))}) | "
      f"**{m['runner', 'bf16'] / m['python', 'bf16']:.2f}** |")
PY
  tail -1 "$table"
done
cat "$table"
