#!/usr/bin/env bash
# What each piece of timm's recipe (issue 41) costs per step: experiments/fmnist_timm_recipe.yaml
# on 2 CPU ranks, a fixed number of optimizer steps, with everything on, with each piece off in
# turn, and with all of it off; interleaved over REPS rounds so that the machine's drift hits
# every variant alike. images/s is summary.json's train_images_per_s (the steady training pass,
# validation excluded). Not part of the test suite.
#
#   bench/recipe_cost.sh            STEPS=60 REPS=2 (about 6 minutes here)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNNER=${RUNNER:-build/runner/runner}
STEPS=${STEPS:-60}
REPS=${REPS:-2}
OUT=${OUT:-bench/out/recipe_cost}
mkdir -p "$OUT"
base=(--set train.max_steps="$STEPS" --set train.epochs=1 --set predict.enabled=false
      --set data.limit.val=512 --set output.tensorboard=false)
declare -A variants=(
  [recipe]=""
  [no_mixup]="train.mixup.mixup_alpha=0 train.mixup.cutmix_alpha=0"
  [no_ema]="train.ema.enabled=false train.best.weights=model"
  [no_randaugment]="data.train_transforms.2.p=0"
  [no_erasing]="data.train_transforms.4.p=0"
  [none]="train.mixup.mixup_alpha=0 train.mixup.cutmix_alpha=0 train.ema.enabled=false train.best.weights=model data.train_transforms.2.p=0 data.train_transforms.4.p=0"
)
order=(recipe no_mixup no_ema no_randaugment no_erasing none)
for rep in $(seq 1 "$REPS"); do
  for v in "${order[@]}"; do
    sets=()
    for s in ${variants[$v]}; do sets+=(--set "$s"); done
    rm -rf "$OUT/$v.$rep"
    "$RUNNER" run experiments/fmnist_timm_recipe.yaml "${base[@]}" "${sets[@]}" \
      --set output.run_dir="$OUT/$v.$rep" --log-level warn >"$OUT/$v.$rep.log" 2>&1
  done
done
python3 - "$OUT" "$REPS" "${order[@]}" <<'PY'
import json, sys, statistics
out, reps, order = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rate = {v: [json.load(open(f"{out}/{v}.{r}/summary.json"))["train_images_per_s"]
            for r in range(1, reps + 1)] for v in order}
none = statistics.mean(rate["none"])
print("| variant | images/s (each round) | mean | vs none |")
print("| --- | --- | --- | --- |")
for v in order:
    m = statistics.mean(rate[v])
    print(f"| {v} | {', '.join(f'{x:.0f}' for x in rate[v])} | {m:.0f} | {m / none:.3f} |")
PY
