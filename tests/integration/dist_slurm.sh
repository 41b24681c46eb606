#!/bin/bash
# SLURM: a one-node slurmctld + slurmd in a temp folder (slurm_cluster.sh), then `srun -n 2` the
# rank program: ranks find each other from SLURM_* variables alone. Daemons stop on exit.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
source "$(dirname "$0")/slurm_cluster.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=60
why=$(slurm_cluster_missing)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
trap 'stop_slurm_cluster; cleanup_tmp' EXIT
start_slurm_cluster "$TMP" || fail "could not start the SLURM cluster"

timeout 100 srun -n 2 --oversubscribe "$WORKER" ddp 3 4 1 sgd > "$TMP/ddp.log" 2>&1 \
  || { cat "$TMP/ddp.log"; fail "srun ddp"; }
expect_count "DDP_OK" 2 "$TMP/ddp.log"
timeout 100 srun -n 2 --oversubscribe "$WORKER" gather 1001 64 > "$TMP/gather.log" 2>&1 \
  || { cat "$TMP/gather.log"; fail "srun gather"; }
expect_count "GATHER_OK .*rows=1001" 2 "$TMP/gather.log"
echo "PASS"
