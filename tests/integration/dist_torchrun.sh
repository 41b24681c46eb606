#!/bin/bash
# torchrun (Debian's python3-torch 1.13) starts the ranks: they join through torchrun's agent
# store, DDP matches one process, and a rank's error reaches torchrun's failure summary through
# TORCHELASTIC_ERROR_FILE.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=60
if ! /usr/bin/python3 -c "import torch.distributed.run" 2>/dev/null; then
  echo "SKIP: Debian's python3-torch (torchrun) is not installed"; exit 77
fi
# 1.13 spells it --no_python; on Python 3.11 it needs --redirects/--tee or it fails at start.
torchrun() {
  timeout 100 /usr/bin/python3 -m torch.distributed.run --no_python --redirects 1 --tee 1 \
    --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port "$(free_port)" "$@"
}

torchrun "$WORKER" ddp 4 4 2 adam > "$TMP/ddp.log" 2>&1 || { cat "$TMP/ddp.log"; fail "torchrun ddp"; }
expect_count "DDP_OK" 2 "$TMP/ddp.log"

torchrun "$WORKER" raise 1 > "$TMP/fail.log" 2>&1
code=$?
[ $code -ne 0 ] && [ $code -ne 124 ] || { cat "$TMP/fail.log"; fail "torchrun with a failing rank: exit code $code"; }
# torchrun's summary shows the root cause read from the rank's error file.
expect_in "Root Cause" "$TMP/fail.log"
expect_in "rank 1: deliberate failure for the test" "$TMP/fail.log"
echo "PASS"
