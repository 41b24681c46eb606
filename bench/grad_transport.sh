#!/usr/bin/env bash
# How gradients travel between 2 CPU ranks (train.grad_transport): shared memory (runner's
# default on one host) against Gloo (PyTorch DDP's way), each in fp32 and in bf16
# (train.grad_comm), interleaved with the compute floor (two floor_bench at once), on
# convnext_small 56 px, batch 16 per rank, fp32 compute, 1 thread per rank.
# Prints one line per run; ratios of neighbouring lines are what mean something.
#
#   bench/grad_transport.sh            (REPS=3, STEPS=40; BUILD_DIR=build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-3}
STEPS=${STEPS:-40}
OUT=${OUT:-bench/out/grad_transport}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
source bench/reference_experiment.sh
reference_experiment grad_transport convnext_small 2 1 16 "$STEPS" >"$OUT/experiment.yaml"
for rep in $(seq 1 "$REPS"); do
  "$BUILD_DIR/bench/floor_bench" convnext_small 56 16 1 24 3 >"$OUT/floor0.json" &
  "$BUILD_DIR/bench/floor_bench" convnext_small 56 16 1 24 3 >"$OUT/floor1.json"
  wait
  "$PYTHON" -c "import json,sys; print('rep $rep floor (2 x 1 thread): %.1f img/s' % sum(json.load(open(f))['images_per_s'] for f in sys.argv[1:]))" "$OUT/floor0.json" "$OUT/floor1.json"
  for variant in auto:fp32 process_group:fp32 auto:bf16 process_group:bf16; do
    transport=${variant%:*} comm=${variant#*:} dir="$OUT/${variant/:/_}"
    rm -rf "$dir"
    "$BUILD_DIR/runner/runner" run "$OUT/experiment.yaml" --set "output.run_dir=$dir" \
      --set "train.grad_transport=$transport" --set "train.grad_comm=$comm" >"$dir.log" 2>&1
    "$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1])); print('rep $rep runner %-14s %-4s %.1f img/s (%s)' % ('$transport', '$comm', s['train_images_per_s'], s['gradient_sync']['transport']))" "$dir/summary.json"
  done
done
