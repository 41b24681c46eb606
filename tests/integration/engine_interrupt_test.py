"""Interrupts keep the work (issue 25): SIGINT to a 2-rank run mid-epoch stops every rank after
its step with exit 130, leaves non-empty rank logs, a mid-epoch checkpoints/last.pt, summary.json
`status: interrupted` and a report saying so; `runner run --resume RUN_DIR` then ends exactly as
an uninterrupted run (per-step losses and final weights bit for bit) and summary.json's seconds
cover both segments. SIGTERM to a single process: 143. train.checkpoint_every_steps: a kill -9
loses at most that many steps, and the run resumes from there to the same end.
Usage: engine_interrupt_test.py RUNNER SOURCE_DIR"""
import glob
import json
import os
import signal
import subprocess
import time

from engine_lib import (RUNNER, check, finish, metrics, only_run_dir, ranks_args, read_safetensors,
                        run, tmpdir, write)

# 96 optimizer steps of a few ms each over 2 epochs: long enough to be interrupted mid-epoch.
CONFIG = """
name: intr
seed: 7
launch: {device: cpu, threads_per_process: 1}
precision: fp32
data:
  dataset: {name: synthetic, train_size: 3072, val_size: 96, test_size: 0, height: 32, width: 32, noise: 0.6}
  train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10, drop_rate: 0.2}
optimizer: {name: adamw, lr: 3.0e-3}
scheduler: {name: cosine, warmup_steps: 3}
loss: {name: cross_entropy, label_smoothing: 0.1}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 2, batch_size: 16, grad_accum_steps: 2, log_every_steps: 1, deterministic: true,
        best: {metric: accuracy}}
predict: {enabled: false}
"""


def step_records(run_dir):
    return [(r["step"], r["loss"], r["lr"]) for r in metrics(run_dir, "step")]


def last_weights(run_dir, tmp, tag):
    path = os.path.join(tmp, tag + ".safetensors")
    run("export", [os.path.join(run_dir, "checkpoints", "last.pt"), "-o", path])
    return read_safetensors(path) if os.path.exists(path) else {}


def parent_of(pid):
    """The parent's pid of process `pid` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def rank_titles(launcher):
    """What ps shows for each running rank under `launcher` (a pid): {command line: process
    name}. Only its descendants: another test's ranks may be running beside this one."""
    titles = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        ancestor = int(pid)
        while ancestor > 1 and ancestor != launcher:
            ancestor = parent_of(ancestor)
        if ancestor != launcher:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")[0].decode(errors="replace")
            with open(f"/proc/{pid}/comm") as f:
                titles[args] = f.read().strip()
        except OSError:
            continue
    return {a: c for a, c in titles.items() if a.startswith("runner-engine rank") and a.endswith(" intr")}


