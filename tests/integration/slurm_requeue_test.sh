#!/usr/bin/env bash
# SLURM's contract on a real one-node cluster (slurm_cluster.sh), for an sbatch job whose batch
# script execs `runner run` (runner's launcher, 2 ranks):
# - launch.slurm_requeue: SLURM's SIGUSR1 to the batch script (what --signal=B:USR1@N sends
#   before the time limit; here `scancel --signal=USR1 --batch`, at a known step) saves last.pt,
#   marks the run requeued and requeues the job; the requeued job continues the same folder and
#   ends as an uninterrupted run (train.deterministic: the same per-step losses);
# - a job with a one-minute limit and --signal=B:USR1@50: SLURM's clock warns it, it is
#   requeued as often as it takes and the run finishes;
# - scancel of a running job (SIGTERM to every process of the job): last.pt, status interrupted;
# - a sweep point with launch.slurm_requeue: its array asks --requeue --signal=USR1@N, and a
#   task signalled through its srun ranks is requeued and continues its point's folder.
# Every wait is driven by the job's state (slurm_job_until_ended): SLURM holds a requeued job
# until its BeginTime, about 2 minutes on; the test starts it at once. A failure prints what
# SLURM knows of the job (its states, scontrol's record, the node, slurmctld's log lines).
# KEEP_WORK=1 keeps the work folder (the cluster's logs under cluster/) for a look afterwards.
# Usage: slurm_requeue_test.sh RUNNER SRC
set -eu
RUNNER=$(readlink -f "$1")
SRC=$2
source "$SRC/tests/integration/lib.sh"
source "$SRC/tests/integration/slurm_cluster.sh"
why=$(slurm_cluster_missing)
if [ -n "$why" ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: CI must run the SLURM requeue test: $why"; exit 1; }
  echo "skipped: $why"
  exit 77
fi
WORK=$(mktemp -d /tmp/runner_slurm_requeue_XXXXXX)
trap 'stop_slurm_cluster; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
mkdir "$WORK/cluster"
start_slurm_cluster "$WORK/cluster" || { echo "FAIL: could not start the SLURM cluster"; exit 1; }
cd "$WORK"
cat >long.yaml <<YAML
name: long
seed: 7
launch: {device: cpu, threads_per_process: 1, num_processes: 2, slurm_requeue: true}
data:
  dataset: {name: synthetic, train_size: 4096, val_size: 64, test_size: 0, height: 16, width: 16, noise: 0.6}
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 2.0e-3}
metrics: [{name: accuracy}]
train: {epochs: 2, batch_size: 16, log_every_steps: 1, deterministic: true}
predict: {enabled: false}
output: {tensorboard: false}
YAML
steps() { /usr/bin/python3 -c "import json,sys; print([(r['step'], r['loss']) for r in map(json.loads, open(sys.argv[1])) if r['kind'] == 'step'])" "$1"; }
status() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('status'))" "$1/summary.json" 2>/dev/null; }
wait_step() {  # RUN_DIR STEP
  for _ in $(seq 900); do
    grep -q "\"step\":$2}" "$1/metrics.jsonl" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: $1 never reached step $2"; tail -n 20 "$WORK"/*.out 2>/dev/null; exit 1
}
until_ended() {  # JOB LIMIT_S: slurm_job_until_ended, or the test ends here
  slurm_job_until_ended "$1" "$2" || { echo "FAIL: job $1 did not end"; exit 1; }
}
submit() {  # NAME RUN_DIR: an sbatch job that execs runner run, its output in NAME.out
  printf '#!/bin/bash\nexec %q run %q --set output.run_dir=%q\n' "$RUNNER" "$WORK/long.yaml" "$2" >"$1.sbatch"
  sbatch --parsable --requeue --ntasks=1 --cpus-per-task=2 --output="$WORK/$1.out" --open-mode=append \
    --export=ALL,OMP_NUM_THREADS=1 "$1.sbatch"
}

# The reference: the same run, uninterrupted, outside SLURM.
OMP_NUM_THREADS=1 "$RUNNER" run long.yaml --set output.run_dir="$WORK/ref" >ref.log 2>&1 ||
  { tail -n 20 ref.log; echo "FAIL: the reference run"; exit 1; }

# 1. Requeued at step 60: the job runs again and finishes the same folder.
job=$(submit requeue "$WORK/requeued")
wait_step "$WORK/requeued" 60
scancel --signal=USR1 --batch "$job"
until_ended "$job" 400
grep -q "received SIGUSR1 (SLURM's time limit is near)" requeue.out ||
  { echo "FAIL: the launcher did not say it was warned"; failures=$((failures + 1)); }
grep -q "SLURM job $job was requeued (restart 1): continuing $WORK/requeued from its checkpoints/last.pt" requeue.out ||
  { echo "FAIL: the requeued job did not continue the run"; tail -n 30 requeue.out; slurm_job_report "$job"; failures=$((failures + 1)); }
[ "$(status "$WORK/requeued")" = finished ] ||
  { echo "FAIL: the requeued run's status is $(status "$WORK/requeued")"; tail -n 30 requeue.out; failures=$((failures + 1)); }
