# A real one-node SLURM cluster for tests, sourced: `start_slurm_cluster DIR` starts munged,
# slurmctld and slurmd with their files in DIR (mode 700) and exports SLURM_CONF;
# `stop_slurm_cluster` stops them (call it from the caller's EXIT trap). Needs root and
# Debian's slurm-wlm + munge: `slurm_cluster_missing` prints why not, or nothing.
slurm_pids=()

slurm_cluster_missing() {
  local tool
  for tool in munged mungekey slurmctld slurmd srun sbatch squeue scancel; do
    command -v $tool > /dev/null || { echo "$tool is not installed (slurm-wlm, munge)"; return; }
  done
  [ "$(id -u)" = 0 ] || echo "the SLURM cluster's daemons start as root"
}

slurm_free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }

start_slurm_cluster() {
  local dir=$1 host ctld_port slurmd_port i
  chmod 700 "$dir"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 700 "$dir/munge"
  mungekey --create --keyfile="$dir/munge/munge.key" || { echo "mungekey failed"; return 1; }
  chmod 400 "$dir/munge/munge.key"
  munged --force --foreground --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" > "$dir/munge/out.log" 2>&1 &
  slurm_pids+=($!)
  host=$(hostname -s)
  ctld_port=$(slurm_free_port)
  slurmd_port=$(slurm_free_port)
  export SLURM_CONF="$dir/slurm.conf"
  cat > "$SLURM_CONF" <<CONF
ClusterName=runnertest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
KillWait=5
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  for i in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done
  [ -S "$dir/munge/munge.socket" ] || { cat "$dir/munge/"*.log; echo "munged did not start"; return 1; }
  slurmctld -D -i > "$dir/ctld.out" 2>&1 &
  slurm_pids+=($!)
  slurmd -D -N "$host" > "$dir/slurmd.out" 2>&1 &
  slurm_pids+=($!)
  for i in $(seq 100); do
    sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed" && return 0
    sleep 0.2
  done
  cat "$dir/slurmctld.log" "$dir/slurmd.log" "$dir"/*.out 2>/dev/null | tail -40
  echo "slurm node did not come up"
  return 1
}

stop_slurm_cluster() {
  local p
  # Jobs first (their processes outlive a killed slurmd); safe under set -e.
  if [ -n "${SLURM_CONF:-}" ]; then
    scancel --user="$(id -un)" 2>/dev/null || true
    for p in $(seq 25); do [ -z "$(squeue --noheader 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${slurm_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
