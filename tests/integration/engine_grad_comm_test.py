"""train.grad_comm (issue 26): gradients all-reduced in bf16 or fp16 instead of fp32 on 2 ranks.
The first step's loss is the same (nothing has been communicated yet), the weights after a few
steps differ from the fp32 run's (the key acts) but only by half-precision rounding, and the run
says so in env-independent terms: summary.json and config.yaml keep the key. An unknown value is
exit 2 at validation. Usage: engine_grad_comm_test.py RUNNER SOURCE_DIR"""
import os

from engine_lib import (check, finish, metrics, only_run_dir, ranks_args, read_safetensors, run,
                        tmpdir, write)

CONFIG = """
name: comm
seed: 3
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 512, val_size: 64, test_size: 0, height: 16, width: 16, noise: 0.5}
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: sgd, lr: 0.05}
scheduler: {name: none}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: 16, max_steps: 8, log_every_steps: 1, deterministic: true}
predict: {enabled: false}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "comm.yaml"), CONFIG)
weights, losses = {}, {}
for comm in ("fp32", "bf16", "fp16"):
    root = os.path.join(tmp, comm)
    run("run", [exp, "--set", f"output.root={root}", "--set", f"train.grad_comm={comm}"] + ranks_args(2))
    run_dir = only_run_dir(root, "comm")
    out = os.path.join(tmp, comm + ".safetensors")
    run("export", [os.path.join(run_dir, "checkpoints", "last.pt"), "-o", out])
    weights[comm] = read_safetensors(out) if os.path.exists(out) else {}
    losses[comm] = [r["loss"] for r in metrics(run_dir, "step")]
    check(f"grad_comm: {comm}" in open(os.path.join(run_dir, "config.yaml")).read(),
          f"config.yaml does not record train.grad_comm: {comm}")

check(len(losses["fp32"]) == 8 and all(len(v) == 8 for v in losses.values()), f"step records: {losses}")
check(losses["fp32"][0] == losses["bf16"][0] == losses["fp16"][0],
      f"the first step's loss must not depend on how gradients travel: {[v[:1] for v in losses.values()]}")


def as_floats(blob):
    import struct
    return struct.unpack(f"<{len(blob) // 4}f", blob)


for comm in ("bf16", "fp16"):
    a, b = weights["fp32"], weights[comm]
    check(a and a.keys() == b.keys(), f"{comm}: exported tensors differ in names")
    changed = [k for k in a if a[k][2] != b[k][2]]
    check(changed, f"train.grad_comm={comm} left every weight identical to fp32's: the key does nothing")
    worst = 0.0
    for k in a:
        if a[k][0] != "F32":
            continue
        x, y = as_floats(a[k][2]), as_floats(b[k][2])
        worst = max(worst, max((abs(p - q) for p, q in zip(x, y)), default=0.0))
    # 8 SGD steps at lr 0.05: half-precision rounding of the gradients moves weights by far less
    # than a step does.
    check(0 < worst < 5e-3, f"{comm}: largest weight difference from fp32 {worst}")

code, out = run("validate", [exp, "--schema-only", "--set", "train.grad_comm=int8"], expect=2)
check("train.grad_comm" in out, f"an unknown grad_comm is not named:\n{out}")
finish()
