#!/bin/bash
# Two "nodes" as two network namespaces joined by a veth pair (10.x addresses exist only inside
# them): runner's launcher on each node with nnodes 2, one rank per node, DDP over Gloo/TCP.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=60
command -v ip > /dev/null || { echo "SKIP: iproute2 is not installed"; exit 77; }
tag=$$
ns0=rn0_$tag; ns1=rn1_$tag
cleanup() { ip netns del $ns0 2>/dev/null; ip netns del $ns1 2>/dev/null; cleanup_tmp; }
trap cleanup EXIT
if ! ip netns add $ns0 2>/dev/null; then
  [ "${CI:-}" = true ] && fail "cannot create network namespaces (CI must run this test)"
  echo "SKIP: cannot create network namespaces here (needs root / CAP_NET_ADMIN)"; exit 77
fi
# Some containers create namespaces but cannot enter them ("mount --make-rslave /" fails).
if ! ip netns exec $ns0 true 2>"$TMP/exec.err"; then
  reason="cannot enter a network namespace here: $(head -1 "$TMP/exec.err")"
  [ "${CI:-}" = true ] && fail "$reason (CI must run this test)"
  echo "SKIP: $reason"; exit 77
fi
ip netns add $ns1 || fail "ip netns add"
ip link add rv0_$tag type veth peer name rv1_$tag || fail "veth pair"
ip link set rv0_$tag netns $ns0 && ip link set rv1_$tag netns $ns1 || fail "veth into namespaces"
ip -n $ns0 addr add 10.231.7.1/24 dev rv0_$tag && ip -n $ns1 addr add 10.231.7.2/24 dev rv1_$tag \
  || fail "addresses"
for ns in $ns0 $ns1; do ip -n $ns link set lo up; done
ip -n $ns0 link set rv0_$tag up && ip -n $ns1 link set rv1_$tag up || fail "links up"

port=29417
node() {  # node NS RANK MODE...
  local ns=$1 rank=$2; shift 2
  timeout 100 ip netns exec $ns "$WORKER" --nnodes 2 --node-rank $rank --master-addr 10.231.7.1 \
    --master-port $port spawn 1 "$@"
}
node $ns0 0 ddp 3 4 2 adam > "$TMP/n0.log" 2>&1 &
node $ns1 1 ddp 3 4 2 adam > "$TMP/n1.log" 2>&1
c1=$?; wait %1; c0=$?
[ $c0 -eq 0 ] && [ $c1 -eq 0 ] || { cat "$TMP/n0.log" "$TMP/n1.log"; fail "two-node ddp: exit codes $c0 $c1"; }
expect_count "DDP_OK rank=0 world=2" 1 "$TMP/n0.log"
expect_count "DDP_OK rank=1 world=2" 1 "$TMP/n1.log"

node $ns0 0 gather 1001 64 > "$TMP/g0.log" 2>&1 &
node $ns1 1 gather 1001 64 > "$TMP/g1.log" 2>&1
c1=$?; wait %1; c0=$?
[ $c0 -eq 0 ] && [ $c1 -eq 0 ] || { cat "$TMP/g0.log" "$TMP/g1.log"; fail "two-node gather"; }
expect_in "GATHER_OK .*rows=1001" "$TMP/g1.log"
echo "PASS"
