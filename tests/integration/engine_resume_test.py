"""Resume equivalence (issue 6): 2 epochs in one go == stopped mid-epoch by train.max_steps, then
`runner run --resume RUN_DIR`: identical final weights (exported safetensors) and validation
metrics, on 1 and 2 CPU ranks in fp32. Dropout and random flips make the RNG states matter.
Usage: engine_resume_test.py RUNNER SOURCE_DIR [RANKS,...]"""
import json
import os
import sys

from engine_lib import (check, finish, metrics, only_run_dir, ranks_args, read_safetensors, run,
                        tmpdir, write)

CONFIG = """
name: resume
seed: 7
launch: {device: cpu, threads_per_process: 1}
precision: fp32
data:
  dataset: {name: synthetic, train_size: 384, val_size: 96, test_size: 0, height: 16, width: 16, noise: 0.6}
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


def final_state(run_dir, tmp, tag):
    """(tensors of last.pt, tensors of best.pt, the last epoch record's val metrics)."""
    out = {}
    for which in ("last", "best"):
        path = os.path.join(tmp, f"{tag}_{which}.safetensors")
        run("export", [os.path.join(run_dir, "checkpoints", which + ".pt"), "-o", path])
        out[which] = read_safetensors(path) if os.path.exists(path) else {}
    epochs = metrics(run_dir, "epoch")
    val = {k: v for k, v in epochs[-1].items() if k.startswith("val_")} if epochs else {}
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    return out["last"], out["best"], val, epochs, summary


def compare(ranks):
    tmp = tmpdir()
    exp = write(os.path.join(tmp, "resume.yaml"), CONFIG)
    # Steps per epoch: 384 / (16 x ranks) batches per rank, 2 per optimizer step.
    steps_per_epoch = 384 // (16 * ranks) // 2
    one = os.path.join(tmp, "one")
    run("run", [exp, "--set", f"output.root={one}"] + ranks_args(ranks))
    a = final_state(only_run_dir(one, "resume"), tmp, "a")

    two = os.path.join(tmp, "two")
    stop = steps_per_epoch + steps_per_epoch // 2 + 1  # mid second epoch, odd to be off any boundary
    run("run", [exp, "--set", f"output.root={two}", "--set", f"train.max_steps={stop}"] + ranks_args(ranks))
    run_dir = only_run_dir(two, "resume")
    _, out = run("run", [exp, "--set", f"output.root={two}", "--resume", run_dir,
                         "--set", "train.max_steps="] + ranks_args(ranks))
    check("resumed from" in out, f"{ranks} rank(s): the resumed run does not say it resumed:\n{out[-2000:]}")
    b = final_state(run_dir, tmp, "b")

    what = f"{ranks} rank(s)"
    check(len(a[0]) > 0 and a[0].keys() == b[0].keys(), f"{what}: exported tensors differ in names")
    differing = [k for k in a[0] if k in b[0] and a[0][k] != b[0][k]]
    check(not differing, f"{what}: last.pt weights differ after resume: {differing[:5]}")
    differing = [k for k in a[1] if k in b[1] and a[1][k] != b[1][k]]
    check(not differing and a[1].keys() == b[1].keys(), f"{what}: best.pt weights differ after resume: {differing[:5]}")
    check(a[2] and a[2] == b[2], f"{what}: final validation metrics differ: {a[2]} vs {b[2]}")
    check(a[4].get("optimizer_steps") == b[4].get("optimizer_steps") == 2 * steps_per_epoch,
          f"{what}: optimizer steps {a[4].get('optimizer_steps')} vs {b[4].get('optimizer_steps')}, "
          f"expected {2 * steps_per_epoch}")
    check(a[4].get("best_metrics") == b[4].get("best_metrics"),
          f"{what}: summary best_metrics differ: {a[4].get('best_metrics')} vs {b[4].get('best_metrics')}")
    # The step records of the resumed run continue the stopped one: same steps, same losses.
    sa = [(r["step"], r["loss"], r["lr"]) for r in metrics(only_run_dir(one, "resume"), "step")]
    sb = [(r["step"], r["loss"], r["lr"]) for r in metrics(run_dir, "step")]
    check(sa == sb, f"{what}: per-step loss/lr records differ:\n{sa}\n{sb}")


for n in (sys.argv[3].split(",") if len(sys.argv) > 3 else ["2", "1"]):
    compare(int(n))
finish()
