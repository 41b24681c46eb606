"""NaN stop (issue 6): a run whose loss turns NaN/inf stops on every rank with exit 1 and a clear
one-line error, within a timeout, and leaves no garbage checkpoint: none when it diverges in its
first epoch, the previous last.pt byte for byte when a resumed run diverges.
Usage: engine_nan_stop_test.py RUNNER SOURCE_DIR"""
import glob
import hashlib
import os

from engine_lib import check, finish, only_run_dir, ranks_args, run, tmpdir, write

CONFIG = """
name: nan
seed: 3
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 512, val_size: 64, test_size: 0, height: 12, width: 12}
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: sgd, lr: 0.05}
loss: {name: cross_entropy}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: 16, log_every_steps: 1, max_nonfinite_steps: 2}
predict: {enabled: false}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "nan.yaml"), CONFIG)


def expect_nan_stop(out, run_dir, what):
    lines = [line for line in out.splitlines() if "NaN" in line and "error" in line.lower()]
    check(len(lines) >= 1, f"{what}: no one-line error mentioning NaN:\n{out[-2000:]}")
    check("Traceback" not in out and "terminate called" not in out, f"{what}: crashed:\n{out[-2000:]}")
    logs = []
    for rank in (0, 1):
        log = os.path.join(run_dir, "logs", f"rank{rank}.log")
        logs.append(open(log).read() if os.path.exists(log) else "")
    check("NaN" in logs[0], f"{what}: logs/rank0.log does not record the NaN stop")
    # Rank 1 stops by itself too (the launcher may stop it first after rank 0's exit, so its
    # console line or its log will do).
    check("NaN" in logs[1] or any(line.startswith("[rank 1]") for line in lines),
          f"{what}: rank 1 did not report the NaN stop:\n{out[-2000:]}")
    check(not glob.glob(os.path.join(run_dir, "checkpoints", "*.tmp")), f"{what}: a .tmp checkpoint was left")


# 1. Diverges in its first epoch: exit 1 on both ranks, no checkpoint at all.
root = os.path.join(tmp, "a")
code, out = run("run", [exp, "--set", f"output.root={root}", "--set", "optimizer.lr=1.0e30"] + ranks_args(2),
                timeout=90, expect=1)
run_dir = only_run_dir(root, "nan")
expect_nan_stop(out, run_dir, "fresh run")
check(not glob.glob(os.path.join(run_dir, "checkpoints", "*.pt")), "the diverged run wrote a checkpoint")

# 2. A healthy epoch, then a resumed second epoch that diverges: last.pt stays the first epoch's.
# A resume may not change the optimizer, so the run is planned to diverge from the start: its
# step schedule multiplies the lr by 1e30 once the first epoch is over.
root = os.path.join(tmp, "b")
run("run", [exp, "--set", f"output.root={root}", "--set", "scheduler.name=step",
            "--set", "scheduler.gamma=1.0e30"] + ranks_args(2), timeout=90)
run_dir = only_run_dir(root, "nan")
last = os.path.join(run_dir, "checkpoints", "last.pt")
before = hashlib.sha256(open(last, "rb").read()).hexdigest() if os.path.exists(last) else None
code, out = run("run", ["--resume", run_dir, "--set", "train.epochs=2"] + ranks_args(2), timeout=90,
                expect=1)
expect_nan_stop(out, run_dir, "resumed run")
after = hashlib.sha256(open(last, "rb").read()).hexdigest() if os.path.exists(last) else None
check(before is not None and before == after, "the diverged resumed run changed checkpoints/last.pt")
# 3. A loss that is NaN for fewer steps than the patience: the run finishes, and its report and
# curves render (the NaN values arrive as null in the JSON files they read).
root = os.path.join(tmp, "c")
code, out = run("run", [exp, "--set", f"output.root={root}", "--set", "optimizer.lr=1.0e30",
                        "--set", "train.max_nonfinite_steps=1000"] + ranks_args(2), timeout=90)
run_dir = only_run_dir(root, "nan")
check("could not" not in out, f"a NaN run's report or curves failed:\n{out[-1500:]}")
check(os.path.exists(os.path.join(run_dir, "report.html")), "a NaN run has its report.html")
finish()
