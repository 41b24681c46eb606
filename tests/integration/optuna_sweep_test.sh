#!/usr/bin/env bash
# runner sweep with search: optuna (issue 71, on one machine), with Optuna itself (the project's
# venv, RUNNER_PYTHON), on 256 Fashion-MNIST images:
# - TPE + successive halving over lr and batch size: every trial a run folder, the pruned ones
#   stopped after a whole epoch with status pruned and their last.pt, the study (its journal
#   file) holding exactly `trials` trials; the summary best first; run again, nothing more runs;
# - a sweep killed outright (SIGKILL to its process group) mid-trial and started again
#   continues that trial from its last.pt and asks no trial twice;
# - bad input is one line, exit 2, before any trial: an unknown sampler (did-you-mean), a
#   distribution key the base lacks, a Python without Optuna.
# Usage: optuna_sweep_test.sh RUNNER SOURCE_DIR
set -euo pipefail
runner=$1
source_dir=$2
python=${RUNNER_PYTHON:-python3}
source "$source_dir/tests/integration/lib.sh"
FMNIST=/usr/share/datasets/fashion-mnist
[[ -d $FMNIST ]] || { echo "SKIP: $FMNIST is missing (apt-get install dataset-fashion-mnist)"; exit 77; }
"$python" -c "import optuna" 2>/dev/null ||
  { echo "SKIP: $python has no optuna (make deps installs it)"; exit 77; }
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
# trials_in JOURNAL STUDY: "state count" lines of the study, as Optuna reads it
trials_in() {
  "$python" - "$1" "$2" <<'EOF'
import collections, sys, optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
study = optuna.load_study(study_name=sys.argv[2], storage=JournalStorage(JournalFileBackend(sys.argv[1])))
counts = collections.Counter(t.state.name.lower() for t in study.trials)
print(len(study.trials), " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
EOF
}
write_tiny_experiment base.yaml "$FMNIST"

# ---- TPE + successive halving ----
cat >search.yaml <<EOF
base: base.yaml
search: optuna
trials: 6
sampler: {name: tpe, seed: 0, startup_trials: 2}
pruner: {name: successive_halving, min_resource: 1, reduction_factor: 2}
distributions:
  optimizer.lr: {loguniform: [1.0e-4, 1.0e-1]}
  train.batch_size: {choice: [16, 32]}
set: {train.epochs: 3}
output: $tmp/sweeps
EOF
"$runner" validate search.yaml >v.out 2>&1 || fail "validate: $(cat v.out)"
grep -q "ok: search.yaml (sweep, search: optuna, 6 trials)" v.out || fail "validate said: $(cat v.out)"
"$runner" sweep search.yaml >search.log 2>&1 || fail "the search: $(tail -5 search.log)"
S=sweeps/search
[[ $(trials_in $S/study.journal search) == "6 complete="* ]] || fail "the study: $(trials_in $S/study.journal search)"
pruned=$(grep -c "pruned after epoch" $S/summary.csv || true)
[[ $pruned -ge 1 ]] || fail "no trial was pruned: $(cat $S/summary.csv)"
[[ $(trials_in $S/study.journal search) == *"pruned=$pruned"* ]] || fail "pruned in the study and the summary differ"
for summary in $S/trial-*/summary.json; do
  status=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$summary")
  dir=$(dirname "$summary")
  if [[ $status == pruned ]]; then
    [[ -f $dir/checkpoints/last.pt ]] || fail "$dir: pruned without its last.pt"
  else
    [[ $status == finished ]] || fail "$dir: status $status"
  fi
done
# Best first: the first row has the best accuracy of the finished trials.
"$python" - $S/summary.csv <<'EOF' || fail "the summary is not best first: $(cat $S/summary.csv)"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
values = [float(r["best accuracy"]) for r in rows if r["best accuracy"] not in ("", "n/a")]
assert values and values[0] == max(values), values
EOF
# The sweep's page: each pruned trial's curves end at the epoch it stopped, its status says so.
"$python" - $S/report.html "$pruned" <<'PY' || fail "report.html: the pruned trials' curves and status"
import json, re, sys
html = open(sys.argv[1]).read()
found = re.search(r'<script type="application/json" id="runner-data">(.*?)</script>', html, re.S)
series = [m for m in json.loads(found.group(1))["metrics"] if m["x"] == "epoch" and "accuracy" in m["id"]]
assert series, "no per-epoch accuracy chart"
lengths = [len(points) for points in series[0]["runs"]]
pruned = int(sys.argv[2])
assert len(lengths) == 6 and lengths.count(3) == 6 - pruned, lengths
assert all(0 < n < 3 for n in lengths if n != 3), lengths
assert html.count("pruned after epoch") >= pruned, "the pruned trials' status"
PY
"$runner" sweep search.yaml >again.log 2>&1 || fail "run again: $(tail -5 again.log)"
grep -q " started: " again.log && fail "a finished study ran trials again: $(cat again.log)"
[[ $(trials_in $S/study.journal search) == "6 "* ]] || fail "the study grew: $(trials_in $S/study.journal search)"

# ---- killed outright, started again ----
cat >killed.yaml <<EOF
base: base.yaml
search: optuna
trials: 2
sampler: {name: random, seed: 1}
distributions:
  optimizer.lr: {loguniform: [1.0e-3, 1.0e-2]}
set: {train.epochs: 12, train.checkpoint_every_steps: 4}
output: $tmp/sweeps
EOF
setsid "$runner" sweep killed.yaml >killed1.log 2>&1 &
k=$!
pids+=("$k")
for _ in $(seq 600); do [[ -f sweeps/killed/trial-0000/checkpoints/last.pt ]] && break; sleep 0.1; done
[[ -f sweeps/killed/trial-0000/checkpoints/last.pt ]] || fail "trial 0 saved no last.pt: $(tail -3 killed1.log)"
kill -9 -- "-$k"
wait "$k" 2>/dev/null || true
"$runner" sweep killed.yaml >killed2.log 2>&1 || fail "the restarted study: $(tail -5 killed2.log)"
grep -q "point trial-0000 did not finish before: continuing it from its checkpoints/last.pt" killed2.log ||
  fail "trial 0 was not continued: $(cat killed2.log)"
[[ $(trials_in sweeps/killed/study.journal killed) == "2 complete=2" ]] ||
  fail "the study: $(trials_in sweeps/killed/study.journal killed)"
[[ ! -e sweeps/killed/trial-0002 ]] || fail "a third trial was asked"

# ---- bad input: one line, exit 2, no trial ----
bad() {
  local problem
  problem=$(sweep_refusal_problem "$runner" "$@")
  [[ -z $problem ]] || fail "$problem"
}
sed 's/name: tpe/name: tpee/; s#output: .*#output: sweeps/bad1#' search.yaml >bad1.yaml
bad "bad1.yaml:4:17: sampler.name: must be one of tpe, random, cmaes, gp, grid (got 'tpee') (did you mean 'tpe'?)" bad1.yaml
sed 's/optimizer.lr:/optimizer.lrr:/; s#output: .*#output: sweeps/bad2#' search.yaml >bad2.yaml
bad "optimizer.lrr: unknown key (did you mean 'lr'?)" bad2.yaml
sed 's#output: .*#output: sweeps/bad3#' search.yaml >bad3.yaml
empty_venv=$tmp/novenv
/usr/bin/python3 -m venv "$empty_venv"
RUNNER_PYTHON=$empty_venv/bin/python bad "cannot import optuna: run \`make deps\`" bad3.yaml
# A pruner with nothing to judge: `runner validate` refuses it as `runner sweep` does.
sed 's#output: .*#output: sweeps/bad4#; s#set: {#set: {data.dataset.val_split: 0, train.best.metric: loss, metrics: [{name: loss}], #' \
  search.yaml >bad4.yaml
judges="pruner successive_halving judges each epoch by train.best.metric (loss) on the validation split, and the base has none"
bad "bad4.yaml:5:16: $judges" bad4.yaml
rc=0
"$runner" validate bad4.yaml >bad.out 2>&1 || rc=$?
[[ $rc -eq 2 && $(grep -c . bad.out) -eq 1 ]] && grep -qF "bad4.yaml:5:16: $judges" bad.out ||
  fail "validate of a pruner without a validation split: exit $rc: $(cat bad.out)"
echo "all checks passed"