def start_and_signal(args, root, at_step, signo, titles=None):
    """Starts `runner run ARGS`, sends `signo` once step `at_step` is in metrics.jsonl; returns
    (exit code, output, run folder). `titles` receives the ranks' process titles then."""
    proc = subprocess.Popen([RUNNER, "run"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    sent = False
    deadline = time.time() + 90
    while proc.poll() is None and time.time() < deadline:
        files = glob.glob(os.path.join(root, "intr", "*", "metrics.jsonl"))
        if files and f'"step":{at_step}}}' in open(files[0]).read():
            if titles is not None:
                titles.update(rank_titles(proc.pid))
            proc.send_signal(signo)
            sent = True
            break
        time.sleep(0.005)
    out = proc.communicate(timeout=120)[0].decode(errors="replace")
    check(sent, f"the run ended before step {at_step} to signal it at:\n{out[-2000:]}")
    return proc.returncode, out, only_run_dir(root, "intr")


tmp = tmpdir()
exp = write(os.path.join(tmp, "intr.yaml"), CONFIG)

# The reference: 2 ranks, uninterrupted.
ref_root = os.path.join(tmp, "ref")
run("run", [exp, "--set", f"output.root={ref_root}"] + ranks_args(2))
ref = only_run_dir(ref_root, "intr")

# 1. SIGINT (Ctrl-C) to runner's launcher mid-epoch 1.
root = os.path.join(tmp, "int")
titles = {}
code, out, run_dir = start_and_signal([exp, "--set", f"output.root={root}"] + ranks_args(2), root, 10,
                                      signal.SIGINT, titles)
# Each rank's process title names its rank and the experiment (ps -o args; ps -o comm, top).
check(titles == {"runner-engine rank 0/2 intr": "runner-rank0", "runner-engine rank 1/2 intr": "runner-rank1"},
      f"ps shows each rank: {titles}")
check(code == 130, f"exit code {code} after SIGINT, expected 130:\n{out[-2000:]}")
check("received SIGINT: every rank stops after its current step" in out, f"no word of the interrupt:\n{out[-2000:]}")
for rank in (0, 1):
    log = os.path.join(run_dir, "logs", f"rank{rank}.log")
    check(os.path.exists(log) and os.path.getsize(log) > 0, f"logs/rank{rank}.log is empty after SIGINT")
check(os.path.exists(os.path.join(run_dir, "checkpoints", "last.pt")), "no checkpoints/last.pt after SIGINT")
summary = json.load(open(os.path.join(run_dir, "summary.json"))) if os.path.exists(
    os.path.join(run_dir, "summary.json")) else {}
check(summary.get("status") == "interrupted" and summary.get("signal") == "SIGINT",
      f"summary.json after SIGINT: {summary}")
check("epoch 1, batch" in summary.get("stopped_at", ""), f"stopped_at should be mid epoch 1: {summary}")
report = open(os.path.join(run_dir, "report.html")).read() if os.path.exists(
    os.path.join(run_dir, "report.html")) else ""
check("interrupted by SIGINT" in report and "runner run --resume" in report,
      "report.html does not say the run was interrupted and how to continue")
first_seconds = summary.get("seconds", 0)

code, out = run("run", ["--resume", run_dir])
check("resumed from" in out and "batch" in out, f"the resume does not say where it resumed:\n{out[-2000:]}")
check(step_records(run_dir) == step_records(ref),
      "per-step loss/lr after SIGINT + resume differ from the uninterrupted run")
a, b = last_weights(ref, tmp, "ref"), last_weights(run_dir, tmp, "int")
check(a and a == b, "final weights after SIGINT + resume differ from the uninterrupted run")
summary = json.load(open(os.path.join(run_dir, "summary.json")))
check(summary.get("status") == "finished", f"summary.json after the resume: {summary.get('status')}")
check(summary.get("seconds", 0) > first_seconds > 0,
      f"summary seconds {summary.get('seconds')} should cover the first segment's {first_seconds} too")

# 2. SIGTERM (a scheduler's stop) to a single process: 143, resumable.
root = os.path.join(tmp, "term")
code, out, run_dir = start_and_signal([exp, "--set", f"output.root={root}"], root, 5, signal.SIGTERM)
check(code == 143, f"exit code {code} after SIGTERM, expected 143:\n{out[-2000:]}")
summary = json.load(open(os.path.join(run_dir, "summary.json"))) if os.path.exists(
    os.path.join(run_dir, "summary.json")) else {}
check(summary.get("status") == "interrupted" and summary.get("signal") == "SIGTERM",
      f"summary.json after SIGTERM: {summary}")

# 3. train.checkpoint_every_steps: kill -9 (nothing runs after it) loses at most that many steps.
one_root = os.path.join(tmp, "one")
run("run", [exp, "--set", f"output.root={one_root}"])
one = only_run_dir(one_root, "intr")
root = os.path.join(tmp, "kill")
code, out, run_dir = start_and_signal([exp, "--set", f"output.root={root}", "--set",
                                       "train.checkpoint_every_steps=5"], root, 17, signal.SIGKILL)
done = [r["step"] for r in metrics(run_dir, "step")]
code, out = run("run", ["--resume", run_dir])
resumed_at = [int(line.rsplit(" ", 1)[1]) for line in out.splitlines() if "resumed from" in line]
check(resumed_at and resumed_at[0] % 5 == 0 and max(done) - resumed_at[0] < 5 + 2,
      f"after kill -9 at step {max(done) if done else '?'} the resume started at {resumed_at}: "
      "checkpoint_every_steps=5 should lose fewer than 5 steps")
check(step_records(run_dir) == step_records(one),
      "per-step loss/lr after kill -9 + resume differ from the uninterrupted run")

# train.checkpoint_every_minutes: saves within the epoch by rank 0's clock (logged at debug).
root = os.path.join(tmp, "minutes")
run("run", [exp, "--set", f"output.root={root}", "--set", "train.checkpoint_every_minutes=0.002",
            "--set", "log_level=debug", "--set", "train.epochs=1"])
log = open(os.path.join(only_run_dir(root, "intr"), "logs", "rank0.log")).read()
check(log.count("checkpoints/last.pt at optimizer step") >= 2,
      "checkpoint_every_minutes=0.002 (0.12 s) saved no mid-epoch checkpoints")
finish()
