"""Scheduler stepping under gradient accumulation and 2 ranks (issue 6): once per optimizer step,
not per rank or per micro-batch. With grad_accum_steps=4, 18 batches per rank and epoch make 5
optimizer steps (the last one of 2 micro-batches); a step schedule halving the lr every optimizer
step must log lr = lr0 * 0.5^k at step k.
Usage: engine_schedule_test.py RUNNER SOURCE_DIR"""
import json
import os

from engine_lib import check, finish, metrics, only_run_dir, ranks_args, run, tmpdir, write

CONFIG = """
name: sched
seed: 5
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 288, val_size: 32, test_size: 0, height: 12, width: 12}
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: sgd, lr: 0.1}
scheduler: {name: step, unit: step, step_size: 1, gamma: 0.5}
loss: {name: cross_entropy}
metrics: [{name: accuracy}]
train: {epochs: 2, batch_size: 8, grad_accum_steps: 4, log_every_steps: 1}
predict: {enabled: false}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "sched.yaml"), CONFIG)
root = os.path.join(tmp, "runs")
run("run", [exp, "--set", f"output.root={root}"] + ranks_args(2), timeout=90)
run_dir = only_run_dir(root, "sched")
steps = metrics(run_dir, "step")
check([r["step"] for r in steps] == list(range(1, 11)),
      f"expected step records 1..10 (5 optimizer steps per epoch), got {[r['step'] for r in steps]}")
for r in steps:
    want = 0.1 * 0.5 ** r["step"]
    if abs(r["lr"] - want) > 1e-9 * want:
        check(False, f"step {r['step']}: lr {r['lr']}, expected 0.1 * 0.5^{r['step']} = {want}")
        break
epochs = metrics(run_dir, "epoch")
check([r["step"] for r in epochs] == [5, 10], f"epoch records at steps {[r['step'] for r in epochs]}, expected [5, 10]")
with open(os.path.join(run_dir, "summary.json")) as f:
    summary = json.load(f)
check(summary.get("optimizer_steps") == 10 and summary.get("global_batch") == 64, f"summary.json: {summary}")

# Early stopping: no improvement can beat min_delta 1.0 on accuracy, so patience 2 ends the run
# after epoch 3 of 8, and the best weights stay epoch 1's.
root = os.path.join(tmp, "early")
code, out = run("run", [exp, "--set", f"output.root={root}", "--set", "train.epochs=8", "--set",
                        "train.early_stopping={patience: 2, min_delta: 1.0}"] + ranks_args(1), timeout=90)
run_dir = only_run_dir(root, "sched")
check([r["epoch"] for r in metrics(run_dir, "epoch")] == [1, 2, 3],
      f"early stopping: epochs {[r['epoch'] for r in metrics(run_dir, 'epoch')]}, expected [1, 2, 3]")
check("early stopping" in out and "epoch 1)" in out, f"early stopping not reported:\n{out[-1500:]}")
finish()
