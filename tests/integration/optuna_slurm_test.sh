#!/usr/bin/env bash
# search: optuna as SLURM workers sharing one study in a real PostgreSQL 15 (issue 71): a
# throwaway cluster (initdb/pg_ctl as an unprivileged user, on a free port, removed after) and
# the one-node SLURM cluster the tests start (slurm_cluster.sh).
# - `runner sweep --executor slurm --parallel 2 --wait` submits 2 workers that take trials from
#   the study until `trials` have run: exactly that many trials in the study, each a run folder
#   started once, both workers ran trials, the summary lists every trial with its epochs;
# - `runner sweep --summary` prints the best trial's settings and the epochs spent;
# - a storage that cannot be reached (sweep and validate), and a pruner with a base that has no
#   validation split, are one line, exit 2, before any trial;
# - the workers' job cancelled mid-trial (scancel) and submitted again: the new worker continues
#   the trial from its last.pt and the study ends with exactly its trials.
# Usage: optuna_slurm_test.sh RUNNER SOURCE_DIR
set -euo pipefail
runner=$1
source_dir=$2
python=${RUNNER_PYTHON:-python3}
source "$source_dir/tests/integration/lib.sh"
source "$source_dir/tests/integration/slurm_cluster.sh"
skip() {
  [[ ${CI:-} == true ]] && { echo "FAIL: CI must run the Optuna SLURM test: $*"; exit 1; }
  echo "SKIP: $*"
  exit 77
}
FMNIST=/usr/share/datasets/fashion-mnist
PG=/usr/lib/postgresql/15/bin
[[ -d $FMNIST ]] || skip "$FMNIST is missing (apt-get install dataset-fashion-mnist)"
[[ -x $PG/initdb ]] || skip "PostgreSQL 15 is not installed (apt-get install postgresql-15)"
"$python" -c "import optuna, psycopg" 2>/dev/null || skip "$python lacks optuna or psycopg (make deps)"
why=$(slurm_cluster_missing)
[[ -z $why ]] || skip "$why"
tmp=$(mktemp -d /tmp/runner_optuna_slurm_XXXXXX)
chmod 755 "$tmp" # PostgreSQL's user reaches its folder inside
as_postgres() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
cleanup() {
  stop_slurm_cluster
  if [[ -f $tmp/pg/data/postmaster.pid ]]; then
    as_postgres "$PG/pg_ctl" -D "$tmp/pg/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
mkdir "$tmp/cluster" "$tmp/pg"
start_slurm_cluster "$tmp/cluster" || fail "could not start the SLURM cluster"
chown nobody "$tmp/pg"
port=$(slurm_free_port)
as_postgres "$PG/initdb" -D "$tmp/pg/data" -U runner --auth=trust >"$tmp/pg/initdb.log" 2>&1 ||
  fail "initdb: $(tail -3 "$tmp/pg/initdb.log")"
as_postgres "$PG/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/server.log" -w \
  -o "-p $port -k $tmp/pg -c listen_addresses=127.0.0.1" start >/dev/null ||
  fail "pg_ctl start: $(tail -3 "$tmp/pg/server.log")"
as_postgres "$PG/createdb" -h 127.0.0.1 -p "$port" -U runner optuna || fail "createdb"
url="postgresql://runner@127.0.0.1:$port/optuna"
cd "$tmp"
write_tiny_experiment base.yaml "$FMNIST"

# trials_in URL STUDY: "count state=n ..." of the study's trials, as Optuna reads them (a trial
# told over the budget, when workers asked at once, is not one of them).
trials_in() {
  "$python" - "$1" "$2" <<'PY'
import collections, sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name=sys.argv[2], storage=sys.argv[1])
trials = [t for t in study.trials if not t.user_attrs.get("runner.over_budget")]
counts = collections.Counter(t.state.name.lower() for t in trials)
print(len(trials), " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
PY
}

# ---- 2 SLURM workers, one study in PostgreSQL ----
cat >shared.yaml <<YAML
base: base.yaml
search: optuna
trials: 8
sampler: {name: tpe, seed: 0, startup_trials: 2}
pruner: {name: median, startup_trials: 2}
storage: $url
distributions:
  optimizer.lr: {loguniform: [1.0e-4, 1.0e-1]}
set: {train.epochs: 3}
output: $tmp/sweeps
executor: slurm
slurm: {time: "00:10:00"}
YAML
timeout 300 "$runner" sweep shared.yaml --parallel 2 --wait >shared.log 2>&1 ||
  fail "the sweep: $(tail -5 shared.log; tail -5 sweeps/shared/slurm/logs/*.out)"
grep -q "submitted 2 worker(s) as SLURM job" shared.log || fail "no workers submitted: $(cat shared.log)"
S=sweeps/shared
study=$(trials_in "$url" shared)
[[ $study == "8 "* ]] || fail "the study holds $study, not 8 trials"
[[ $study != *fail* && $study != *running* ]] || fail "the study: $study"
logs=("$S"/slurm/logs/*.out)
[[ ${#logs[@]} -eq 2 ]] || fail "expected 2 worker logs: ${logs[*]}"
for log in "${logs[@]}"; do
  grep -q " started: " "$log" || fail "worker $log ran no trial: $(cat "$log"); the other: $(cat "${logs[@]}")"
done
for n in 0 1 2 3 4 5 6 7; do
  started=$(cat "${logs[@]}" | grep -c "trial trial-000$n started: " || true)
  [[ $started -eq 1 ]] || fail "trial-000$n started $started times"
  [[ -f $S/trial-000$n/summary.json ]] || fail "trial-000$n has no summary.json"
done
if ls -d "$S"/*.old-* >/dev/null 2>&1; then fail "a trial's folder was moved aside: $(ls "$S")"; fi
rows=$(/usr/bin/python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(len(r), all("/" in x["epochs"] for x in r))' $S/summary.csv)
[[ $rows == "8 True" ]] || fail "summary.csv: every trial with its epochs: $rows: $(cat $S/summary.csv)"

# ---- --summary: the best trial's settings and the epochs spent ----
"$runner" sweep shared.yaml --summary >summary.log 2>&1 || fail "--summary: $(tail -5 summary.log)"
grep -qE "best trial trial-000[0-7]: accuracy [0-9.]+ with optimizer.lr=" summary.log ||
  fail "--summary names no best trial: $(cat summary.log)"
grep -qE "[0-9]+ epoch\(s\) trained over 8 trial\(s\), [0-9]+% of the 24 " summary.log ||
  fail "--summary says no epochs spent: $(cat summary.log)"
[[ $(trials_in "$url" shared) == "$study" ]] || fail "--summary changed the study"

# ---- the workers' job cancelled mid-trial (scancel); submitted again, the study continues ----
cat >cut.yaml <<YAML
base: base.yaml
search: optuna
trials: 2
sampler: {name: random, seed: 1}
storage: $url
distributions:
  optimizer.lr: {loguniform: [1.0e-3, 1.0e-2]}
set: {train.epochs: 12, train.checkpoint_every_steps: 4}
output: $tmp/sweeps
executor: slurm
YAML
"$runner" sweep cut.yaml --parallel 1 >cut1.log 2>&1 || fail "the first submission: $(cat cut1.log)"
job=$(sed -n 's/.*as SLURM job \([0-9]*\).*/\1/p' cut1.log)
[[ -n $job ]] || fail "no job id: $(cat cut1.log)"
C=sweeps/cut
for _ in $(seq 600); do [[ -f $C/trial-0000/checkpoints/last.pt ]] && break; sleep 0.2; done
[[ -f $C/trial-0000/checkpoints/last.pt ]] || fail "trial 0 saved no last.pt: $(cat $C/slurm/logs/*.out)"
scancel "$job"
slurm_job_until_ended "$job" 120 || fail "the cancelled workers did not end"
timeout 300 "$runner" sweep cut.yaml --parallel 1 --wait >cut2.log 2>&1 ||
  fail "submitted again: $(tail -5 cut2.log; tail -5 $C/slurm/logs/*.out)"
second=$(sed -n 's/.*as SLURM job \([0-9]*\).*/\1/p' cut2.log)
grep -q "point trial-0000 did not finish before: continuing it from its checkpoints/last.pt" \
  $C/slurm/logs/${second}_0.out || fail "trial 0 was not continued: $(cat $C/slurm/logs/${second}_0.out)"
[[ $(trials_in "$url" cut) == "2 complete=2" ]] || fail "the study after the cut: $(trials_in "$url" cut)"
[[ ! -e $C/trial-0002 ]] || fail "a third trial was asked"

# ---- bad input: one line, exit 2, no trial ----
bad() {
  local problem
  problem=$(sweep_refusal_problem "$runner" "$@")
  [[ -z $problem ]] || fail "$problem"
}
closed=$(slurm_free_port)
sed "s#storage: .*#storage: postgresql://runner@127.0.0.1:$closed/optuna#; s#output: .*#output: sweeps/bad1#; /executor:/d" \
  shared.yaml >bad1.yaml
bad "port $closed failed: Connection refused" bad1.yaml
grep -qF "bad1.yaml:6:10: storage: " bad.out || fail "the refusal names the storage key's line: $(cat bad.out)"
rc=0
"$runner" validate bad1.yaml >bad.out 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -qF "port $closed failed: Connection refused" bad.out ||
  fail "validate of an unreachable storage: exit $rc: $(cat bad.out)"
sed 's#output: .*#output: sweeps/bad2#; /executor:/d; s#set: {#set: {data.dataset.val_split: 0, train.best.metric: loss, metrics: [{name: loss}], #' \
  shared.yaml >bad2.yaml
bad "bad2.yaml:5:16: pruner median judges each epoch by train.best.metric (loss) on the validation split, and the base has none" bad2.yaml
echo "all checks passed"
