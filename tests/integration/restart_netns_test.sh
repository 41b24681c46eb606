#!/bin/bash
# launch.max_restarts across two "nodes" (two network namespaces joined by a veth pair, one
# runner launcher and one rank on each, a shared run folder): the rank of node 1 is killed
# mid-run, both launchers restart their ranks, which meet again at node 0's store, continue from
# last.pt and finish; the run ends as an uninterrupted two-node run.
RUNNER=$1
ROOT=$2
set -u
command -v ip >/dev/null || { echo "SKIP: iproute2 is not installed"; exit 77; }
TMP=$(mktemp -d)
tag=$$
ns0=rr0_$tag; ns1=rr1_$tag
cleanup() { ip netns del $ns0 2>/dev/null; ip netns del $ns1 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! ip netns add $ns0 2>/dev/null; then
  [ "${CI:-}" = true ] && fail "cannot create network namespaces (CI must run this test)"
  echo "SKIP: cannot create network namespaces here (needs root / CAP_NET_ADMIN)"; exit 77
fi
if ! ip netns exec $ns0 true 2>/dev/null; then
  [ "${CI:-}" = true ] && fail "cannot enter a network namespace (CI must run this test)"
  echo "SKIP: cannot enter a network namespace here"; exit 77
fi
ip netns add $ns1 || fail "ip netns add"
ip link add rv0_$tag type veth peer name rv1_$tag || fail "veth pair"
ip link set rv0_$tag netns $ns0 && ip link set rv1_$tag netns $ns1 || fail "veth into namespaces"
ip -n $ns0 addr add 10.231.9.1/24 dev rv0_$tag && ip -n $ns1 addr add 10.231.9.2/24 dev rv1_$tag ||
  fail "addresses"
for ns in $ns0 $ns1; do ip -n $ns link set lo up; done
ip -n $ns0 link set rv0_$tag up && ip -n $ns1 link set rv1_$tag up || fail "links up"

cat >"$TMP/two.yaml" <<YAML
name: two
seed: 7
launch: {device: cpu, threads_per_process: 1, num_processes: 1, nnodes: 2, master_addr: 10.231.9.1,
         timeout_s: 30, max_restarts: 1, restart_backoff_s: 0.5}
data:
  dataset: {name: synthetic, train_size: 4096, val_size: 64, test_size: 0, height: 16, width: 16, noise: 0.6}
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 2.0e-3}
metrics: [{name: accuracy}]
train: {epochs: 2, batch_size: 16, log_every_steps: 1, deterministic: true, checkpoint_every_steps: 10}
predict: {enabled: false}
output: {tensorboard: false}
YAML
node() {  # node NS RANK PORT RUN_DIR
  OMP_NUM_THREADS=1 timeout 300 ip netns exec "$1" "$RUNNER" run "$TMP/two.yaml" --node-rank "$2" \
    --master-port "$3" --set output.run_dir="$4"
}
two_nodes() {  # RUN_DIR PORT: both nodes, node 1's output to n1.log
  node $ns0 0 "$2" "$1" >"$TMP/n0.log" 2>&1 &
  pid0=$!
  node $ns1 1 "$2" "$1" >"$TMP/n1.log" 2>&1 &
  pid1=$!
}

# The reference: uninterrupted.
two_nodes "$TMP/ref" 29431
wait $pid0 || { cat "$TMP/n0.log"; fail "two nodes, uninterrupted: node 0"; }
wait $pid1 || { cat "$TMP/n1.log"; fail "two nodes, uninterrupted: node 1"; }

# Node 1's rank killed at step 60: both nodes restart and finish.
two_nodes "$TMP/run" 29432
for _ in $(seq 600); do
  grep -q '"step":60}' "$TMP/run/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
rank0=$(pgrep -f '^runner-engine rank 0/2 two$' | head -1)
rank1=$(pgrep -f '^runner-engine rank 1/2 two$' | head -1)
[ -n "$rank0" ] && [ -n "$rank1" ] || fail "ranks not found by their titles"
# Rank 0 is held while rank 1 dies, as a loaded machine holds it: node 1 restarts first and its
# new rank reaches node 0's store while the old rank 0 is still there; it must wait for the new.
kill -STOP "$rank0"
kill -9 "$rank1"
sleep 3
kill -CONT "$rank0"
wait $pid0; c0=$?
wait $pid1; c1=$?
[ $c0 = 0 ] && [ $c1 = 0 ] || { tail -n 40 "$TMP/n0.log" "$TMP/n1.log"; fail "after the kill: exit codes $c0 $c1"; }
grep -q "runner launcher: restart 1 of 1" "$TMP/n1.log" || fail "node 1 did not restart"
grep -q "runner launcher: restart 1 of 1" "$TMP/n0.log" || fail "node 0 did not restart"
steps() { /usr/bin/python3 -c "import json,sys; print([(r['step'], r['loss']) for r in map(json.loads, open(sys.argv[1])) if r['kind'] == 'step'])" "$1"; }
[ "$(steps "$TMP/run/metrics.jsonl")" = "$(steps "$TMP/ref/metrics.jsonl")" ] ||
  fail "the restarted two-node run's per-step losses differ from the uninterrupted run's"
grep -q '"status": "finished"' "$TMP/run/summary.json" || fail "the restarted run did not finish"
echo "PASS"
