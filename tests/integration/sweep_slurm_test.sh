#!/usr/bin/env bash
# runner sweep --executor slurm on a real one-node SLURM cluster (slurm_cluster.sh): a 4-point
# sweep (one point with 2 ranks) through one sbatch --array job gives the same metrics as the
# local executor, the slurm: options reach the job, a task killed with scancel is a failed point
# naming its log, a rerun submits only what did not finish. Usage: sweep_slurm_test.sh RUNNER SRC
set -eu
RUNNER=$1
SRC=$2
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/slurm_cluster.sh"
FMNIST=/usr/share/datasets/fashion-mnist
[ -d "$FMNIST" ] || { echo "skipped: $FMNIST missing (apt-get install dataset-fashion-mnist)"; exit 77; }
why=$(slurm_cluster_missing)
if [ -n "$why" ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: CI must run the SLURM sweep test: $why"; exit 1; }
  echo "skipped: $why"
  exit 77
fi
WORK=$(mktemp -d /tmp/runner_sweep_slurm_XXXXXX)
trap 'stop_slurm_cluster; rm -rf "$WORK"' EXIT
mkdir "$WORK/cluster"
start_slurm_cluster "$WORK/cluster" || { echo "FAIL: could not start the SLURM cluster"; exit 1; }
cd "$WORK"
# The data root is relative to the base file: the tasks' point files (written elsewhere) must
# still find it (runner run --config-dir).
mkdir exp
ln -s "$FMNIST" exp/fmnist
write_tiny_experiment exp/base.yaml fmnist
points='points:
  - {train.batch_size: 32}
  - {train.batch_size: 16, launch.num_processes: 2}
  - {optimizer.lr: 1.0e-3}
  - {train.batch_size: 64}'
printf 'base: exp/base.yaml\nname: four\noutput: out_local\n%s\n' "$points" >local.yaml
printf 'base: exp/base.yaml\nname: four\noutput: out_slurm\nexecutor: slurm\nparallel: 2\nslurm: {partition: test, time: "00:10:00", account: runnertest, extra_args: ["--comment=runner-sweep-test"]}\n%s\n' "$points" >slurm.yaml

# 1. The same 4 points locally and as one SLURM array (--wait): the same metrics.
expect_exit 0 "$RUNNER" sweep local.yaml
expect_exit 0 "$RUNNER" sweep slurm.yaml --wait
expect_output "submitted 4 point(s) as SLURM job"
expect_output "(--array=0,1,2,3%2)"
job=$(sed -n 's/.*submitted 4 point(s) as SLURM job \([0-9]*\).*/\1/p' <<<"$out" | head -1)
S=out_slurm/four
local_metrics=$(sweep_metric_columns out_local/four/summary.csv)
slurm_metrics=$(sweep_metric_columns $S/summary.csv)
if [ "$local_metrics" != "$slurm_metrics" ] || [ "$(grep -c ' done$' <<<"$slurm_metrics")" != 4 ]; then
  echo "FAIL: SLURM and local summaries differ:"
  echo "local:"; echo "$local_metrics"; echo "slurm:"; echo "$slurm_metrics"
  failures=$((failures + 1))
fi
[ "$(ls $S/slurm/points/*.yaml | wc -l)" = 4 ] || { echo "FAIL: expected 4 resolved point files"; failures=$((failures + 1)); }
# The 2-rank point ran as 2 SLURM tasks (ranks joined through the SLURM environment).
grep -q '"world_size": 2' $S/001-*/summary.json || { echo "FAIL: the 2-rank point did not run 2 ranks"; failures=$((failures + 1)); }
# slurm: partition, time, account and extra_args reached the job.
details=$(scontrol show job "$job" 2>&1 || true)
for want in "Partition=test" "TimeLimit=00:10:00" "Account=runnertest" "Comment=runner-sweep-test"; do
  grep -qF "$want" <<<"$details" || { echo "FAIL: scontrol show job $job lacks $want"; failures=$((failures + 1)); }
done
for f in summary.csv summary.md report.html; do
  [ -s "$S/$f" ] || { echo "FAIL: $S/$f missing"; failures=$((failures + 1)); }
done

# 2. A rerun finds every point finished: it submits nothing.
expect_exit 0 "$RUNNER" sweep slurm.yaml --wait
[ "$(grep -c "finished earlier: skipped" <<<"$out")" = 4 ] || { echo "FAIL: a rerun should skip 4 points"; echo "$out" | tail -8; failures=$((failures + 1)); }
grep -q "submitted" <<<"$out" && { echo "FAIL: a rerun submitted again"; failures=$((failures + 1)); }

# 3. A task killed with scancel is a failed point naming its log; a rerun submits only it.
printf 'base: exp/base.yaml\nname: cancel\noutput: out_cancel\nexecutor: slurm\npoints:\n  - {train.batch_size: 64}\n  - {train.epochs: 500}\n' >cancel.yaml
expect_exit 0 "$RUNNER" sweep cancel.yaml
job=$(sed -n 's/.*submitted 2 point(s) as SLURM job \([0-9]*\).*/\1/p' <<<"$out" | head -1)
[ -n "$job" ] || { echo "FAIL: no job id printed"; echo "$out" | tail -5; exit 1; }
expect_output "still queued or running"
running=0
for i in $(seq 300); do
  squeue --noheader --array --jobs="$job" --format="%K %T" | grep -q "^1 RUNNING" && { running=1; break; }
  sleep 0.2
done
[ $running = 1 ] || { echo "FAIL: task 1 of job $job never ran"; squeue; exit 1; }
# Running the same sweep locally while SLURM still runs a point would share its folder: refused.
expect_exit 2 "$RUNNER" sweep cancel.yaml --executor local
expect_output "still queued or running in SLURM ("
expect_output "(job $job)"
scancel "${job}_1"
expect_exit 1 "$RUNNER" sweep cancel.yaml --summary --wait
C=out_cancel/cancel/summary.csv
sed -n 2p $C | grep -q ",done$" || { echo "FAIL: the short point should be done: $(sed -n 2p $C)"; failures=$((failures + 1)); }
sed -n 3p $C | grep -q "failed: cancelled" || { echo "FAIL: the cancelled point should be failed: cancelled: $(sed -n 3p $C)"; failures=$((failures + 1)); }
sed -n 3p $C | grep -qF "slurm/logs/${job}_1.out" || { echo "FAIL: the failed point should name its log: $(sed -n 3p $C)"; failures=$((failures + 1)); }
expect_exit 0 "$RUNNER" sweep cancel.yaml
expect_output "finished earlier: skipped"
expect_output "submitted 1 point(s) as SLURM job"
job2=$(sed -n 's/.*submitted 1 point(s) as SLURM job \([0-9]*\) (--array=\([0-9,]*\)).*/\1 \2/p' <<<"$out")
[ "$(echo "$job2" | cut -d' ' -f2)" = 1 ] || { echo "FAIL: the resubmission should be array task 1 only: $job2"; failures=$((failures + 1)); }
# The resubmitted task continues the cancelled run from its last.pt, or, when it saved none,
# moves what it left aside (kept, not deleted) and starts afresh: said in its log.
log2="out_cancel/cancel/slurm/logs/$(echo "$job2" | cut -d' ' -f1)_1.out"
for i in $(seq 150); do grep -q "did not finish before" "$log2" 2>/dev/null && break; sleep 0.2; done
if grep -q "did not finish before and saved no checkpoint: starting it afresh" "$log2" 2>/dev/null; then
  ls -d out_cancel/cancel/001-epochs=500.old-*/ >/dev/null 2>&1 || { echo "FAIL: the cancelled run's folder was not kept aside"; failures=$((failures + 1)); }
elif ! grep -q "did not finish before: continuing it from its checkpoints/last.pt" "$log2" 2>/dev/null; then
  echo "FAIL: the resubmitted task neither continued nor kept the cancelled run: $(cat "$log2" 2>/dev/null | tail -3)"; failures=$((failures + 1))
fi
[ ! -e out_cancel/cancel/001-epochs=500/failure.txt ] || { echo "FAIL: the resubmitted point still reads as failed"; failures=$((failures + 1)); }
scancel "$(echo "$job2" | cut -d' ' -f1)" || true

# 4. slurm.cpus_per_task reaches the task: a rank left at threads_per_process: 0 takes that many
# libtorch threads (env.json); slurm.gpus_per_task reaches sbatch (this cluster has no GPUs: it
# refuses, and the sweep says so in one line).
printf 'base: exp/base.yaml\nname: cpus\noutput: out_cpus\nexecutor: slurm\nslurm: {cpus_per_task: 1}\nset: {launch.threads_per_process: 0}\npoints:\n  - {train.batch_size: 64}\n' >cpus.yaml
expect_exit 0 "$RUNNER" sweep cpus.yaml --wait
grep -qE '"torch_threads": 1,?$' out_cpus/cpus/000-*/env.json || { echo "FAIL: cpus_per_task 1 should give 1 thread: $(grep torch_threads out_cpus/cpus/000-*/env.json)"; failures=$((failures + 1)); }
printf 'base: exp/base.yaml\nname: gpus\noutput: out_gpus\nexecutor: slurm\nslurm: {gpus_per_task: 1}\npoints:\n  - {train.batch_size: 64}\n' >gpus.yaml
# An earlier failed run's folder survives a refused submission (a task clears it when it starts).
mkdir -p out_gpus/gpus/000-batch_size=64 && echo "exit code 1: earlier" >out_gpus/gpus/000-batch_size=64/failure.txt
expect_exit 1 "$RUNNER" sweep gpus.yaml
expect_output "sbatch refused the array"
[ -f out_gpus/gpus/000-batch_size=64/failure.txt ] || { echo "FAIL: a refused submission removed the earlier run's folder"; failures=$((failures + 1)); }
grep -q "^# submitted with: sbatch .*'--gpus-per-task=1'" out_gpus/gpus/slurm/array.sbatch || { echo "FAIL: array.sbatch lacks --gpus-per-task=1"; failures=$((failures + 1)); }
[ "$(grep -v '^sweep ' <<<"$out" | wc -l)" = 1 ] || { echo "FAIL: one error line expected: $out"; failures=$((failures + 1)); }

# 5. Two submissions of one file: the second submits nothing still queued or running. jobs.json
# maps each task to the point it ran: the file edited since (the points swapped, so their ids
# change) does not relabel them.
printf 'base: exp/base.yaml\nname: twice\noutput: out_twice\nexecutor: slurm\npoints:\n  - {train.batch_size: 64}\n  - {train.batch_size: 32}\n' >twice.yaml
expect_exit 0 "$RUNNER" sweep twice.yaml
expect_exit 0 "$RUNNER" sweep twice.yaml --wait
expect_output "in SLURM: not submitted again"
grep -q "as SLURM job" <<<"$out" && { echo "FAIL: the second submission submitted again"; failures=$((failures + 1)); }
[ "$(grep -c ',done$' out_twice/twice/summary.csv)" = 2 ] || { echo "FAIL: twice: $(cat out_twice/twice/summary.csv)"; failures=$((failures + 1)); }
printf 'base: exp/base.yaml\nname: twice\noutput: out_twice\nexecutor: slurm\npoints:\n  - {train.batch_size: 32}\n  - {train.batch_size: 64}\n' >twice.yaml
expect_exit 0 "$RUNNER" sweep twice.yaml --summary
grep -q "still queued or running" <<<"$out" && { echo "FAIL: the edited file's points took the old tasks' states: $out"; failures=$((failures + 1)); }
[ "$(grep -c ',pending$' out_twice/twice/summary.csv)" = 2 ] || { echo "FAIL: the edited file's points should be pending: $(cat out_twice/twice/summary.csv)"; failures=$((failures + 1)); }

finish
