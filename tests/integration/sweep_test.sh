#!/usr/bin/env bash
# runner sweep end to end on a tiny Fashion-MNIST subset: the summary (table, CSV, Markdown,
# the page), resume after a stop, a point failing at run time, and train.batch_size: auto under a
# CPU memory budget. Usage: sweep_test.sh RUNNER SOURCE_DIR
set -eu
RUNNER=$1
SRC=$2
source "$SRC/tests/integration/lib.sh"
FMNIST=/usr/share/datasets/fashion-mnist
if [ ! -d "$FMNIST" ]; then
  echo "skipped: $FMNIST missing (apt-get install dataset-fashion-mnist)"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

write_tiny_experiment base.yaml "$FMNIST"
cat >tiny.yaml <<YAML
base: base.yaml
output: out
points:
  - {train.batch_size: 32}
  - {train.batch_size: 16, launch.num_processes: 2}
  - {train.batch_size: 512}
YAML

# 1. A full sweep: the two good points finish, the third fails at run time, the sweep goes on
# to the end and exits non-zero saying why.
expect_exit 1 "$RUNNER" sweep tiny.yaml
expect_output "1 failed"
# The table once, at the end; one line per point as it ends.
[ "$(grep -cE '^point +rank +processes' <<<"$out")" = 1 ] ||
  { echo "FAIL: the sweep should print its table once, got $(grep -cE '^point +rank +processes' <<<"$out")"; failures=$((failures + 1)); }
expect_output "sweep tiny: point 1/3 "
grep -qE "^sweep tiny: point 2/3 .* done: best accuracy [0-9.]+" <<<"$out" ||
  { echo "FAIL: a finished point's line should give its best metric"; failures=$((failures + 1)); }
grep -qE "^sweep tiny: point 3/3 .* failed: " <<<"$out" ||
  { echo "FAIL: a failed point's line should say why"; failures=$((failures + 1)); }
D=out/tiny
# The sweep's page is named after it and ranked like summary.csv.
grep -q "<h1>sweep tiny: 3 points</h1>" "out/tiny/report.html" && grep -q "ranked by best accuracy" "out/tiny/report.html" &&
  grep -q "settings that differ: .*train.batch_size" "out/tiny/report.html" ||
  { echo "FAIL: the sweep's report.html should be named after the sweep and ranked"; failures=$((failures + 1)); }
for f in summary.csv summary.md report.html; do
  [ -s "$D/$f" ] || { echo "FAIL: $D/$f missing"; failures=$((failures + 1)); }
done
points=$(ls "$D" | grep -v '^summary\|^report.html$' || true)
[ "$(echo "$points" | wc -l)" = 3 ] || { echo "FAIL: expected 3 point folders, got: $points"; failures=$((failures + 1)); }
p1=$(echo "$points" | sed -n 1p); p2=$(echo "$points" | sed -n 2p); p3=$(echo "$points" | sed -n 3p)
[ -f "$D/$p1/summary.json" ] && [ -f "$D/$p2/summary.json" ] && [ ! -f "$D/$p3/summary.json" ] ||
  { echo "FAIL: points 1, 2 should have finished and 3 not"; failures=$((failures + 1)); }
