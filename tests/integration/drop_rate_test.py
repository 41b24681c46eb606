#!/usr/bin/env python3
"""`model.drop_rate` as a user meets it (issue 52, item 6): classifier dropout as timm's.

- small_cnn, resnet10t and convnext_atto with drop_rate 1: the classifier sees zeros in
  training, so no weight but the classifier's bias gets a gradient: two runs at different lrs
  export the same bits for every other parameter, while at drop_rate 0 they differ;
- convnext_atto (zero-initialised classifier bias, as timm's) with drop_rate 1: the first step's
  loss is exactly ln(10);
- small_cnn's drop_path_rate (formerly its dropout) is refused at validate, pointing to
  drop_rate; timm/<name> with model.drop_rate beside model.kwargs.drop_rate is refused.
Usage: drop_rate_test.py RUNNER SOURCE_DIR
"""
import math
import os

from engine_lib import check, finish, metrics, read_safetensors, run, tmpdir, write


def experiment(path, backbone, drop_rate, lr):
    return write(path, f"""name: drop
seed: 5
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: synthetic, height: 32, width: 32, train_size: 64, val_size: 16, test_size: 0}}
  num_workers: 0
model: {{backbone: {backbone}, in_chans: 1, num_classes: 10, drop_rate: {drop_rate}}}
optimizer: {{name: adam, lr: {lr}}}
scheduler: {{name: none}}
train: {{epochs: 1, batch_size: 16, log_every_steps: 1}}
predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def trained(tmp, backbone, drop_rate, lr):
    name = f"{backbone}_{drop_rate}_{lr}"
    run_dir = os.path.join(tmp, name)
    yaml = experiment(os.path.join(tmp, name + ".yaml"), backbone, drop_rate, lr)
    code, text = run("run", [yaml, "--set", f"output.run_dir={run_dir}"], timeout=300)
    out = os.path.join(tmp, name + ".safetensors")
    run("export", [run_dir, "--output", out])
    weights = read_safetensors(out) if os.path.exists(out) else {}
    return weights, [r["loss"] for r in metrics(run_dir, "step")] if code == 0 else []


def main():
    tmp = tmpdir()
    for backbone, bias in (("small_cnn", "fc.bias"), ("resnet10t", "fc.bias"),
                           ("convnext_atto", "head.fc.bias")):
        a, losses = trained(tmp, backbone, 1, 0.001)
        b, _ = trained(tmp, backbone, 1, 0.01)
        c, _ = trained(tmp, backbone, 0, 0.01)
        # Parameters (buffers such as BatchNorm's running statistics move in any training forward).
        params = [n for n in a if not n.endswith(("running_mean", "running_var",
                                                   "num_batches_tracked"))]
        kept = [n for n in params if n != bias and a[n] == b.get(n)]
        check(len(params) > 3 and len(kept) == len(params) - 1 and a[bias] != b.get(bias),
              f"{backbone} drop_rate 1: every parameter but {bias} keeps its initial bits "
              f"({len(kept)} of {len(params) - 1})")
        moved = [n for n in params if n != bias and b.get(n) != c.get(n)]
        check(len(moved) > 0, f"{backbone} drop_rate 0: the weights train ({len(moved)} moved)")
        if backbone == "convnext_atto":
            check(losses and abs(losses[0] - math.log(10)) < 1e-6,
                  f"convnext_atto drop_rate 1: the first loss is ln(10) (zero bias): {losses[:1]}")

    yaml = experiment(os.path.join(tmp, "bad.yaml"), "small_cnn", 0, 0.001)
    code, text = run("validate", [yaml, "--set", "model.drop_path_rate=0.1"], expect=2)
    check("model.drop_path_rate" in text and "set model.drop_rate" in text,
          f"small_cnn's drop_path_rate is refused, pointing to drop_rate: {text}")
    code, text = run("validate", [yaml, "--set", "model.backbone=timm/resnet10t", "--set",
                                  "model.drop_rate=0.2", "--set",
                                  "model.kwargs={drop_rate: 0.3}"], expect=2)
    check("model.drop_rate and model.kwargs.drop_rate are both set" in text,
          f"timm/ drop_rate beside kwargs.drop_rate: {text}")
    finish()


if __name__ == "__main__":
    main()
