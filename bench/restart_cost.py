#!/usr/bin/env python3
"""What a restart costs (launch.max_restarts): the quickstart (2 CPU ranks, small_cnn on
Fashion-MNIST) with train.checkpoint_every_steps; rank 1 is killed (kill -9) at a step, and the
seconds from its death to the next training step of the restarted ranks are measured (the next
new step record in metrics.jsonl: the launcher's stop of rank 0, the backoff, the new ranks'
start, data, model, rendezvous, the checkpoint's load, and one step). Not part of the test suite.

    bench/restart_cost.py [RUNNER] [REPS]     (default build/runner/runner, 3)
"""
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

RUNNER = sys.argv[1] if len(sys.argv) > 1 else "build/runner/runner"
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rank_pid(rank):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].startswith(f"runner-engine rank {rank}/2 ".encode()):
                    return int(pid)
        except OSError:
            continue
    return None


def steps(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("kind") == "step":
                    out.append(r["step"])
    except OSError:
        pass
    return out


def once(tmp, rep):
    root = os.path.join(tmp, f"r{rep}")
    proc = subprocess.Popen(
        [RUNNER, "run", os.path.join(SOURCE, "experiments", "quickstart.yaml"), "--set", f"output.root={root}",
         "--set", "launch.max_restarts=1", "--set", "launch.restart_backoff_s=0",
         "--set", "train.checkpoint_every_steps=20", "--set", "train.log_every_steps=1",
         "--set", "data.limit.train=12800"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = None
    while proc.poll() is None:
        files = glob.glob(os.path.join(root, "quickstart", "*", "metrics.jsonl"))
        if files and max(steps(files[0]) or [0]) >= 45:
            jsonl = files[0]
            break
        time.sleep(0.01)
    pid = rank_pid(1)
    died = time.time()
    os.kill(pid, signal.SIGKILL)
    # The restart drops the records after its checkpoint (step 40) and writes them again: the
    # next training step is the first record past the checkpoint once the file was rewritten
    # (rank 0 may still record a step or two before it learns of the death).
    # The rewrite is a rename into place: a new inode.
    inode = os.stat(jsonl).st_ino
    rewritten = False
    while proc.poll() is None:
        try:
            rewritten = rewritten or os.stat(jsonl).st_ino != inode
        except OSError:
            pass
        if rewritten:
            s = steps(jsonl)
            if s and max(s) > 40:
                return time.time() - died
        time.sleep(0.002)
    print(f"rep {rep}: the run ended (exit {proc.returncode}) before a restarted step was seen")
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="runner_restart_")
    costs = [c for c in (once(tmp, r) for r in range(REPS)) if c is not None]
    print(f"restart cost on the quickstart (2 CPU ranks): {', '.join(f'{c:.2f}' for c in costs)} s; "
          f"median {statistics.median(costs):.2f} s from the death of rank 1 to the next step")


if __name__ == "__main__":
    main()
