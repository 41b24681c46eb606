#!/usr/bin/env bash
# search: optuna against search: random, whole sweeps side by side (issue 71): the same trial
# budget over the same distributions (optimizer.lr, train.batch_size) on the quickstart
# (small_cnn, Fashion-MNIST, LIMIT training images), each seed's two sweeps run back to back.
# Random search trains every trial to its last epoch; Optuna's TPE chooses each trial from the
# ones before it and successive halving (min_resource 1, reduction_factor 3) stops the poor ones.
# Per seed: the best validation accuracy of each, the epochs each trained, their wall times, and
# the bridge's cost: the seconds trials waited for the pruner's answer (each epoch's report to
# its decision, from the trial folder's files) against the trials' own seconds.
# Prints a Markdown table. Not part of the test suite.
#
#   bench/optuna_search.sh      (SEEDS="0 1 2" TRIALS=10 EPOCHS=6 LIMIT=2000 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
RUNNER=${RUNNER:-$SRC/build/runner/runner}
SEEDS=${SEEDS:-0 1 2}
TRIALS=${TRIALS:-10}
EPOCHS=${EPOCHS:-6}
LIMIT=${LIMIT:-2000}
export RUNNER_PYTHON=${RUNNER_PYTHON:-$SRC/.venv/bin/python}
[ -x "$RUNNER" ] || { echo "bench/optuna_search.sh: build the runner first (make build)"; exit 1; }
WORK=$(mktemp -d /tmp/runner_optuna_bench_XXXXXX)
trap 'rm -rf "$WORK"' EXIT

sweep_file() { # NAME SEED SEARCH_YAML
  cat >"$WORK/$1.yaml" <<YAML
base: $SRC/experiments/quickstart.yaml
name: $1
output: $WORK/out
trials: $TRIALS
$3
distributions:
  optimizer.lr: {loguniform: [1.0e-4, 1.0e-1]}
  train.batch_size: {choice: [32, 64, 128]}
set:
  seed: $2
  train.epochs: $EPOCHS
  launch.num_processes: 1
  launch.threads_per_process: 0
  data.limit: {train: $LIMIT, val: 1000}
  predict.enabled: false
YAML
}

# best accuracy, epochs trained, trials' seconds, seconds waiting for the pruner: of a sweep folder
measure() {
  /usr/bin/python3 - "$1" "$EPOCHS" <<'PY'
import csv, glob, json, os, sys
folder, epochs = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(os.path.join(folder, "summary.csv"))))
best = max(float(r["best accuracy"]) for r in rows if r["best accuracy"] not in ("", "n/a"))
trained = sum(int(r["epochs"].split("/")[0]) for r in rows) if "epochs" in rows[0] else len(rows) * epochs
seconds = waited = 0.0
for summary in glob.glob(os.path.join(folder, "*", "summary.json")):
    seconds += json.load(open(summary)).get("seconds", 0.0)
for decision in glob.glob(os.path.join(folder, "*", "trial", "epoch-*.decision")):
    report = decision[: -len(".decision")] + ".json"
    if os.path.exists(report):
        waited += max(0.0, os.path.getmtime(decision) - os.path.getmtime(report))
print(f"{best:.4f} {trained} {seconds:.1f} {waited:.2f}")
PY
}

echo "| seed | random: best acc | optuna: best acc | optuna - random (pt) | random: epochs | optuna: epochs | share | random: wall s | optuna: wall s | wall ratio | pruner waits / trial s |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for seed in $SEEDS; do
  sweep_file "random$seed" "$seed" "search: random
seed: $seed"
  sweep_file "optuna$seed" "$seed" "search: optuna
sampler: {name: tpe, seed: $seed, startup_trials: 4}
pruner: {name: successive_halving, min_resource: 1, reduction_factor: 3}"
  declare -A wall
  for kind in random optuna; do
    start=$(date +%s.%N)
    "$RUNNER" sweep "$WORK/$kind$seed.yaml" >"$WORK/$kind$seed.log" 2>&1 ||
      { echo "bench/optuna_search.sh: the $kind sweep failed:"; tail -5 "$WORK/$kind$seed.log"; exit 1; }
    wall[$kind]=$(echo "$(date +%s.%N) - $start" | bc)
  done
  read -r r_best r_epochs _ _ < <(measure "$WORK/out/random$seed")
  read -r o_best o_epochs o_seconds o_waited < <(measure "$WORK/out/optuna$seed")
  /usr/bin/python3 -c "
import sys
s, rb, ob, re_, oe, rw, ow, os_, owt = sys.argv[1:]
print(f'| {s} | {float(rb):.4f} | {float(ob):.4f} | {100 * (float(ob) - float(rb)):+.2f} | {re_} | {oe} | '
      f'{100 * int(oe) / int(re_):.0f}% | {float(rw):.0f} | {float(ow):.0f} | {float(ow) / float(rw):.2f} | '
      f'{100 * float(owt) / max(float(os_), 1e-9):.2f}% |')" \
    "$seed" "$r_best" "$o_best" "$r_epochs" "$o_epochs" "${wall[random]}" "${wall[optuna]}" "$o_seconds" "$o_waited"
done
