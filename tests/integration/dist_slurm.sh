#!/bin/bash
# SLURM: start munge and a one-node slurmctld + slurmd in a temp folder, then `srun -n 2` the
# rank program: ranks find each other from SLURM_* variables alone. Daemons stop on exit.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=60
for tool in munged mungekey slurmctld slurmd srun; do
  command -v $tool > /dev/null || { echo "SKIP: $tool is not installed (slurm-wlm, munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the SLURM test starts daemons as root"; exit 77; }

chmod 700 "$TMP"
mkdir -p "$TMP/munge" "$TMP/state" "$TMP/spool"
chmod 700 "$TMP/munge"
pids=()
stop_all() {
  local p; for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  cleanup_tmp
}
trap stop_all EXIT

mungekey --create --keyfile="$TMP/munge/munge.key" || fail "mungekey"
chmod 400 "$TMP/munge/munge.key"
munged --force --foreground --socket="$TMP/munge/munge.socket" --key-file="$TMP/munge/munge.key" \
  --pid-file="$TMP/munge/munged.pid" --log-file="$TMP/munge/munged.log" \
  --seed-file="$TMP/munge/munged.seed" > "$TMP/munge/out.log" 2>&1 &
pids+=($!)

host=$(hostname -s)
ctld_port=$(free_port); slurmd_port=$(free_port)
export SLURM_CONF="$TMP/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=runnertest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$TMP/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
for i in $(seq 50); do [ -S "$TMP/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$TMP/munge/munge.socket" ] || { cat "$TMP/munge/"*.log; fail "munged did not start"; }
slurmctld -D -i > "$TMP/ctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$host" > "$TMP/slurmd.out" 2>&1 &
pids+=($!)
ready=0
for i in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed"; then ready=1; break; fi
  sleep 0.2
done
[ $ready = 1 ] || { cat "$TMP/slurmctld.log" "$TMP/slurmd.log" "$TMP"/*.out 2>/dev/null | tail -40; fail "slurm node did not come up"; }

timeout 100 srun -n 2 --oversubscribe "$WORKER" ddp 3 4 1 sgd > "$TMP/ddp.log" 2>&1 \
  || { cat "$TMP/ddp.log"; fail "srun ddp"; }
expect_count "DDP_OK" 2 "$TMP/ddp.log"
timeout 100 srun -n 2 --oversubscribe "$WORKER" gather 1001 64 > "$TMP/gather.log" 2>&1 \
  || { cat "$TMP/gather.log"; fail "srun gather"; }
expect_count "GATHER_OK .*rows=1001" 2 "$TMP/gather.log"
echo "PASS"
