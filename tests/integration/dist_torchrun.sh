#!/bin/bash
# torchrun (from the torch of requirements.txt, RUNNER_PYTHON) starts the ranks: they join
# through torchrun's agent store, DDP matches one process, and a rank's error reaches
# torchrun's failure summary through TORCHELASTIC_ERROR_FILE.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=60
PY=${RUNNER_PYTHON:-.venv/bin/python}
if ! "$PY" -c "import torch.distributed.run" 2>/dev/null; then
  echo "SKIP: $PY has no torch (torchrun): run make deps"; exit 77
fi
torchrun() {
  timeout 100 "$PY" -m torch.distributed.run --no-python --redirects 1 --tee 1 \
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
