"""Runs that survive what long runs meet (issue 40), through the CLI, with 2 CPU ranks:
- a stop delivered twice is one stop: `timeout`'s delivery (the command, then its process
  group), `kill -INT -- -PGID`, `kill -TERM -- -PGID`, a Ctrl-C and the group's SIGTERM 50 ms
  apart, the real `timeout -s INT` and plain `timeout` end with 130/143,
  a mid-epoch last.pt, summary.json interrupted and non-empty rank logs, and the resume ends as
  one uninterrupted run; a real second Ctrl-C 3 s after the first still stops at once;
- launch.max_restarts: kill -9 of rank 1 at three steps, or rank 1 frozen in a collective (the
  collective timeout), restarts the run from its last.pt (train.checkpoint_every_steps 5) and it
  ends as an uninterrupted one (train.deterministic), the restart recorded in summary.json,
  run.json and the report; a rank that dies at every attempt ends the run after the restarts,
  failed, naming the cause;
- torchrun --max-restarts 1 with a worker killed: the run finishes in one folder;
- launch.slurm_requeue (scontrol stood in for on PATH): SLURM's SIGUSR1 to the launcher and its
  group saves last.pt, marks the run requeued and requeues the job; the requeued job (same
  command, SLURM_RESTART_COUNT=1) continues the folder and ends as one go; a refused requeue
  leaves an interrupted run.
Usage: long_runs_test.py RUNNER SOURCE_DIR   (RUNNER_PYTHON: the venv with torch, for torchrun)"""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

from engine_lib import (RUNNER, check, finish, free_port, metrics, only_run_dir, read_safetensors,
                        run, tmpdir, write)

CONFIG = """
name: long
seed: 7
launch: {device: cpu, threads_per_process: 1, num_processes: 2, restart_backoff_s: 0.2}
precision: fp32
data:
  dataset: {name: synthetic, train_size: 4096, val_size: 96, test_size: 0, height: 32, width: 32, noise: 0.6}
  train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10, drop_rate: 0.2}
optimizer: {name: adamw, lr: 3.0e-3}
scheduler: {name: cosine, warmup_steps: 3}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 2, batch_size: 16, log_every_steps: 1, deterministic: true, best: {metric: accuracy}}
predict: {enabled: false}
"""
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def steps(run_dir):
    return [(r["step"], r["loss"], r["lr"]) for r in metrics(run_dir, "step")]


def weights(run_dir, tmp, tag):
    path = os.path.join(tmp, tag + ".safetensors")
    run("export", [os.path.join(run_dir, "checkpoints", "last.pt"), "-o", path])
    return read_safetensors(path) if os.path.exists(path) else {}


