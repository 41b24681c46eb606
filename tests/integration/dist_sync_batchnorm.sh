#!/bin/bash
# SyncBatchNorm over Gloo: ranks holding parts of a batch (equal and unequal parts) get the
# outputs, input and parameter gradients and running statistics of plain BatchNorm on one
# process holding the whole batch, step after step.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1

"$WORKER" spawn 2 syncbn 3 4 4 > "$TMP/even.log" 2>&1 || { cat "$TMP/even.log"; fail "syncbn 4+4"; }
expect_count "SYNCBN_OK" 2 "$TMP/even.log"
"$WORKER" spawn 2 syncbn 3 5 3 > "$TMP/uneven.log" 2>&1 || { cat "$TMP/uneven.log"; fail "syncbn 5+3"; }
expect_count "SYNCBN_OK" 2 "$TMP/uneven.log"
"$WORKER" spawn 3 syncbn 2 2 1 4 > "$TMP/three.log" 2>&1 || { cat "$TMP/three.log"; fail "syncbn 2+1+4"; }
expect_count "SYNCBN_OK" 3 "$TMP/three.log"
echo "PASS"
