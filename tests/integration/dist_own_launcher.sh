#!/bin/bash
# runner's own launcher with 2 and 3 CPU ranks over Gloo: DDP equals one process on the whole
# batch (SGD and Adam, with and without no_sync accumulation); gather_for_metrics returns each
# of 1001 samples exactly once, in order; BatchNorm buffers follow rank 0.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1

"$WORKER" spawn 2 ddp 5 4 1 adam > "$TMP/ddp2.log" 2>&1 || { cat "$TMP/ddp2.log"; fail "ddp 2 ranks adam"; }
expect_count "DDP_OK" 2 "$TMP/ddp2.log"
"$WORKER" spawn 2 ddp 3 4 3 sgd > "$TMP/acc.log" 2>&1 || { cat "$TMP/acc.log"; fail "ddp accumulation"; }
expect_count "DDP_OK" 2 "$TMP/acc.log"
"$WORKER" spawn 2 ddp 3 4 2 adam unused > "$TMP/unused.log" 2>&1 || { cat "$TMP/unused.log"; fail "ddp find_unused_parameters"; }
expect_count "DDP_OK" 2 "$TMP/unused.log"
"$WORKER" spawn 3 ddp 4 3 1 sgd > "$TMP/ddp3.log" 2>&1 || { cat "$TMP/ddp3.log"; fail "ddp 3 ranks"; }
expect_count "DDP_OK" 3 "$TMP/ddp3.log"
"$WORKER" spawn 2 bn 4 > "$TMP/bn.log" 2>&1 || { cat "$TMP/bn.log"; fail "batchnorm buffers"; }
expect_count "BN_OK" 2 "$TMP/bn.log"
for n in 2 3; do
  "$WORKER" spawn $n gather 1001 64 > "$TMP/g$n.log" 2>&1 || { cat "$TMP/g$n.log"; fail "gather $n ranks"; }
  expect_count "GATHER_OK rank=.* rows=1001 samples=1001" $n "$TMP/g$n.log"
done
"$WORKER" spawn 3 gather 1001 64 nopad > "$TMP/nopad.log" 2>&1 || { cat "$TMP/nopad.log"; fail "gather without padding"; }
expect_count "GATHER_OK .*rows=1001" 3 "$TMP/nopad.log"
"$WORKER" spawn 2 gather 1024 64 > "$TMP/even.log" 2>&1 || { cat "$TMP/even.log"; fail "gather even"; }
expect_count "GATHER_OK" 2 "$TMP/even.log"
echo "PASS"
