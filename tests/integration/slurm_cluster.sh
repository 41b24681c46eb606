# A real one-node SLURM cluster for tests, sourced: `start_slurm_cluster DIR` starts munged,
# slurmctld and slurmd with their files in DIR (mode 700) and exports SLURM_CONF;
# `stop_slurm_cluster` stops them (call it from the caller's EXIT trap). Needs root and
# Debian's slurm-wlm + munge: `slurm_cluster_missing` prints why not, or nothing.
# `slurm_job_until_ended JOB LIMIT_S` drives a job by its state; `slurm_job_report JOB` prints
# what SLURM knows of it (for a failure's message).
slurm_pids=()
slurm_dir=

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
  slurm_dir=$dir
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
# What a cluster that requeues jobs has: batch jobs requeueable by default (sbatch --requeue
# asks anyway), and ended jobs kept in slurmctld's memory long enough to read their state.
JobRequeue=1
MinJobAge=600
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

# One field of `scontrol show job -o JOB` (JobState, Reason, StartTime, Restarts...).
slurm_job_field() {  # LINE FIELD
  tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1
}

# Waits until JOB has ended (COMPLETED, FAILED, CANCELLED...), driven by its state: SLURM holds a
# requeued batch job until its BeginTime (about 2 minutes on) and a launch failure's requeue
# is held; a one-node test cluster need not wait for either, so a PENDING job held for its
# BeginTime starts now and a held one is released. Every state change is logged in
# $slurm_dir/job-JOB.states. Returns 1 (after slurm_job_report) when LIMIT_S passes first.
slurm_job_until_ended() {  # JOB LIMIT_S
  local job=$1 deadline=$(($(date +%s) + $2)) line state reason seen= errors=0 pending_since=0
  while :; do
    if ! line=$(scontrol show job -o "$job" 2>&1); then
      # slurmctld may be slow to answer on a loaded machine; a job it no longer knows has ended.
      grep -qi "invalid job id" <<<"$line" && return 0
      errors=$((errors + 1))
      [ $errors -lt 50 ] || { echo "scontrol show job $job keeps failing: $line"; return 1; }
      sleep 0.2
      continue
    fi
    errors=0
    state=$(slurm_job_field "$line" JobState)
    reason=$(slurm_job_field "$line" Reason)
    if [ "$state/$reason" != "$seen" ]; then
      echo "$(date +%T) $state Reason=$reason Restarts=$(slurm_job_field "$line" Restarts)" \
        "StartTime=$(slurm_job_field "$line" StartTime)" >>"$slurm_dir/job-$job.states"
      seen=$state/$reason
    fi
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
        return 0 ;;
      PENDING)
        # A requeued job started in the second its last run was killed in is refused by slurmd
        # ("Job credential revoked": it compares whole seconds) and the job fails: release it 2 s
        # or more after it is seen pending (SLURM itself would hold it about 2 minutes).
        [ "$pending_since" != 0 ] || pending_since=$(date +%s)
        case $reason in
          BeginTime)
            [ "$(date +%s)" -lt $((pending_since + 3)) ] ||
              scontrol update JobId="$job" StartTime=now >/dev/null 2>&1 || true ;;
          JobHeld* | *held*) scontrol release "$job" >/dev/null 2>&1 || true ;;
        esac ;;
      REQUEUE_HOLD) scontrol release "$job" >/dev/null 2>&1 || true ;;
    esac
    [ "$state" = PENDING ] || pending_since=0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "job $job has not ended after $2 s"
      slurm_job_report "$job"
      return 1
    fi
    sleep 0.2
  done
}

# What SLURM knows of JOB: its state changes, scontrol's record, the node's state and reason,
# slurmctld's and slurmd's log lines that name it.
slurm_job_report() {  # JOB
  local job=${1%%_*}
  echo "--- job $1, its states:"; cat "$slurm_dir/job-$1.states" 2>/dev/null
  echo "--- scontrol show job $1:"; scontrol show job "$1" 2>&1 | grep -E "JobState|Restarts|BeginTime|StartTime|NodeList|Requeue" | sed 's/^ */  /'
  echo "--- nodes:"; sinfo -N -h -o '%N %T %E' 2>&1
  echo "--- slurmctld.log:"; grep -E "JobId=$job(_[0-9]+)?([^0-9]|$)|job $job([^0-9]|$)" "$slurm_dir/slurmctld.log" 2>/dev/null | tail -n 25
  echo "--- slurmd.log:"; grep -E "$job" "$slurm_dir/slurmd.log" 2>/dev/null | tail -n 15
}