def summary(run_dir):
    path = os.path.join(run_dir, "summary.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def rank_pid(rank):
    """The pid of the running rank `rank` of experiment `long` (by its process title), or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0] == f"runner-engine rank {rank}/2 long".encode():
                    return int(pid)
        except OSError:
            continue
    return None


def reached(root, step):
    files = glob.glob(os.path.join(root, "long", "*", "metrics.jsonl"))
    return bool(files) and f'"step":{step}}}' in open(files[0]).read()


def start(args, new_session=True):
    return subprocess.Popen([RUNNER, "run"] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=ENV, start_new_session=new_session)


def wait_until(condition, seconds=90):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def ended_interrupted(code, out, root, want_code, signal_name, what):
    run_dir = only_run_dir(root, "long")
    check(code == want_code, f"{what}: exit {code}, expected {want_code}:\n{out[-2000:]}")
    check("stopping all ranks now" not in out, f"{what}: the one stop was taken as a second one:\n{out[-2000:]}")
    check(os.path.exists(os.path.join(run_dir, "checkpoints", "last.pt")), f"{what}: no last.pt")
    s = summary(run_dir)
    check(s.get("status") == "interrupted" and s.get("signal") == signal_name,
          f"{what}: summary.json {s.get('status')} {s.get('signal')}")
    for rank in (0, 1):
        log = os.path.join(run_dir, "logs", f"rank{rank}.log")
        check(os.path.exists(log) and os.path.getsize(log) > 0, f"{what}: logs/rank{rank}.log is empty")
    return run_dir


tmp = tmpdir()
exp = write(os.path.join(tmp, "long.yaml"), CONFIG)
ref_root = os.path.join(tmp, "ref")
run("run", [exp, "--set", f"output.root={ref_root}", "--set", f"launch.master_port={free_port()}"])
ref = only_run_dir(ref_root, "long")
ref_steps, ref_weights = steps(ref), weights(ref, tmp, "ref")

# 1. timeout's delivery, exactly: the command, then its process group, at once. One stop; the
# resume then ends as the uninterrupted run.
root = os.path.join(tmp, "twice")
proc = start([exp, "--set", f"output.root={root}"])
check(wait_until(lambda: reached(root, 20)), "the run never reached step 20")
proc.send_signal(signal.SIGINT)
os.killpg(proc.pid, signal.SIGINT)
out = proc.communicate(timeout=120)[0].decode(errors="replace")
run_dir = ended_interrupted(proc.returncode, out, root, 130, "SIGINT", "SIGINT twice at once")
run("run", ["--resume", run_dir])
check(steps(run_dir) == ref_steps, "after a doubled SIGINT and the resume, per-step losses differ")
check(weights(run_dir, tmp, "twice") == ref_weights, "after a doubled SIGINT and the resume, weights differ")

# kill -INT -- -PGID (a shell script's `kill -INT 0`): the launcher's group only.
root = os.path.join(tmp, "group")
proc = start([exp, "--set", f"output.root={root}"])
check(wait_until(lambda: reached(root, 20)), "the run never reached step 20")
os.killpg(proc.pid, signal.SIGINT)
out = proc.communicate(timeout=120)[0].decode(errors="replace")
ended_interrupted(proc.returncode, out, root, 130, "SIGINT", "kill -INT -- -PGID")

# kill -TERM -- -PGID (a container stop); and a Ctrl-C followed 50 ms later by the group's
# SIGTERM (a person and a supervisor at once, while a step runs): one stop, the first one's.
for name, first_to_launcher, code, sig in (("group_term", None, 143, "SIGTERM"),
                                           ("int_then_term", signal.SIGINT, 130, "SIGINT")):
    root = os.path.join(tmp, name)
    proc = start([exp, "--set", f"output.root={root}"])
    check(wait_until(lambda: reached(root, 20)), f"{name}: the run never reached step 20")
    if first_to_launcher:
        proc.send_signal(first_to_launcher)
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=120)[0].decode(errors="replace")
    ended_interrupted(proc.returncode, out, root, code, sig, name)

# The real timeout, -s INT and plain (TERM), on a run long enough to be training by then
# (--preserve-status: timeout's own exit is 124 whatever runner's was).
for name, args, code, sig in (("timeout_int", ["--preserve-status", "-s", "INT"], 130, "SIGINT"),
                              ("timeout_term", ["--preserve-status"], 143, "SIGTERM")):
    root = os.path.join(tmp, name)
    p = subprocess.run(["timeout"] + args + ["8", RUNNER, "run", exp, "--set", f"output.root={root}",
                                             "--set", "train.epochs=100"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV, timeout=180)
    ended_interrupted(p.returncode, p.stdout.decode(errors="replace"), root, code, sig, f"timeout {' '.join(args)}")

# A second, deliberate Ctrl-C 3 s after the first still stops at once: rank 1 frozen, the
# ranks cannot finish their step, the first Ctrl-C waits; the second ends it.
root = os.path.join(tmp, "again")
proc = start([exp, "--set", f"output.root={root}", "--set", "train.epochs=100"])
check(wait_until(lambda: reached(root, 5)), "the run never reached step 5")
frozen = rank_pid(1)
if frozen:
    os.kill(frozen, signal.SIGSTOP)
proc.send_signal(signal.SIGINT)
time.sleep(3)
check(proc.poll() is None, "the first Ctrl-C alone ended a run whose rank cannot stop")
proc.send_signal(signal.SIGINT)
t0 = time.time()
out = proc.communicate(timeout=60)[0].decode(errors="replace")
check(proc.returncode == 130 and time.time() - t0 < 10 and "received SIGINT again: stopping all ranks now" in out,
      f"a second Ctrl-C 3 s later: exit {proc.returncode} after {time.time() - t0:.1f} s:\n{out[-1500:]}")

# 2. launch.max_restarts: rank 1 killed at three steps; each run ends as the uninterrupted one.
RESTARTS = ["--set", "launch.max_restarts=2", "--set", "train.checkpoint_every_steps=5"]
for at in (12, 77, 201):  # epoch 1, late in epoch 1, epoch 2 (128 steps an epoch)
    root = os.path.join(tmp, f"kill{at}")
    proc = start([exp, "--set", f"output.root={root}"] + RESTARTS)
    check(wait_until(lambda: reached(root, at)), f"the run never reached step {at}")
    pid = rank_pid(1)
    check(pid is not None, "rank 1 not found by its title")
    if pid:
        os.kill(pid, signal.SIGKILL)
    out = proc.communicate(timeout=180)[0].decode(errors="replace")
    run_dir = only_run_dir(root, "long")
    check(proc.returncode == 0, f"kill -9 of rank 1 at step {at}: exit {proc.returncode}:\n{out[-2000:]}")
    check("runner launcher: restart 1 of 2 in 0.2 s after rank 1" in out, f"no word of the restart:\n{out[-2000:]}")
    s = summary(run_dir)
    restarts = s.get("restarts", [])
    check(s.get("status") == "finished" and len(restarts) == 1 and
          "rank 1 was killed by signal SIGKILL" in restarts[0].get("cause", "") and
          restarts[0].get("resumed_at", {}).get("step", -1) % 5 == 0,
          f"summary.json after a restart at step {at}: {s.get('status')} {restarts}")
    record = json.load(open(os.path.join(run_dir, "run.json")))
    check(len(record.get("restarts", [])) == 1, f"run.json restarts: {record.get('restarts')}")
    check("restarted after rank 1 was killed" in open(os.path.join(run_dir, "report.html")).read(),
          "the report does not show the restart")
    check(steps(run_dir) == ref_steps, f"restart at step {at}: per-step losses differ from one go")
    check(weights(run_dir, tmp, f"kill{at}") == ref_weights, f"restart at step {at}: weights differ")

# Rank 1 frozen (it never answers a collective): rank 0's collective times out, the run restarts.
root = os.path.join(tmp, "frozen")
proc = start([exp, "--set", f"output.root={root}", "--set", "launch.timeout_s=5"] + RESTARTS)
check(wait_until(lambda: reached(root, 40)), "the run never reached step 40")
pid = rank_pid(1)
if pid:
    os.kill(pid, signal.SIGSTOP)
out = proc.communicate(timeout=240)[0].decode(errors="replace")
run_dir = only_run_dir(root, "long")
s = summary(run_dir)
check(proc.returncode == 0 and len(s.get("restarts", [])) == 1,
      f"a frozen rank: exit {proc.returncode}, restarts {s.get('restarts')}:\n{out[-2000:]}")
check(steps(run_dir) == ref_steps, "after the collective timeout and the restart, per-step losses differ")

# A rank that dies at every attempt: the run ends after its restarts, failed, naming the cause.
root = os.path.join(tmp, "always")
proc = start([exp, "--set", f"output.root={root}", "--set", "launch.max_restarts=1",
              "--set", "train.checkpoint_every_steps=5"])
killed = 0
deadline = time.time() + 180
while proc.poll() is None and time.time() < deadline:
    pid = rank_pid(1)
    if pid and glob.glob(os.path.join(root, "long", "*", "metrics.jsonl")):
        time.sleep(0.5)
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
        while rank_pid(1) == pid:
            time.sleep(0.05)
    time.sleep(0.05)
out = proc.communicate(timeout=60)[0].decode(errors="replace")
run_dir = only_run_dir(root, "long")
s = summary(run_dir)
check(proc.returncode == 1 and killed == 2, f"a rank that always dies: exit {proc.returncode} after {killed} kills")
check("rank 1 (pid" in out and "was killed by signal SIGKILL" in out, f"the cause is not named:\n{out[-1500:]}")
check(s.get("status") == "failed" and len(s.get("restarts", [])) == 1,
      f"summary.json of a run that always fails: {s.get('status')} {s.get('restarts')}")

# 3. torchrun --max-restarts 1 with a worker killed: the restarted group continues the same
# folder from its last.pt and finishes.
python = os.environ.get("RUNNER_PYTHON", "")
if python and subprocess.run([python, "-c", "import torch.distributed.run"]).returncode == 0:
    root = os.path.join(tmp, "elastic")
    proc = subprocess.Popen([python, "-m", "torch.distributed.run", "--no-python", "--max-restarts", "1",
                             "--nnodes", "1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                             "--master_port", str(free_port()), RUNNER, "run", exp,
                             "--set", f"output.root={root}", "--set", "train.checkpoint_every_steps=5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV)
    check(wait_until(lambda: reached(root, 60)), "torchrun: the run never reached step 60")
    pid = rank_pid(1)
    if pid:
        os.kill(pid, signal.SIGKILL)
    out = proc.communicate(timeout=240)[0].decode(errors="replace")
    dirs = os.listdir(os.path.join(root, "long")) if os.path.isdir(os.path.join(root, "long")) else []
    check(proc.returncode == 0 and len(dirs) == 1,
          f"torchrun --max-restarts 1: exit {proc.returncode}, run folders {dirs}:\n{out[-2000:]}")
    if len(dirs) == 1:
        run_dir = os.path.join(root, "long", dirs[0])
        check(summary(run_dir).get("status") == "finished", "torchrun restart: the run did not finish")
        check(steps(run_dir) == ref_steps, "torchrun restart: per-step losses differ from one go")
else:
    print("note: no RUNNER_PYTHON with torch: the torchrun restart is not checked")

# 4. launch.slurm_requeue, with scontrol stood in for: it records what it was asked and answers
# as SLURM does (the real cluster's case is tests/integration/slurm_requeue_test.sh).
fake_bin = os.path.join(tmp, "bin")
os.makedirs(fake_bin)
asked = os.path.join(tmp, "scontrol_args")
write(os.path.join(fake_bin, "scontrol"),
      f'#!/bin/sh\necho "$@" >> {asked}\n[ -z "$REFUSE" ] || {{ echo "scontrol: error: Requested operation is presently disabled" >&2; exit 1; }}\n')
os.chmod(os.path.join(fake_bin, "scontrol"), 0o755)
job_env = dict(ENV, PATH=fake_bin + os.pathsep + ENV["PATH"], SLURM_JOB_ID="4242")
root = os.path.join(tmp, "requeue")
args = [exp, "--set", f"output.root={root}", "--set", "launch.slurm_requeue=true"]
proc = subprocess.Popen([RUNNER, "run"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        env=job_env, start_new_session=True)
check(wait_until(lambda: reached(root, 20)), "slurm_requeue: the run never reached step 20")
proc.send_signal(signal.SIGUSR1)  # SLURM's B:USR1 to the batch shell that exec'd runner ...
os.killpg(proc.pid, signal.SIGUSR1)  # ... and srun's USR1 to every process of the step
out = proc.communicate(timeout=120)[0].decode(errors="replace")
run_dir = only_run_dir(root, "long")
s = summary(run_dir)
check(proc.returncode == 0 and s.get("status") == "requeued" and s.get("signal") == "SIGUSR1",
      f"slurm_requeue: exit {proc.returncode}, summary {s.get('status')} {s.get('signal')}:\n{out[-2000:]}")
check(os.path.exists(os.path.join(run_dir, "checkpoints", "last.pt")), "slurm_requeue: no last.pt")
check(os.path.exists(asked) and open(asked).read() == "requeue 4242\n",
      f"slurm_requeue: scontrol was asked {open(asked).read() if os.path.exists(asked) else 'nothing'!r}")
check(json.load(open(os.path.join(run_dir, "run.json"))).get("slurm_job_id") == "4242",
      "slurm_requeue: run.json does not record the job id")
# The requeued job runs the same command again.
requeued = subprocess.run([RUNNER, "run"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=dict(job_env, SLURM_RESTART_COUNT="1"))
out = requeued.stdout.decode(errors="replace")
check(requeued.returncode == 0 and "SLURM job 4242 was requeued (restart 1): continuing" in out,
      f"the requeued job: exit {requeued.returncode}:\n{out[-2000:]}")
check(os.listdir(os.path.join(root, "long")) == [os.path.basename(run_dir)],
      f"the requeued job made another folder: {os.listdir(os.path.join(root, 'long'))}")
check(summary(run_dir).get("status") == "finished", "the requeued job did not finish the run")
check(steps(run_dir) == ref_steps, "requeued and continued, the per-step losses differ from one go")
# SLURM's warning while the ranks still start (a short limit, a busy node): the signal waits for
# their handlers instead of ending them (exit 138, nothing saved, no requeue); the run stops at
# its first step and is requeued.
root = os.path.join(tmp, "early")
proc = subprocess.Popen([RUNNER, "run", exp, "--set", f"output.root={root}", "--set",
                         "launch.slurm_requeue=true"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, env=job_env)
children = f"/proc/{proc.pid}/task/{proc.pid}/children"
check(wait_until(lambda: os.path.exists(children) and open(children).read().strip() != ""),
      "early SIGUSR1: the launcher never started its ranks")
proc.send_signal(signal.SIGUSR1)  # the ranks have just been exec'd: loading, far from training
out = proc.communicate(timeout=120)[0].decode(errors="replace")
s = summary(only_run_dir(root, "long"))
check(proc.returncode == 0 and s.get("status") == "requeued" and
      os.path.exists(os.path.join(only_run_dir(root, "long"), "checkpoints", "last.pt")),
      f"SIGUSR1 while the ranks start: exit {proc.returncode}, summary {s.get('status')}:\n{out[-2000:]}")
# SLURM refuses the requeue: the run is an interrupted one, resumable by hand.
root = os.path.join(tmp, "refused")
proc = subprocess.Popen([RUNNER, "run", exp, "--set", f"output.root={root}", "--set", "launch.slurm_requeue=true"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(job_env, REFUSE="1"))
check(wait_until(lambda: reached(root, 5)), "refused requeue: the run never reached step 5")
proc.send_signal(signal.SIGUSR1)
out = proc.communicate(timeout=120)[0].decode(errors="replace")
s = summary(only_run_dir(root, "long"))
check(proc.returncode == 138 and s.get("status") == "interrupted" and
      "could not be requeued: scontrol requeue 4242 exited with code 1: scontrol: error: Requested operation is presently disabled" in out,
      f"refused requeue: exit {proc.returncode}, summary {s.get('status')}:\n{out[-2000:]}")
finish()