csv=$(cat "$D/summary.csv")
# Header, then one row per point: the processes, batches and statuses a user asked for.
[ "$(echo "$csv" | wc -l)" = 4 ] || { echo "FAIL: summary.csv should have 4 lines"; failures=$((failures + 1)); }
echo "$csv" | sed -n 1p | grep -q "images/s" || { echo "FAIL: csv header lacks images/s"; failures=$((failures + 1)); }
echo "$csv" | sed -n 2p | grep -q ",1,32,32,fp32," || { echo "FAIL: point 1 row: $(echo "$csv" | sed -n 2p)"; failures=$((failures + 1)); }
echo "$csv" | sed -n 3p | grep -q ",2,16,32,fp32," || { echo "FAIL: point 2 row: $(echo "$csv" | sed -n 3p)"; failures=$((failures + 1)); }
echo "$csv" | sed -n 2,3p | grep -c ",done$" | grep -q 2 || { echo "FAIL: points 1-2 not done"; failures=$((failures + 1)); }
echo "$csv" | sed -n 4p | grep -q "failed: exit code" || { echo "FAIL: point 3 not failed with a reason: $(echo "$csv" | sed -n 4p)"; failures=$((failures + 1)); }
echo "$csv" | sed -n 4p | grep -q "larger than the training split" || { echo "FAIL: point 3's reason is not its run's error: $(echo "$csv" | sed -n 4p)"; failures=$((failures + 1)); }
grep -q "^| point " "$D/summary.md" || { echo "FAIL: summary.md has no table"; failures=$((failures + 1)); }
[ ! -e "$D/summary.png" ] || { echo "FAIL: summary.png: the sweep's report.html charts the points"; failures=$((failures + 1)); }

# 2. Resume: point 2 left unfinished (no summary.json, a stale file) is rerun from scratch,
# point 1 is skipped and keeps its results.
stamp1=$(stat -c %Y "$D/$p1/summary.json")
rm "$D/$p2/summary.json"
touch "$D/$p2/stale_marker"
sleep 1
expect_exit 1 "$RUNNER" sweep tiny.yaml
expect_output "finished earlier: skipped"
expect_output "trained to its end but wrote no summary.json: starting it afresh; what it left is kept in"
[ "$(stat -c %Y "$D/$p1/summary.json")" = "$stamp1" ] || { echo "FAIL: point 1 was rerun"; failures=$((failures + 1)); }
[ -f "$D/$p2/summary.json" ] && [ ! -e "$D/$p2/stale_marker" ] ||
  { echo "FAIL: point 2 was not rerun from scratch"; failures=$((failures + 1)); }
grep -q ",done (earlier run)$" "$D/summary.csv" || { echo "FAIL: the skipped point is not shown as done earlier"; failures=$((failures + 1)); }

# 3. A bad point fails the whole sweep up front, naming it, before anything runs.
cat >bad.yaml <<YAML
base: base.yaml
output: out_bad
points:
  - {train.batch_size: 8}
  - {train.batch_size: -3}
YAML
expect_exit 2 "$RUNNER" sweep bad.yaml
expect_output "batch_size"
[ ! -e out_bad/bad ] || [ -z "$(ls out_bad/bad)" ] || { echo "FAIL: a point ran before validation failed"; failures=$((failures + 1)); }
# What `runner run` checks before it starts (its data is there and fits the model, its timm
# model imports), the sweep checks for every point before the first runs.
printf 'base: base.yaml\noutput: out_bad\npoints:\n  - {train.batch_size: 8}\n  - {data.dataset.root: %s/no_such_dataset}\n' "$WORK" >bad_data.yaml
expect_exit 2 "$RUNNER" sweep bad_data.yaml
expect_output "sweep point 001-"
expect_output "no_such_dataset"
[ ! -e out_bad/bad_data ] || [ -z "$(ls out_bad/bad_data)" ] || { echo "FAIL: a point ran before the checks failed"; failures=$((failures + 1)); }

# 4. train.batch_size: auto with a host-memory budget: the chosen size is logged and stored in
# the run's config.yaml; a generous budget reaches the cap, a tight one stops below it.
chosen_batch() { grep -E "^  batch_size: [0-9]+" "$WORK/auto_$1/config.yaml" | awk '{print $2}'; }
for budget in 24 4000; do
  expect_exit 0 "$RUNNER" run base.yaml --set train.batch_size=auto --set train.auto_batch.max=128 \
    --set "train.auto_batch.memory_budget_mb=$budget" --set scheduler.warmup_steps=0 \
    --set "output.run_dir=$WORK/auto_$budget"
  expect_output "auto batch size:"
