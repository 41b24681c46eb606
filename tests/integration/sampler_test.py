#!/usr/bin/env python3
"""`data.sampler`, `data.sampler_weights` and `data.samples_per_epoch` as a user meets them
(issue 52, item 4), on an image folder of 300 / 60 / 20 images.

- show-batch's first training batch of 60: with data.sampler shuffle the rare class is rare
  (about 3 of 60), with balanced every class has between 12 and 28, and the JSON says which
  sampler drew it; weighted [0, 0, 1] draws the rare class only, with its 20 images repeated;
- the dry run names the sampler, the draws per epoch and each class's share;
- a 2-rank run with balanced and samples_per_epoch 120 at 20 per process takes 3 steps an
  epoch (not the split's 9), and its loss is finite;
- refused in one line at the key's file:line by validate, --dry-run and run (no rank, no
  folder): weighted without weights, weights
  with another sampler, weights of the wrong length, samples_per_epoch below one batch per
  process.
Usage: sampler_test.py RUNNER SOURCE_DIR   (/usr/bin/python3 with Debian's python3-opencv)
"""
import json
import math
import os

import cv2
import numpy as np

from engine_lib import check, finish, metrics, ranks_args, run, tmpdir, write

CLASSES = (("common", 300), ("middling", 60), ("rare", 20))


def make_images(root):
    rng = np.random.default_rng(0)
    for c, (name, count) in enumerate(CLASSES):
        os.makedirs(os.path.join(root, name))
        for i in range(count):
            image = (rng.random((12, 12)) * 60 + 60 * c).astype(np.uint8)
            cv2.imwrite(os.path.join(root, name, f"{i:03d}.png"), image)


def experiment(path, images, data_extra=""):
    return write(path, f"""name: sampler
seed: 4
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: image_folder, root: {images}, mode: grayscale}}
  train_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  eval_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  num_workers: 1
{data_extra}model: {{backbone: small_cnn, in_chans: 1, num_classes: 3}}
optimizer: {{name: adam, lr: 0.003}}
scheduler: {{name: none}}
train: {{epochs: 2, batch_size: 60, log_every_steps: 1}}
predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def shown_labels(tmp, yaml, name):
    png = os.path.join(tmp, name + ".png")
    run("show-batch", [yaml, "--count", "60", "-o", png])
    described = png + ".json"
    if not os.path.exists(described):
        check(False, f"show-batch wrote no {described}")
        return {}, []
    batch = json.load(open(described))
    return batch, [s["label"] for s in batch["samples"]]


def main():
    tmp = tmpdir()
    images = os.path.join(tmp, "images")
    make_images(images)

    # The first training batch, as show-batch shows it.
    batch, labels = shown_labels(tmp, experiment(os.path.join(tmp, "plain.yaml"), images), "plain")
    check(batch.get("sampler") == "shuffle" and len(labels) == 60 and labels.count(2) < 9,
          f"shuffle: the rare class stays rare in 60 ({batch.get('sampler')}, "
          f"{[labels.count(c) for c in range(3)]})")
    balanced = experiment(os.path.join(tmp, "balanced.yaml"), images, "  sampler: balanced\n")
    batch, labels = shown_labels(tmp, balanced, "balanced")
    counts = [labels.count(c) for c in range(3)]
    check(batch.get("sampler") == "balanced" and all(12 <= n <= 28 for n in counts),
          f"balanced: each class 12..28 of the first 60: {counts}")
    weighted = experiment(os.path.join(tmp, "weighted.yaml"), images,
                          "  sampler: weighted\n  sampler_weights: [0, 0, 1]\n")
    batch, labels = shown_labels(tmp, weighted, "weighted")
    indices = [s["index"] for s in batch.get("samples", [])]
    check(labels == [2] * 60 and len(set(indices)) <= 20,
          f"weighted [0, 0, 1]: 60 draws of the 20 rare images: {labels} {sorted(set(indices))}")

    # The dry run says how an epoch draws.
    code, text = run("run", [balanced, "--dry-run", "--set", "data.samples_per_epoch=120"])
    check("sampler         balanced, 120 draws per epoch with replacement; class shares "
          "common 33.3%, middling 33.3%, rare 33.3%" in text, f"the dry run's sampler: {text}")
    code, text = run("run", [weighted, "--dry-run"])
    check("class shares common 0%, middling 0%, rare 100%" in text, f"weighted dry run: {text}")

    # Two ranks, 120 draws an epoch at 20 per process: 3 steps per epoch.
    run_dir = os.path.join(tmp, "two_ranks")
    run("run", [balanced, "--set", f"output.run_dir={run_dir}", "--set",
                "data.samples_per_epoch=120", "--set", "train.batch_size=20"] + ranks_args(2),
        timeout=300)
    steps = metrics(run_dir, "step") if os.path.exists(run_dir) else []
    check(len(steps) == 6 and all(math.isfinite(s["loss"]) for s in steps),
          f"2 epochs x 120 draws / (20 x 2 ranks): 6 steps, finite losses: {steps}")

    # Refused by validate at the key, in one line.
    cases = (
        ("  sampler: weighted\n", "sampler", "data.sampler: weighted draws each class by its "
         "data.sampler_weights entry, which is not set"),
        ("  sampler_weights: [1, 2, 3]\n", "sampler_weights",
         "is read by data.sampler: weighted only"),
        ("  sampler: weighted\n  sampler_weights: [1, 2]\n", "sampler_weights",
         "data.sampler_weights: 2 weights for 3 classes"),
        ("  samples_per_epoch: 50\n", "batch_size",
         "is larger than the training epoch (50 samples (data.samples_per_epoch))"),
    )
    for extra, key, says in cases:
        yaml = experiment(os.path.join(tmp, "bad.yaml"), images, extra)
        line = next(i + 1 for i, text in enumerate(open(yaml)) if key + ":" in text)
        refused = os.path.join(tmp, "refused")
        for command in (["validate"], ["run", "--dry-run"], ["run"]):
            code, text = run(command[0], [yaml] + command[1:] +
                             ["--set", f"output.root={refused}"], expect=2)
            lines = [t for t in text.strip().splitlines() if t.strip()]
            check(f"bad.yaml:{line}:" in text and says in text and len(lines) == 1 and
                  "rank" not in text and not os.path.exists(refused),
                  f"{extra.strip()!r}: runner {' '.join(command)}: one line at bad.yaml:{line} "
                  f"saying {says!r}, no rank, no folder: {text}")
    finish()


if __name__ == "__main__":
    main()
