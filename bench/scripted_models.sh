#!/usr/bin/env bash
# Scripted timm models (model.backbone: timm/<name>, TorchScript run by libtorch) against runner's
# native C++ ones and against the Python original (timm eager + Accelerate, bench/python_baseline.py),
# interleaved per repetition: whole training runs on Fashion-MNIST at 56 px, 1 process x 2
# threads, fp32, the same transforms. Prints images/s (the first steps left out by each side).
#
#   bench/scripted_models.sh        (REPS=2; BUILD_DIR=build; MODELS="resnet18 convnext_small")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-2}
MODELS=${MODELS:-"resnet18 convnext_small"}
OUT=${OUT:-bench/out/scripted_models}
PYTHON=${PYTHON:-.venv/bin/python}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
mkdir -p "$OUT"
export RUNNER_CACHE=${RUNNER_CACHE:-$(cd "$OUT" && pwd)/cache}

batch_of() { [[ $1 == convnext_small ]] && echo 16 || echo 32; }
steps_of() { [[ $1 == convnext_small ]] && echo 15 || echo 25; }

source bench/reference_experiment.sh

images_per_s() { "$PYTHON" -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['train_images_per_s'])" "$1"; }

for model in $MODELS; do
  batch=$(batch_of "$model") steps=$(steps_of "$model")
  reference_experiment "scripted_$model" "$model" 1 2 "$batch" "$steps" >"$OUT/$model.native.yaml"
  reference_experiment "scripted_timm_$model" "timm/$model" 1 2 "$batch" "$steps" >"$OUT/$model.scripted.yaml"
  # The import (timm + torch.jit.script in Python) happens once, before any timing.
  "$RUNNER" import "timm/$model" --in-chans 1 --num-classes 10 >/dev/null
  for rep in $(seq 1 "$REPS"); do
    for kind in native scripted; do
      dir=$OUT/$model.$kind.$rep
      rm -rf "$dir"
      "$RUNNER" run "$OUT/$model.$kind.yaml" --set "output.run_dir=$dir" >"$dir.log" 2>&1 ||
        { echo "failed: see $dir.log" >&2; exit 1; }
      printf 'rep %s %-15s runner %-9s %7s img/s\n' "$rep" "$model" "$kind" "$(images_per_s "$dir/summary.json")"
    done
    dir=$OUT/$model.python.$rep
    rm -rf "$dir"
    OMP_NUM_THREADS=2 "$PYTHON" bench/python_baseline.py --model "$model" --image_size 56 --bs "$batch" \
      --lr 1e-3 --max_steps "$steps" --limit_val 64 --limit_test 64 --threads 2 --cpu \
      --out "$dir" >"$dir.log" 2>&1 || { echo "failed: see $dir.log" >&2; exit 1; }
    printf 'rep %s %-15s python eager     %7s img/s\n' "$rep" "$model" "$(images_per_s "$dir/summary.json")"
  done
done