done
small=$(chosen_batch 24 || true)
large=$(chosen_batch 4000 || true)
[ "${large:-none}" = 128 ] || { echo "FAIL: a 4000 MiB budget should reach the cap 128, chose ${large:-none}"; failures=$((failures + 1)); }
[ -n "$small" ] && [ "$small" -ge 1 ] && [ "$small" -lt 128 ] ||
  { echo "FAIL: a 24 MiB budget should stop below the cap 128, chose ${small:-none}"; failures=$((failures + 1)); }

# A point too short for a steady-state throughput (2 batches, 3 are excluded as warm-up) shows
# n/a, never 0, and is left out of the plot.
cat >short.yaml <<YAML
base: base.yaml
output: out_short
points:
  - {train.batch_size: 128}
  - {train.batch_size: 16}
YAML
expect_exit 0 "$RUNNER" sweep short.yaml
csv=$(cat out_short/short/summary.csv)
col=$(echo "$csv" | sed -n 1p | tr ',' '\n' | grep -n "^images/s$" | cut -d: -f1)
[ "$(echo "$csv" | sed -n 2p | cut -d, -f"$col")" = n/a ] ||
  { echo "FAIL: the 2-batch point's images/s should be n/a: $(echo "$csv" | sed -n 2p)"; failures=$((failures + 1)); }
echo "$csv" | sed -n 3p | cut -d, -f"$col" | grep -qE "^[0-9]+$" ||
  { echo "FAIL: the 16-batch point's images/s should be measured: $(echo "$csv" | sed -n 3p)"; failures=$((failures + 1)); }
grep -q "n/a" out_short/short/summary.md || { echo "FAIL: summary.md lacks n/a"; failures=$((failures + 1)); }

# 5. --parallel 2: a 4-point sweep (one point with 2 ranks) gives the same results as one after
# another; each point's output goes to its folder's output.log.
printf 'base: base.yaml\noutput: out_%s\npoints:\n  - {train.batch_size: 32}\n  - {train.batch_size: 16, launch.num_processes: 2}\n  - {optimizer.lr: 1.0e-3}\n  - {train.batch_size: 64}\n' seq >four_seq.yaml
sed 's/out_seq/out_par/' four_seq.yaml >four_par.yaml
expect_exit 0 "$RUNNER" sweep four_seq.yaml
expect_exit 0 "$RUNNER" sweep four_par.yaml --parallel 2
expect_output "started (output: "
seq_metrics=$(sweep_metric_columns out_seq/four_seq/summary.csv)
par_metrics=$(sweep_metric_columns out_par/four_par/summary.csv)
if [ "$seq_metrics" != "$par_metrics" ] || [ "$(grep -c ' done$' <<<"$par_metrics")" != 4 ]; then
  echo "FAIL: --parallel 2 and sequential results differ:"; echo "$seq_metrics"; echo "--"; echo "$par_metrics"
  failures=$((failures + 1))
