#!/usr/bin/env bash
# Two CPU ranks against twice the 1-thread floor, by gradient bucket size (issue 55, item 3):
# MODEL (resnet18) in fp32, 2 ranks x 1 thread, batch 16 per rank, 56 px, the reference
# transforms (bench/cpu_precision.sh's experiment), for each train.bucket_cap_mb in SIZES,
# interleaved with the floor pair (two build/bench/floor_bench at once, their rates added) and
# with build/bench/sharded_step_bench (the ZeRO-1 layout on shared memory, a prototype: size "-").
#   bench/bucket_sizes.sh            # REPS=2 STEPS=30 SIZES="1 5 25 100", about 5 minutes
#   SHARDED=0 bench/bucket_sizes.sh  # without the prototype
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-resnet18}
REPS=${REPS:-2}
STEPS=${STEPS:-30}
SIZES=${SIZES:-"1 5 25 100"}
OUT=${OUT:-bench/out/bucket_sizes}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
# The experiment of bench/cpu_precision.sh, written by it with REPS=0 (no runs).
MODEL=$MODEL PROCESSES=2 STEPS=$STEPS REPS=0 OUT=$OUT bench/cpu_precision.sh >/dev/null 2>&1 || true
results=$OUT/results.tsv
: >"$results"
floor() {
  (build/bench/floor_bench "$MODEL" 56 16 1 "$STEPS" 3 & build/bench/floor_bench "$MODEL" 56 16 1 "$STEPS" 3; wait) |
    python3 -c 'import json,sys; print(sum(json.loads(l)["images_per_s"] for l in sys.stdin if l.strip()))'
}
for rep in $(seq 1 "$REPS"); do
  printf 'floor\t-\t%s\n' "$(floor)" | tee -a "$results"
  if [[ ${SHARDED:-1} == 1 ]]; then
    printf 'sharded\t-\t%s\n' "$(build/bench/sharded_step_bench "$MODEL" 56 16 "$STEPS" 3 |
      python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["images_per_s"])')" |
      tee -a "$results"
  fi
  for size in $SIZES; do
    build/runner/runner run "$OUT/cs.yaml" --set precision=fp32 --set log_level=warn \
      --set train.bucket_cap_mb="$size" >/dev/null 2>&1
    d=$(ls -td "$OUT"/runs/cpu_precision/* | head -1)
    printf 'runner\t%s\t%s\n' "$size" \
      "$("$PYTHON" -c "import json;print(json.load(open('$d/summary.json'))['train_images_per_s'])")" |
      tee -a "$results"
  done
done
"$PYTHON" - "$results" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
floor = statistics.median(float(v) for side, _, v in rows if side == "floor")
print(f"twice the 1-thread floor (median): {floor:.1f} img/s")
print("| bucket_cap_mb | img/s (each round) | / twice the floor |")
print("| --- | --- | --- |")
sizes = []
for side, size, _ in rows:
    if side == "runner" and size not in sizes:
        sizes.append(size)
sharded = [float(v) for side, _, v in rows if side == "sharded"]
if sharded:
    print(f"| sharded_step_bench (prototype) | {statistics.median(sharded):.1f} "
          f"({', '.join(f'{x:.1f}' for x in sharded)}) | {statistics.median(sharded) / floor:.2f} |")
for size in sizes:
    v = [float(x) for side, s, x in rows if side == "runner" and s == size]
    print(f"| {size} | {statistics.median(v):.1f} ({', '.join(f'{x:.1f}' for x in v)}) | "
          f"{statistics.median(v) / floor:.2f} |")
PY
