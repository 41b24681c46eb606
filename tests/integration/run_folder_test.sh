#!/usr/bin/env bash
# A run folder nothing can spoil (issue 39), through the CLI: a new run never writes into
# another's folder (--overwrite replaces it whole); a resume that cannot start changes nothing
# but command.txt; a full disk and an unwritable folder are one line naming the file; a
# prediction that fails after training keeps the training; what a run records is what ran.
# Every refusal is checked against checksums of every file the earlier run left.
set -eu
runner=$1
root=$2
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
mounted=""
trap '[ -n "$mounted" ] && umount "$mounted" 2>/dev/null; rm -rf "$tmp"' EXIT
data=${MNIST_ROOT:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: Fashion-MNIST not at $data (make deps installs dataset-fashion-mnist)"
  exit 77
fi
write_tiny_experiment "$tmp/tiny.yaml" "$data"
one_line() {
  [ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: expected one line, got: $out"; failures=$((failures + 1)); }
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# Checksums of every file under a folder, to prove a command left it as it was.
sums() { (cd "$1" && find . -type f ! -name '*.lock' -print0 | sort -z | xargs -0 sha256sum); }
same_except() {  # DIR BEFORE_FILE [ALLOWED_FILE...]: every file but the allowed ones unchanged
  local dir=$1 before=$2
  shift 2
  local now
  now=$(sums "$dir")
  for allowed in "$@"; do
    now=$(grep -v " \./$allowed\$" <<<"$now" || true)
    before_text=$(grep -v " \./$allowed\$" "$before" || true)
  done
  [ "$#" -gt 0 ] || before_text=$(cat "$before")
  [ "$now" = "$before_text" ] || { fail "$dir changed:"; diff <(echo "$before_text") <(echo "$now") | head -8; }
}

# 1. A finished run in output.run_dir: a second run refuses it (exit 2, one line, nothing
# touched); --overwrite replaces it whole (no record of the first run remains).
run=$tmp/run
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$run" --set train.epochs=2
sums "$run" >"$tmp/run.sums"
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$run"
expect_output "--set output.run_dir=$run: output.run_dir $run holds another run (finished): a new run never writes into another's folder"
expect_output "runner run --resume $run"
one_line
same_except "$run" "$tmp/run.sums"
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$run" -n 2
one_line
expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$run" --dry-run
expect_output "holds another run"
same_except "$run" "$tmp/run.sums"
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$run" --overwrite
epochs=$(grep -c '"kind":"epoch"' "$run/metrics.jsonl")
[ "$epochs" = 1 ] || fail "--overwrite: metrics.jsonl holds $epochs epoch records, the replaced run's too"
[ "$(wc -l <"$run/command.txt")" = 1 ] || fail "--overwrite: command.txt keeps the replaced run's command"
# A folder that holds something else is never a run's, with or without --overwrite.
mkdir -p "$tmp/mine" && echo notes >"$tmp/mine/notes.txt"
for flag in "" --overwrite; do
  expect_exit 2 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/mine" $flag
  expect_output "output.run_dir $tmp/mine is not empty (1 entry: notes.txt) and holds no run"
  one_line
done
[ "$(ls "$tmp/mine")" = notes.txt ] || fail "a refused run wrote into a folder that was not its own"

# 2. Resumes that cannot start change nothing but command.txt: a damaged last.pt, a refused
# world size; the next plain --resume does not inherit the refused change.
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/two" -n 2
sums "$tmp/two" >"$tmp/two.sums"
expect_exit 2 "$runner" run --resume "$tmp/two" -n 1 --set train.epochs=2
expect_output "it was written by 2"
same_except "$tmp/two" "$tmp/two.sums" command.txt
sums "$tmp/two" >"$tmp/two.sums"
expect_exit 0 "$runner" run --resume "$tmp/two" --set train.epochs=2
expect_output "resumed from"
cp -r "$tmp/two" "$tmp/damaged"
sed -i "s|$tmp/two|$tmp/damaged|g" "$tmp/damaged/config.yaml" "$tmp/damaged/run.json" 2>/dev/null || true
head -c 1000 "$tmp/damaged/checkpoints/last.pt" >"$tmp/damaged/checkpoints/last.pt.cut"
mv "$tmp/damaged/checkpoints/last.pt.cut" "$tmp/damaged/checkpoints/last.pt"
sums "$tmp/damaged" >"$tmp/damaged.sums"
expect_exit 2 "$runner" run --resume "$tmp/damaged" --set train.epochs=3
expect_output "cannot load checkpoint '$tmp/damaged/checkpoints/last.pt'"
one_line
same_except "$tmp/damaged" "$tmp/damaged.sums" command.txt
grep -q '"status": "finished"' "$tmp/damaged/summary.json" || fail "a resume that never started changed the run's status"

# 3. A full disk, for each kind of file (checkpoints, metrics, report, predictions): one line
# naming the file and why, no terminate/stack trace, no temporary file left, exit 1, and
# summary.json saying failed with that reason where there is room left to say it (root only:
# tmpfs mounts).
full_disk() {  # NAME FREE_KIB EXPECTED_FILE_PATTERN RUNNER_ARGS...: a run on a disk with FREE_KIB free
  local name=$1 free=$2 pattern=$3
  shift 3
  mkdir -p "$tmp/full_$name"
  mount -t tmpfs -o size=4m tmpfs "$tmp/full_$name" || return 1
  mounted=$tmp/full_$name
  # Ballast fills all but FREE_KIB of the disk.
  dd if=/dev/zero of="$tmp/full_$name/ballast" bs=1k count=$((4096 - free)) status=none 2>/dev/null || true
  expect_exit 1 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/full_$name/run" "$@"
  expect_output "No space left on device (the disk is full"
  grep -Eq "cannot write $tmp/full_$name/run/$pattern: No space left" <<<"$out" ||
    fail "$name: the line does not name the file ($pattern): $(grep 'cannot write' <<<"$out")"
  grep -q "terminate called\|internal error\|Exception raised" <<<"$out" && fail "$name: not one line: $out"
  [ -z "$(find "$tmp/full_$name" -name '*.tmp')" ] || fail "$name: a half-written temporary file stayed"
  if [ -f "$tmp/full_$name/run/summary.json" ]; then
    grep -q '"status": "failed"' "$tmp/full_$name/run/summary.json" ||
      fail "$name: summary.json does not say failed"
    grep -q 'No space left' "$tmp/full_$name/run/summary.json" || fail "$name: summary.json lacks the reason"
  else
    grep -q "could not record the failure" <<<"$out" || fail "$name: no summary.json and no word why"
  fi
  umount "$tmp/full_$name" && mounted=""
}
if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/probe" && mount -t tmpfs -o size=1m tmpfs "$tmp/probe" 2>/dev/null; then
  umount "$tmp/probe"
  # last.pt (weights and Adam state, 3.3 MiB) does not fit; everything before it does.
  full_disk checkpoint 3800 'checkpoints/(best|last)\.pt' --set train.epochs=2
  # 80 log windows of records fill what 32 KiB leave before the epoch ends.
  full_disk metrics 32 'metrics\.(jsonl|csv)' --set data.limit.train=2560 --set train.batch_size=32
  # The epoch's report.html (Chart.js inline: over 200 KiB) does not fit in 60 KiB.
  full_disk report 60 'report\.html'
else
  echo "note: the full-disk cases need root and tmpfs mounts: skipped"
fi
# Predictions on a full disk of their own: the training is kept (status failed at predict).
if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/fullp" && mount -t tmpfs -o size=64k tmpfs "$tmp/fullp" 2>/dev/null; then
  mounted=$tmp/fullp
  dd if=/dev/zero of="$tmp/fullp/ballast" bs=1k count=64 status=none 2>/dev/null || true
  expect_exit 1 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/predfull" \
    --set predict.enabled=true --set predict.output="$tmp/fullp/submission.csv"
  expect_output "cannot write $tmp/fullp/submission.csv: No space left on device"
  grep -q '"failed_stage": "predict"' "$tmp/predfull/summary.json" || fail "predictions: not failed at predict"
  [ -z "$(find "$tmp/fullp" -name '*.tmp')" ] || fail "predictions: a half-written temporary file stayed"
  umount "$tmp/fullp" && mounted=""
fi

# 4. An output folder this user cannot write: exit 2 before any rank starts, at validate and
# --dry-run too (as an unprivileged user: root writes anywhere).
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp "$@"; }
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "note: the unwritable-folder case needs root (to run as nobody): skipped"
elif ! as_nobody "$runner" --version >/dev/null 2>&1; then
  # A checkout in root's home (mode 700, as on a fresh Debian) is closed to other users.
  echo "note: the unwritable-folder case: user nobody cannot run $runner (a folder above it is closed to other users): skipped"
else
  mkdir -p "$tmp/locked" && chmod 555 "$tmp/locked" && chmod 755 "$tmp"
  chmod -R a+rX "$tmp/tiny.yaml"
  for cmd in "run" "run --dry-run" "validate"; do
    # shellcheck disable=SC2086
    expect_exit 2 as_nobody "$runner" $cmd "$tmp/tiny.yaml" --set output.root="$tmp/locked/runs"
    expect_output "--set output.root=$tmp/locked/runs: output.root $tmp/locked/runs: cannot write in $tmp/locked (Permission denied): set output.root to a folder you can write"
    one_line
  done
fi

# 5. A prediction that fails after training keeps the training: best.pt, best_metrics, status
# failed at stage predict; runner predict RUN_DIR does it again.
expect_exit 1 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/pred" \
  --set predict.enabled=true --set predict.output=/proc/runner-cannot-write/submission.csv
expect_output "cannot write /proc/runner-cannot-write/submission.csv"
/usr/bin/python3 - "$tmp/pred/summary.json" <<'PY' || failures=$((failures + 1))
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "failed" and s["failed_stage"] == "predict", s
assert s["best_metrics"].get("accuracy") is not None and s["best"]["value"] is not None, s
PY
[ -f "$tmp/pred/checkpoints/best.pt" ] || fail "a failed prediction took best.pt"
expect_exit 0 "$runner" predict "$tmp/pred" --output "$tmp/pred/again.csv"
[ "$(wc -l <"$tmp/pred/again.csv")" = 65 ] || fail "runner predict RUN_DIR did not redo the predictions"

# 6. What a run records is what ran: early stopping says when and why; an interrupted resumed
# run keeps the best an earlier epoch set; a resume that trains longer says the schedule moved.
expect_exit 0 "$runner" run "$tmp/tiny.yaml" --set output.run_dir="$tmp/early" --set train.epochs=6 \
  --set train.early_stopping.patience=1 --set train.early_stopping.min_delta=2
/usr/bin/python3 - "$tmp/early/summary.json" <<'PY' || failures=$((failures + 1))
import json, sys
s = json.load(open(sys.argv[1]))
assert s["early_stopped"]["epoch"] == 2 and "no accuracy improvement" in s["early_stopped"]["reason"], s
PY
expect_exit 0 "$runner" run --resume "$tmp/two" --set train.epochs=4
expect_output "the resumed run has 16 optimizer steps, the run before had 8"
finish