fi
[ "$(ls out_par/four_par/*/output.log | wc -l)" = 4 ] || { echo "FAIL: each parallel point should have its output.log"; failures=$((failures + 1)); }
# The points really ran side by side: the executor's console says when each point's process
# started and ended; with --parallel 2 a second one starts before the first ends. Start and end
# lines, not file times: a tiny point trains for half a second of its few seconds.
most_at_once() {
  awk '/ started \(output: / { n++; if (n > m) m = n } / \([0-9.]+ s\)$/ { n-- } END { print m + 0 }' <<<"$1"
}
[ "$(most_at_once "$out")" = 2 ] || { echo "FAIL: --parallel 2 ran no two points at once: $out"; failures=$((failures + 1)); }
# Threads are split: 2 points at once on this machine's cores, each left at threads 0.
printf 'base: base.yaml\noutput: out_threads\nparallel: 2\nset: {launch.threads_per_process: 0}\npoints:\n  - {train.batch_size: 32}\n  - {train.batch_size: 64}\n' >threads.yaml
expect_exit 0 "$RUNNER" sweep threads.yaml
want=$(( $(env -u OMP_NUM_THREADS nproc) / 2 )); [ "$want" -ge 1 ] || want=1
for f in out_threads/threads/*/env.json; do
  grep -qE "\"torch_threads\": $want,?\$" "$f" || { echo "FAIL: $f: expected $want threads per point: $(grep torch_threads "$f")"; failures=$((failures + 1)); }
done

# 6. search: random: the same seed draws the same points, another seed others, every value in
# its distribution; the summary ranks the points by train.best.metric, best first.
cat >random.yaml <<YAML
base: base.yaml
output: out_random
search: random
trials: 3
seed: 11
distributions:
  optimizer.lr: {loguniform: [1.0e-4, 1.0e-2]}
  train.batch_size: {choice: [16, 32, 64]}
  optimizer.weight_decay: {uniform: [0.0, 0.1]}
  train.epochs: {int: [1, 2]}
YAML
expect_exit 0 "$RUNNER" sweep random.yaml --dry-run
first=$out
expect_exit 0 "$RUNNER" sweep random.yaml --dry-run
[ "$out" = "$first" ] || { echo "FAIL: seed 11 drew different points twice"; failures=$((failures + 1)); }
sed 's/^seed: 11/seed: 12/' random.yaml >random12.yaml
expect_exit 0 "$RUNNER" sweep random12.yaml --dry-run
[ "$(grep -c '^00' <<<"$out")" = 3 ] && [ "$(grep '^00' <<<"$out")" != "$(grep '^00' <<<"$first")" ] ||
  { echo "FAIL: seed 12 should draw 3 other points"; failures=$((failures + 1)); }
/usr/bin/python3 - "$first" <<'PY' || failures=$((failures + 1))
import re, sys
points = [l for l in sys.argv[1].splitlines() if re.match(r"^\d{3}-", l)]
ok = len(points) == 3
for line in points:
    v = dict(kv.split("=", 1) for kv in line.split(": ", 1)[1].split())
    ok &= 1e-4 <= float(v["optimizer.lr"]) <= 1e-2
    ok &= v["train.batch_size"] in ("16", "32", "64")
    ok &= 0.0 <= float(v["optimizer.weight_decay"]) <= 0.1
    ok &= v["train.epochs"] in ("1", "2")
if not ok:
    print("FAIL: random points outside their distributions:\n" + "\n".join(points))
    sys.exit(1)
PY
expect_exit 0 "$RUNNER" sweep random.yaml
/usr/bin/python3 - out_random/random/summary.csv <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ranks = [r["rank"] for r in rows]
best = [float(r["best accuracy"]) for r in rows]
if ranks != ["1", "2", "3"] or best != sorted(best, reverse=True):
    print(f"FAIL: random search summary not ranked by best accuracy: {ranks} {best}")
    sys.exit(1)
PY

# 7. keep_global_batch divides the batch by the point's processes; repeat runs each point with
# seeds seed, seed+1; a grid under search: random is refused in one line naming it.
printf 'base: base.yaml\noutput: out_kg\nkeep_global_batch: true\nrepeat: 2\npoints:\n  - {train.batch_size: 64, launch.num_processes: 2}\n' >kg.yaml
expect_exit 0 "$RUNNER" sweep kg.yaml --dry-run
expect_output "train.batch_size=32"
expect_output "000-num_processes=2-batch_size=64-seed=1: "
expect_output "001-num_processes=2-batch_size=64-seed=2: "
# repeat counts from the point's own seed: the sweep's set, or --set.
printf 'base: base.yaml\noutput: out_seed\nrepeat: 2\nset: {seed: 7}\npoints:\n  - {train.batch_size: 32}\n' >seeded.yaml
expect_exit 0 "$RUNNER" sweep seeded.yaml --dry-run
expect_output "000-batch_size=32-seed=7: "
expect_output "001-batch_size=32-seed=8: "
expect_exit 0 "$RUNNER" sweep seeded.yaml --dry-run --set seed=100
expect_output "001-batch_size=32-seed=101: "
cat >grid.yaml <<YAML
base: base.yaml
grid: {train.batch_size: [16, 32], optimizer.lr: [0.001, 0.002]}
YAML
expect_exit 0 "$RUNNER" sweep grid.yaml --dry-run
[ "$(grep '^00' <<<"$out" | cut -d: -f1 | tr '\n' ' ')" = "000-batch_size=16-lr=0.001 001-batch_size=16-lr=0.002 002-batch_size=32-lr=0.001 003-batch_size=32-lr=0.002 " ] ||
  { echo "FAIL: grid points in the wrong order: $out"; failures=$((failures + 1)); }
# --dry-run checks each point as runner sweep and validate do before the first runs: a point whose
# model does not fit the data is named, and nothing is listed as if it would run.
printf 'base: base.yaml\noutput: out_chans\npoints:\n  - {train.batch_size: 16}\n  - {model.in_chans: 3}\n' >chans.yaml
expect_exit 2 "$RUNNER" sweep chans.yaml --dry-run
expect_output "sweep point 001-in_chans=3: "
expect_output "model.in_chans 3 but the training images have 1 channel(s)"
! grep -q "^000-batch_size=16:" <<<"$out" || { echo "FAIL: a dry run with a bad point listed the points"; failures=$((failures + 1)); }
printf 'base: base.yaml\nsearch: random\ntrials: 2\ngrid: {train.batch_size: [8]}\ndistributions: {optimizer.lr: {uniform: [0.001, 0.01]}}\n' >badrandom.yaml
expect_exit 2 "$RUNNER" sweep badrandom.yaml
expect_output "badrandom.yaml:4:1: grid: search: random draws its points from distributions"
[ "$(wc -l <<<"$out")" = 1 ] || { echo "FAIL: one error line expected: $out"; failures=$((failures + 1)); }
printf 'base: base.yaml\nseed: 3\ngrid: {train.batch_size: [8]}\n' >gridseed.yaml
expect_exit 2 "$RUNNER" sweep gridseed.yaml
expect_output "gridseed.yaml:2:1: seed: only search: random reads it"
expect_exit 2 "$RUNNER" sweep tiny.yaml --executor kubernetes
expect_output "--executor kubernetes: expected local or slurm"

# 8. A finished point answers the question it was run with: the same sweep with another
# override is refused in one line naming the key (not "finished earlier: skipped" with the old
# numbers); --rerun replaces the results.
printf 'base: base.yaml
output: out_changed
points:
  - {train.batch_size: 32}
' >changed.yaml
expect_exit 0 "$RUNNER" sweep changed.yaml --set data.limit.train=128
expect_exit 2 "$RUNNER" sweep changed.yaml --set data.limit.train=64
expect_output "point 000-batch_size=32 finished earlier with another config: data.limit.train was 128, now 64"
expect_output "--rerun"
[ "$(grep -c 'runner: error' <<<"$out")" = 1 ] || { echo "FAIL: one error line expected: $out"; failures=$((failures + 1)); }
expect_exit 0 "$RUNNER" sweep changed.yaml --set data.limit.train=64 --rerun
grep -q "limit:" out_changed/changed/000-batch_size=32/config.yaml &&
  /usr/bin/python3 -c 'import sys,yaml; d=yaml.safe_load(open(sys.argv[1])); sys.exit(d["data"]["limit"]["train"] != 64)' \
    out_changed/changed/000-batch_size=32/config.yaml ||
  { echo "FAIL: --rerun did not run the point with the new limit"; failures=$((failures + 1)); }
expect_exit 0 "$RUNNER" sweep changed.yaml --set data.limit.train=64
expect_output "finished earlier: skipped"

finish
