#!/usr/bin/env bash
# Mistakes caught before a run trains, and runs that do not step on each other: a class count
# or channel count the model cannot take is one line with exit 2 at --dry-run and at run start;
# two 2-rank runs started at once on one machine both train (each takes a free port); the
# rendezvous store of a one-node run listens on loopback only.
set -eu
runner=$1
root=$2
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=${MNIST_ROOT:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: Fashion-MNIST not at $data (make deps installs dataset-fashion-mnist)"
  exit 77
fi
write_tiny_experiment "$tmp/tiny.yaml" "$data"
one_line() {
  [ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: expected one line, got: $out"; failures=$((failures + 1)); }
}

# num_classes smaller than the data's classes: the key's file:line, both values, what to set.
sed 's/num_classes: 10/num_classes: 5/' "$tmp/tiny.yaml" >"$tmp/classes.yaml"
expect_exit 2 "$runner" run "$tmp/classes.yaml" --dry-run
expect_output "$tmp/classes.yaml:10:56: model.num_classes 5 but the dataset (mnist) has 10 classes (labels 0..9): set model.num_classes: 10"
one_line
# validate, where the data is reachable, finds it too.
expect_exit 2 "$runner" validate "$tmp/classes.yaml"
expect_output "$tmp/classes.yaml:10:56: model.num_classes 5 but the dataset (mnist) has 10 classes"
one_line
# The same at run start, with two ranks: one line, not one per rank, and no run folder.
expect_exit 2 "$runner" run "$tmp/classes.yaml" -n 2 --set output.root="$tmp/runs"
expect_output "model.num_classes 5 but the dataset (mnist) has 10 classes"
one_line
[ ! -e "$tmp/runs" ] || { echo "FAIL: a refused run made a run folder"; failures=$((failures + 1)); }
# in_chans that the images do not have after the transforms (here from an override).
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set model.in_chans=3 --dry-run
expect_output "model.in_chans 3 but the training images have 1 channel(s) after data.train_transforms (sample 0 is 28x28x1): set model.in_chans: 1"
one_line
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set model.in_chans=3 --set output.root="$tmp/runs"
expect_output "model.in_chans 3"
one_line
# The best metric must be one of the configured ones, and the error lists them.
expect_exit 2 "$runner" validate "$tmp/tiny.yaml" --set train.best.metric=f1
expect_output "train.best.metric: 'f1' is not a configured metric (configured: accuracy, loss)"

# A data folder that is not there: validate finds it (exit 2) at the key's file:line, naming the
# ${env:...} variable that gave the value; --schema-only (CI without the data) does not look.
mkdir -p "$tmp/base" "$tmp/sub"
sed -e 's|dataset: {name: mnist, root: .*, val_split: 50000}|dataset:\n    name: mnist\n    root: ${env:RUNNER_TEST_DIGITS:digits}\n    val_split: 50000|' \
  "$tmp/tiny.yaml" >"$tmp/base/base.yaml"
printf 'extends: ../base/base.yaml\n' >"$tmp/sub/exp.yaml"
expect_exit 2 "$runner" validate "$tmp/sub/exp.yaml"
expect_output "$tmp/sub/../base/base.yaml:7:11: data.dataset.root: no such folder: $tmp/base/digits (from \${env:RUNNER_TEST_DIGITS}, which is not set, so its default applied)"
one_line
RUNNER_TEST_DIGITS=/no/such/folder expect_exit 2 "$runner" run "$tmp/sub/exp.yaml" --dry-run
expect_output "no such folder: /no/such/folder (from \${env:RUNNER_TEST_DIGITS}, set to '/no/such/folder')"
one_line
expect_exit 0 "$runner" validate --schema-only "$tmp/sub/exp.yaml"
# A relative path written in a base file in another folder is relative to that file's folder
# (not the folder of the file given on the command line), and the run's config keeps it absolute.
ln -s "$data" "$tmp/base/digits"
expect_exit 0 "$runner" validate "$tmp/sub/exp.yaml"
expect_exit 0 "$runner" run "$tmp/sub/exp.yaml" --set output.root="$tmp/relruns"
grep -q "root: $tmp/base/digits\$" "$tmp"/relruns/tiny/*/config.yaml ||
  { echo "FAIL: the run's config.yaml should hold the base's root as $tmp/base/digits"; failures=$((failures + 1)); }

# Two 2-rank runs at once: the default port is a free one, so both train. While they run, no
# runner process listens anywhere but on loopback (the store is unauthenticated).
for name in a b; do
  "$runner" run "$tmp/tiny.yaml" -n 2 --set name="$name" --set output.root="$tmp/runs" \
    --set data.limit.train=2048 >"$tmp/$name.log" 2>&1 &
  eval "pid_$name=$!"
done
listeners=""
for _ in $(seq 1 100); do
  # The launchers by their command line, the ranks by their process titles.
  pids=$(pgrep -d, -f "runner-engine run $tmp/tiny.yaml|^runner-engine rank [01]/2 [ab]\$" || true)
  [ -n "$pids" ] && listeners+=$(ss -Hltnp 2>/dev/null | grep -E "pid=($(tr , '|' <<<"$pids"))," || true)$'\n'
  kill -0 "$pid_a" 2>/dev/null || kill -0 "$pid_b" 2>/dev/null || break
  sleep 0.1
done
wait "$pid_a" && a=0 || a=$?
wait "$pid_b" && b=0 || b=$?
[ "$a" = 0 ] && [ "$b" = 0 ] || {
  echo "FAIL: two runs at once: exit codes $a and $b"
  tail -5 "$tmp/a.log" "$tmp/b.log"
  failures=$((failures + 1))
}
[ -f "$tmp/runs/a/"*/summary.json ] && [ -f "$tmp/runs/b/"*/summary.json ] ||
  { echo "FAIL: both runs should have finished with a summary.json"; failures=$((failures + 1)); }
grep -q . <<<"$listeners" || { echo "FAIL: saw no listening socket of the runs (ss -ltnp)"; failures=$((failures + 1)); }
if grep -vE '^\s*$' <<<"$listeners" | grep -vqE '127\.0\.0\.1:[0-9]+|\[::1\]:[0-9]+'; then
  echo "FAIL: a runner process listens beyond loopback:"
  grep -vE '127\.0\.0\.1:|\[::1\]:' <<<"$listeners" | sort -u | head
  failures=$((failures + 1))
fi
# Resume continues with the config saved in the run folder: a command line that would change
# what the run was trained with is refused (one line, the key, both values); `--resume RUN_DIR`
# alone works; an allowed change (train.max_steps) is recorded, config.yaml stays as trained.
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.root="$tmp/resume" --set train.epochs=2 \
  --set data.limit.train=640 --set train.max_steps=12
run_dir=$(ls -d "$tmp"/resume/tiny/*)
cp "$run_dir/config.yaml" "$tmp/trained_config.yaml"
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set output.root="$tmp/resume" --resume
expect_output "data.limit.train would change from 640 (what the run was trained with, in its config.yaml) to 256"
one_line
expect_exit 2 "$runner" run --resume "$run_dir" --set train.batch_size=16
expect_output "train.batch_size would change from 32"
one_line
expect_exit 0 "$runner" run --resume "$run_dir" --set train.max_steps=
expect_output "resumed from"
cmp -s "$run_dir/config.yaml" "$tmp/trained_config.yaml" ||
  { echo "FAIL: a resume rewrote the run's config.yaml"; failures=$((failures + 1)); }
/usr/bin/python3 - "$run_dir" <<'PY' || failures=$((failures + 1))
import json, sys
d = sys.argv[1]
record = json.load(open(d + "/run.json"))
changes = [r["changes"] for r in record["resumes"]]
assert changes == [{"train.max_steps": [12, None]}], f"run.json resumes: {changes}"
commands = open(d + "/command.txt").read().splitlines()
assert len(commands) == 2 and "--resume" in commands[1], f"command.txt: {commands}"
steps = json.load(open(d + "/summary.json"))["optimizer_steps"]
assert steps == 40, f"2 epochs of 640 images at 32 should be 40 optimizer steps, got {steps}"
PY

# Predict from the run folder: the config it was trained with (no experiment file, no
# overrides again), its best weights by default, into RUN_DIR/predictions/.
expect_exit 0 "$runner" predict "$run_dir" --split val
[ "$(wc -l <"$run_dir/predictions/submission.csv")" = 129 ] ||
  { echo "FAIL: predict RUN_DIR --split val should write 128 rows to $run_dir/predictions/submission.csv"; failures=$((failures + 1)); }
expect_exit 0 "$runner" predict "$run_dir" --checkpoint last --output "$tmp/last.csv"
[ -s "$tmp/last.csv" ] || { echo "FAIL: predict --checkpoint last --output wrote nothing"; failures=$((failures + 1)); }
expect_exit 2 "$runner" predict "$tmp/tiny.yaml" --checkpoint best
expect_output "best and last name a run folder's checkpoints"

# Metrics after a resume: the steps a stopped run went on to after its last checkpoint are
# written again by the resumed run, and appear once. (The stop after the checkpoint is made
# by putting back an earlier last.pt.)
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.root="$tmp/again" --set train.epochs=2 \
  --set data.limit.train=640 --set train.max_steps=20 --set train.log_every_steps=1
again=$(ls -d "$tmp"/again/tiny/*)
cp "$again/checkpoints/last.pt" "$tmp/last20.pt"
expect_exit 0 "$runner" run --resume "$again" --set train.max_steps=
cp "$tmp/last20.pt" "$again/checkpoints/last.pt"
expect_exit 0 "$runner" run --resume "$again"
/usr/bin/python3 - "$again" <<'PY' || failures=$((failures + 1))
import csv, json, sys
d = sys.argv[1]
steps = [r["step"] for r in map(json.loads, open(d + "/metrics.jsonl")) if r["kind"] == "step"]
assert steps == list(range(1, 41)), f"metrics.jsonl step records after two resumes: {steps}"
rows = [int(r["step"]) for r in csv.DictReader(open(d + "/metrics.csv")) if r["kind"] == "step"]
assert rows == list(range(1, 41)), f"metrics.csv step rows after two resumes: {rows}"
PY

# kill -9 of rank 1 mid-run: the launcher stops the others, names the signal, shows the last
# lines of rank 1's log (flushed line by line) and exits 1 (a failed run).
"$runner" run "$tmp/tiny.yaml" -n 2 --set name=killed --set output.root="$tmp/runs" \
  --set data.limit.train=50000 --set train.log_every_steps=1 >"$tmp/killed.log" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 300); do
  for pid in $(pgrep -P "$launcher" || true); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx RANK=1 && victim=$pid
  done
  log=$(ls "$tmp"/runs/killed/*/logs/rank1.log 2>/dev/null || true)
  [ -n "$victim" ] && [ -n "$log" ] && grep -q "model small_cnn" "$tmp"/runs/killed/*/logs/rank0.log 2>/dev/null && break
  sleep 0.1
done
sleep 2  # into the training steps (the run takes ~30 s)
if [ -z "$victim" ] || [ -z "$log" ]; then
  echo "FAIL: rank 1 of the run to kill never started"; cat "$tmp/killed.log"; failures=$((failures + 1))
else
  kill -9 "$victim"
  wait "$launcher" && code=0 || code=$?
  out=$(cat "$tmp/killed.log")
  [ "$code" = 1 ] || { echo "FAIL: exit code $code after kill -9 of a rank, expected 1"; failures=$((failures + 1)); }
  expect_output "rank 1 (pid $victim) was killed by signal SIGKILL (9); stopped the other ranks."
  expect_output "lines of rank 1 ($(realpath "$log")):"
  expect_output "rank 1 of 2 (local rank 1)"
  [ -s "$log" ] || { echo "FAIL: rank 1's log is empty after kill -9"; failures=$((failures + 1)); }
  # The run says it failed and why: summary.json and the report.
  killed_dir=$(dirname "$(dirname "$log")")
  grep -q '"status": "failed"' "$killed_dir/summary.json" 2>/dev/null &&
    grep -q "rank 1 was killed by signal SIGKILL" "$killed_dir/summary.json" ||
    { echo "FAIL: summary.json should say status failed, rank 1 killed by SIGKILL:"; cat "$killed_dir/summary.json"; failures=$((failures + 1)); }
  grep -q "failed: rank 1 was killed by signal SIGKILL" "$killed_dir/report.html" ||
    { echo "FAIL: report.html does not say the run failed"; failures=$((failures + 1)); }
fi
finish
