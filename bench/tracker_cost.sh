#!/usr/bin/env bash
# What a tracker costs per step (issue 43): experiments/quickstart.yaml on 2 CPU ranks, a fixed
# number of optimizer steps with a log window every step (the most requests a run can make),
# with no tracker, with TensorBoard (the default) and with MLflow (a local `mlflow server` from
# the project venv, SQLite store), interleaved over REPS rounds. images/s is summary.json's
# train_images_per_s (the steady training pass). Not part of the test suite.
#
#   bench/tracker_cost.sh            STEPS=150 REPS=3 (about 5 minutes here)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNNER=${RUNNER:-build/runner/runner}
MLFLOW=${MLFLOW:-.venv/bin/mlflow}
STEPS=${STEPS:-150}
REPS=${REPS:-3}
OUT=${OUT:-bench/out/tracker_cost}
rm -rf "$OUT" && mkdir -p "$OUT"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
setsid "$MLFLOW" server --host 127.0.0.1 --port "$port" --workers 1 \
  --backend-store-uri "sqlite:///$PWD/$OUT/store.db" --artifacts-destination "$PWD/$OUT/artifacts" \
  >"$OUT/server.log" 2>&1 &
server=$!
trap 'kill -- -$server 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.5; done
base=(--set train.max_steps="$STEPS" --set train.log_every_steps=1 --set predict.enabled=false
      --set data.limit.val=512)
declare -A variants=(
  [none]="output.tensorboard=false"
  [tensorboard]="output.tensorboard=true"
  [mlflow]="output.tensorboard=false output.trackers.0.name=mlflow output.trackers.0.tracking_uri=http://127.0.0.1:$port output.trackers.0.experiment=bench"
)
order=(none tensorboard mlflow)
for rep in $(seq 1 "$REPS"); do
  for v in "${order[@]}"; do
    sets=()
    for s in ${variants[$v]}; do sets+=(--set "$s"); done
    "$RUNNER" run experiments/quickstart.yaml "${base[@]}" "${sets[@]}" \
      --set output.run_dir="$OUT/$v.$rep" --log-level warn >"$OUT/$v.$rep.log" 2>&1
  done
done
python3 - "$OUT" "$REPS" "${order[@]}" <<'PY'
import json, sys, statistics
out, reps, order = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rate = {v: [json.load(open(f"{out}/{v}.{r}/summary.json"))["train_images_per_s"]
            for r in range(1, reps + 1)] for v in order}
none = statistics.mean(rate["none"])
print("| trackers | images/s (each round) | mean | vs none |")
print("| --- | --- | --- | --- |")
for v in order:
    m = statistics.mean(rate[v])
    print(f"| {v} | {', '.join(f'{x:.0f}' for x in rate[v])} | {m:.0f} | {m / none:.3f} |")
PY