grep -q "\"slurm_job_id\": \"$job\"" "$WORK/requeued/run.json" ||
  { echo "FAIL: run.json does not record job $job"; failures=$((failures + 1)); }
[ "$(grep -c -- "--resume $WORK/requeued" "$WORK/requeued/command.txt")" = 1 ] ||
  { echo "FAIL: command.txt should show one resume: $(cat "$WORK/requeued/command.txt")"; failures=$((failures + 1)); }
[ "$(steps "$WORK/requeued/metrics.jsonl")" = "$(steps "$WORK/ref/metrics.jsonl")" ] ||
  { echo "FAIL: requeued and continued, the per-step losses differ from one go"; failures=$((failures + 1)); }

# 2. SLURM's own warning: a job with a one-minute limit and --signal=B:USR1@50 is warned by
# SLURM's clock (up to a minute early: SLURM checks time limits every 30 s or so), requeued, and
# runs again until the run is finished, however many times that takes; nothing is lost between.
sed -e 's/train_size: 4096/train_size: 65536/' -e 's/epochs: 2/epochs: 4/' -e 's/log_every_steps: 1/log_every_steps: 50/' long.yaml >slow.yaml
printf '#!/bin/bash\nexec %q run %q --set output.run_dir=%q\n' "$RUNNER" "$WORK/slow.yaml" "$WORK/limited" >limited.sbatch
job=$(sbatch --parsable --requeue --time=1 --signal=B:USR1@50 --ntasks=1 --cpus-per-task=2 \
  --output="$WORK/limited.out" --open-mode=append --export=ALL,OMP_NUM_THREADS=1 limited.sbatch)
until_ended "$job" 600
requeues=$(grep -c "was requeued (restart" limited.out || true)
[ "$requeues" -ge 1 ] && [ "$(status "$WORK/limited")" = finished ] ||
  { echo "FAIL: a job at its time limit: $requeues requeue(s), status $(status "$WORK/limited")"; grep -v "^epoch" limited.out | tail -n 30; slurm_job_report "$job"; failures=$((failures + 1)); }
grep -q "DUE TO TIME LIMIT" limited.out &&
  { echo "FAIL: SLURM's time limit ended a job before its warning was heeded"; failures=$((failures + 1)); }

# 3. scancel of a running job: every process gets SIGTERM; the work is saved, the run interrupted.
job=$(submit cancel "$WORK/cancelled")
wait_step "$WORK/cancelled" 30
scancel "$job"
until_ended "$job" 120
for _ in $(seq 50); do [ "$(status "$WORK/cancelled")" = interrupted ] && break; sleep 0.2; done
[ "$(status "$WORK/cancelled")" = interrupted ] ||
  { echo "FAIL: after scancel the status is $(status "$WORK/cancelled")"; tail -n 20 cancel.out; failures=$((failures + 1)); }
[ -f "$WORK/cancelled/checkpoints/last.pt" ] || { echo "FAIL: scancel left no last.pt"; failures=$((failures + 1)); }
grep -q "stopping all ranks now" cancel.out &&
  { echo "FAIL: scancel's one stop was taken as a second one"; failures=$((failures + 1)); }

# 4. A sweep point with launch.slurm_requeue: requeued through its srun ranks, it continues.
printf 'base: long.yaml\nname: rq\noutput: out\nexecutor: slurm\nslurm: {requeue_signal_s: 45}\nset: {launch.num_processes: 1, train.epochs: 1}\npoints:\n  - {train.batch_size: 16}\n' >sweep.yaml
expect_exit 0 "$RUNNER" sweep sweep.yaml
job=$(sed -n 's/.*submitted 1 point(s) as SLURM job \([0-9]*\).*/\1/p' <<<"$out" | head -1)
[ -n "$job" ] || { echo "FAIL: no job id printed"; echo "$out" | tail -5; exit 1; }
grep -q "^# submitted with: sbatch .*'--requeue' '--signal=USR1@45'" out/rq/slurm/array.sbatch ||
  { echo "FAIL: array.sbatch does not ask for the requeue signal"; failures=$((failures + 1)); }
point=$(ls -d out/rq/000-* 2>/dev/null | head -1)
for _ in $(seq 300); do point=$(ls -d out/rq/000-* 2>/dev/null | head -1); [ -n "$point" ] && break; sleep 0.2; done
wait_step "$point" 40
scancel --signal=USR1 "${job}_0"
until_ended "${job}_0" 400
expect_exit 0 "$RUNNER" sweep sweep.yaml --summary --wait
sed -n 2p out/rq/summary.csv | grep -q ",done$" ||
  { echo "FAIL: the requeued point should be done: $(sed -n 2p out/rq/summary.csv)"; failures=$((failures + 1)); }
grep -q -- "--resume .*/$(basename "$point")" "$point/command.txt" ||
  { echo "FAIL: the requeued point did not continue its folder: $(cat "$point/command.txt")"; slurm_job_report "${job}_0"; failures=$((failures + 1)); }
finish
