# Shared helpers for integration test scripts: `expect_exit CODE CMD...`, `expect_output TEXT`.
set -u
failures=0
out=""
expect_exit() {
  local want=$1
  shift
  set +e
  out=$("$@" 2>&1)
  local got=$?
  set -e
  if [ "$got" != "$want" ]; then
    echo "FAIL: expected exit $want, got $got: $*"
    echo "$out" | tail -n 20
    failures=$((failures + 1))
  fi
}
expect_output() {
  if ! grep -qF -- "$1" <<<"$out"; then
    echo "FAIL: output lacks: $1"
    echo "--- output was:"
    echo "$out" | tail -n 20
    failures=$((failures + 1))
  fi
}
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}

# write_tiny_experiment FILE DATA_ROOT: the sweep tests' base experiment, seconds per run:
# small_cnn on 256 Fashion-MNIST images (DATA_ROOT), one epoch, 1 rank x 1 thread, no predict.
write_tiny_experiment() {
  cat >"$1" <<YAML
name: tiny
seed: 1
launch: {num_processes: 1, device: cpu, threads_per_process: 1}
data:
  dataset: {name: mnist, root: $2, val_split: 50000}
  limit: {train: 256, val: 128, test: 64}
  train_transforms: [{name: normalize, mean: 0.2860, std: 0.3530}]
  eval_transforms: [{name: normalize, mean: 0.2860, std: 0.3530}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 2.0e-3}
scheduler: {name: cosine, warmup_steps: 2}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 1, batch_size: 32}
predict: {enabled: false}
output: {tensorboard: false}
YAML
}

# sweep_metric_columns SUMMARY_CSV: what must match between two runs of the same points (id,
# rank, shape, metrics, status; not the speed and memory columns).
sweep_metric_columns() {
  /usr/bin/python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["point"], r["rank"], r["processes"], r["global batch"], r["best accuracy"],
          r["val accuracy"], r["val loss"], r["status"])
PY
}

# sweep_refusal_problem RUNNER TEXT SWEEP_ARGS...: what is wrong with `runner sweep SWEEP_ARGS`
# as a refusal before any trial (exit 2, one error line saying TEXT, no sweeps/bad*/trial-*
# folder), or nothing when it is one. Its output stays in bad.out.
sweep_refusal_problem() {
  local runner=$1 text=$2 rc=0
  shift 2
  "$runner" sweep "$@" >bad.out 2>&1 || rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "sweep $*: exit $rc: $(cat bad.out)"
  elif ! grep -qF -- "$text" bad.out; then
    echo "sweep $*: not '$text': $(cat bad.out)"
  elif [[ $(grep -c "runner: error" bad.out) -ne 1 ]]; then
    echo "one error line: $(cat bad.out)"
  elif ls sweeps/bad*/trial-* >/dev/null 2>&1; then
    echo "a trial started: $*"
  fi
}
