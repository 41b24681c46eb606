"""train.bn_sync: sync end to end (small_cnn, synthetic data): 2 CPU ranks x batch 8 with
SyncBatchNorm train like 1 rank x batch 16 (the same global batches, statistics over all of
each), so the final weights and BatchNorm buffers agree; the run says how many layers it synced.
Usage: engine_bn_sync_test.py RUNNER SOURCE_DIR"""
import os
import struct

from engine_lib import check, finish, only_run_dir, ranks_args, read_safetensors, run, tmpdir, write

CONFIG = """
name: bnsync
seed: 3
launch: {device: cpu, threads_per_process: 1}
precision: fp32
data:
  dataset: {name: synthetic, train_size: 96, val_size: 32, test_size: 0, height: 12, width: 12, noise: 0.6}
  train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: sgd, lr: 0.05}
scheduler: {name: none}
loss: {name: cross_entropy}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 1, batch_size: 16, log_every_steps: 1, deterministic: true, bn_sync: sync}
predict: {enabled: false}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "bnsync.yaml"), CONFIG)


def final_weights(ranks, batch):
    root = os.path.join(tmp, f"r{ranks}")
    _, out = run("run", [exp, "--set", f"output.root={root}", "--set", f"train.batch_size={batch}"] +
                 ranks_args(ranks), timeout=120)
    check("SyncBatchNorm: 5 BatchNorm layer(s)" in out,
          f"{ranks} rank(s): the run does not say it synced small_cnn's 5 BatchNorm layers:\n{out[-2000:]}")
    path = os.path.join(tmp, f"r{ranks}.safetensors")
    run("export", [os.path.join(only_run_dir(root, "bnsync"), "checkpoints", "last.pt"), "-o", path])
    return read_safetensors(path) if os.path.exists(path) else {}


def floats(entry):
    dtype, _, raw = entry
    if dtype != "F32":
        return []
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


one = final_weights(1, 16)
two = final_weights(2, 8)
check(one and one.keys() == two.keys(), "1 and 2 ranks exported different tensor names")
worst, where = 0.0, ""
for name in one:
    if name not in two:
        continue
    a, b = floats(one[name]), floats(two[name])
    scale = max([1.0] + [abs(v) for v in a])
    diff = max([abs(x - y) for x, y in zip(a, b)] + [0.0]) / scale
    if diff > worst:
        worst, where = diff, name
check(any(n.endswith("running_var") for n in one), "no BatchNorm running_var in the checkpoint")
check(worst < 1e-4, f"2 ranks with SyncBatchNorm differ from 1 rank on the same global batches: "
                    f"{worst} (relative) in {where}")
finish()
