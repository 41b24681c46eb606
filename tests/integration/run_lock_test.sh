#!/usr/bin/env bash
# One writer per run folder (issue 77), the way users meet it:
# - while a run trains in output.run_dir, a second `runner run` into it, `runner run --resume`
#   of it and `runner validate` naming it are refused (exit 2, naming the holder's pid); the
#   live run ends well;
# - two `runner sweep` on one sweep file at once run each point once, and both end with a
#   complete summary;
# - a sweep killed (SIGKILL to its process group) mid-point and started again continues the
#   point from its last.pt (run.json records the resume) and ends as an uninterrupted point;
#   a point whose config changed since starts afresh, its earlier attempt kept aside.
# Usage: run_lock_test.sh RUNNER SOURCE_DIR
set -euo pipefail
runner=$1
source_dir=$2
if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: /usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)"
  exit 77
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 -- "-$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
fail() {
  echo "FAIL: $*"
  exit 1
}
# wait_for PATH SECONDS: until PATH exists
wait_for() {
  for _ in $(seq $(($2 * 10))); do
    [[ -e $1 ]] && return 0
    sleep 0.1
  done
  fail "$1 did not appear within $2 s"
}
# refused TEXT CMD...: CMD exits 2 saying TEXT
refused() {
  local text=$1 rc=0
  shift
  "$@" >refused.out 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "$*: exit $rc, not 2: $(tail -3 refused.out)"
  grep -qF -- "$text" refused.out || fail "$*: not '$text': $(tail -3 refused.out)"
}

cat >exp.yaml <<EOF
extends: $source_dir/experiments/quickstart.yaml
launch: {num_processes: 1, threads_per_process: 1}
data:
  dataset: {val_split: 59000}
predict: {enabled: false}
train: {max_steps: 150, checkpoint_every_steps: 10}
EOF

# ---- a live run holds its folder ----
setsid "$runner" run exp.yaml --set output.run_dir=live >live.log 2>&1 &
live=$!
pids+=("$live")
wait_for live/checkpoints/last.pt 60
refused "output.run_dir live is in use by runner run exp.yaml" "$runner" run exp.yaml --set output.run_dir=live
grep -qF "(pid $live on" refused.out || fail "the holder's pid: $(cat refused.out)"
refused "is in use by" "$runner" run --resume live
refused "output.run_dir live is in use by" "$runner" validate exp.yaml --set output.run_dir=live
wait "$live" || fail "the live run did not end well: $(tail -5 live.log)"
grep -q '"status": "finished"' live/summary.json || fail "the live run's summary"
[[ $(wc -l <live/command.txt) -eq 1 ]] || fail "another command wrote into the live run: $(cat live/command.txt)"

# ---- two sweeps on one folder ----
cat >sweep.yaml <<EOF
base: exp.yaml
grid:
  optimizer.lr: [0.001, 0.002]
set: {train.max_steps: 60}
output: $tmp/sweeps
EOF
setsid "$runner" sweep sweep.yaml >sweep_a.log 2>&1 &
a=$!
pids+=("$a")
wait_for "sweeps/sweep/000-lr=0.001/checkpoints" 60
setsid "$runner" sweep sweep.yaml >sweep_b.log 2>&1 &
b=$!
pids+=("$b")
wait "$a" || fail "sweep A: $(tail -5 sweep_a.log)"
wait "$b" || fail "sweep B: $(tail -5 sweep_b.log)"
grep -q "000-lr=0.001 is running in runner sweep" sweep_b.log || fail "B did not leave point 0 to A: $(cat sweep_b.log)"
for point in "000-lr=0.001" "001-lr=0.002"; do
  [[ $(wc -l <"sweeps/sweep/$point/command.txt") -eq 1 ]] ||
    fail "$point ran more than once: $(cat "sweeps/sweep/$point/command.txt")"
done
for log in sweep_a.log sweep_b.log; do
  grep -q "2 point(s), 0 failed" "$log" || fail "$log: $(tail -3 "$log")"
done
[[ $(grep -c ",done" sweeps/sweep/summary.csv) -eq 2 ]] || fail "summary.csv: $(cat sweeps/sweep/summary.csv)"

# ---- a killed sweep resumes its point ----
cat >kill.yaml <<EOF
base: exp.yaml
grid:
  optimizer.lr: [0.001]
output: $tmp/sweeps
EOF
cp kill.yaml whole.yaml
setsid "$runner" sweep whole.yaml >whole.log 2>&1 || fail "the uninterrupted sweep: $(tail -5 whole.log)"
setsid "$runner" sweep kill.yaml >kill1.log 2>&1 &
k=$!
pids+=("$k")
point=sweeps/kill/000-lr=0.001
wait_for "$point/checkpoints/last.pt" 60
sleep 1
kill -9 -- "-$k"
wait "$k" 2>/dev/null || true
"$runner" sweep kill.yaml >kill2.log 2>&1 || fail "the restarted sweep: $(tail -5 kill2.log)"
grep -q "continuing it from its checkpoints/last.pt" kill2.log || fail "not resumed: $(cat kill2.log)"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["resumes"]' "$point/run.json" ||
  fail "run.json records no resume: $(cat "$point/run.json")"
python3 - "$point" sweeps/whole/000-lr=0.001 <<'EOF' || fail "the resumed point differs from an uninterrupted one"
import json, sys
a, b = (json.load(open(f"{d}/summary.json")) for d in sys.argv[1:])
assert a["last_metrics"] == b["last_metrics"], (a["last_metrics"], b["last_metrics"])
EOF
# Its config changed since (an edited sweep file): afresh, the earlier attempt kept aside.
rm "$point/summary.json"
sed -i 's/optimizer.lr: \[0.001\]/optimizer.lr: [0.001]\nset: {train.max_steps: 20}/' kill.yaml
"$runner" sweep kill.yaml >kill3.log 2>&1 || fail "the changed sweep: $(tail -5 kill3.log)"
grep -q "ran with another config (train.max_steps was 150, now 20): starting it afresh" kill3.log ||
  fail "no fresh start said: $(cat kill3.log)"
ls -d sweeps/kill/000-lr=0.001.old-*/checkpoints >/dev/null || fail "the earlier attempt was not kept"
echo "all checks passed"
