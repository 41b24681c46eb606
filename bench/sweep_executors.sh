#!/usr/bin/env bash
# The same 4-point CPU sweep three ways, whole runs timed side by side: the local executor one
# point after another, the local executor with --parallel 2, and one SLURM array job on a real
# one-node SLURM cluster started for the run (tests/integration/slurm_cluster.sh; needs root and
# slurm-wlm). Each point: the quickstart (small_cnn, Fashion-MNIST) with 1 rank, one epoch on
# LIMIT training images, libtorch threads left at 0 (each executor splits the cores its way).
# Prints a Markdown table with wall seconds and the ratio to the sequential run; REPS rounds,
# interleaved. Not part of the test suite.
#
#   bench/sweep_executors.sh            (LIMIT=10000 REPS=1 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
RUNNER=${RUNNER:-$SRC/build/runner/runner}
LIMIT=${LIMIT:-10000}
REPS=${REPS:-1}
source tests/integration/slurm_cluster.sh
why=$(slurm_cluster_missing)
[ -z "$why" ] || { echo "bench/sweep_executors.sh: $why"; exit 1; }
[ -x "$RUNNER" ] || { echo "bench/sweep_executors.sh: build the runner first (make build)"; exit 1; }
WORK=$(mktemp -d /tmp/runner_sweep_bench_XXXXXX)
trap 'stop_slurm_cluster; rm -rf "$WORK"' EXIT
mkdir "$WORK/cluster"
start_slurm_cluster "$WORK/cluster"

sweep_file() {  # NAME EXTRA_YAML
  cat >"$WORK/$1.yaml" <<YAML
base: $SRC/experiments/quickstart.yaml
name: $1
output: $WORK/out
grid: {train.batch_size: [64, 128], optimizer.lr: [1.0e-3, 2.0e-3]}
set:
  launch.num_processes: 1
  launch.threads_per_process: 0
  data.limit.train: $LIMIT
  data.limit.val: 2000
  predict.enabled: false
$2
YAML
}
sweep_file sequential ""
sweep_file parallel2 "parallel: 2"
sweep_file slurm "executor: slurm
slurm: {cpus_per_task: 1}"

declare -A total
for rep in $(seq "$REPS"); do
  for name in sequential parallel2 slurm; do
    rm -rf "$WORK/out/$name"
    start=$(date +%s.%N)
    "$RUNNER" sweep "$WORK/$name.yaml" --wait >"$WORK/$name.log" 2>&1 ||
      { tail -20 "$WORK/$name.log"; echo "sweep $name failed"; exit 1; }
    end=$(date +%s.%N)
    total[$name]=$(python3 -c "print(${total[$name]:-0} + $end - $start)")
  done
done
echo "4-point CPU sweep (quickstart, 1 rank, $LIMIT train images, 1 epoch), $(nproc) cores, mean of $REPS:"
echo
echo "| executor | wall s | vs sequential |"
echo "|---|---:|---:|"
for name in sequential parallel2 slurm; do
  python3 -c "t=${total[$name]}/$REPS; s=${total[sequential]}/$REPS; print(f'| $name | {t:.1f} | {t/s:.2f} |')"
done
