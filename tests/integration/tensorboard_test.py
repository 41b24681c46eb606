#!/usr/bin/env python3
"""TensorBoard reads runner's event files (issue 14): a short real run, then the real tensorboard
package's EventAccumulator finds every scalar of metrics.jsonl with the same steps and values,
under tags that say what they are (issue 39): a log window's figures under train/, an epoch's
validation metrics under val/ (val/loss is the validation loss), its training pass's under
train/epoch_*, memory under system/.
Usage: tensorboard_test.py RUNNER SOURCE_DIR   (with the Python of requirements.txt)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
FMNIST = "/usr/share/datasets/fashion-mnist"
EPOCH_TRAINING = {"loss": "train/epoch_loss", "images_per_s": "train/epoch_images_per_s",
                  "epoch_seconds": "train/epoch_seconds"}


def tag_of(kind, key):
    if key in ("peak_rss_mib", "peak_gpu_mib"):
        return "system/" + key
    if kind == "step":
        return "train/" + key
    if key.startswith("val_"):
        return "val/" + key[4:]
    return EPOCH_TRAINING.get(key)  # the epoch number: the x of the others


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    tmp = tempfile.mkdtemp(prefix="runner_tb_")
    try:
        run_dir = os.path.join(tmp, "run")
        cmd = [RUNNER, "run", os.path.join(SOURCE, "experiments", "quickstart.yaml"),
               "--set", "launch.num_processes=1", "--set", "data.limit.train=640",
               "--set", "data.limit.val=128", "--set", "data.limit.test=64",
               "--set", "scheduler.warmup_steps=2", "--set", "train.log_every_steps=2",
               "--set", "train.epochs=2", "--set", f"output.run_dir={run_dir}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            print(p.stdout[-3000:], p.stderr[-3000:])
            print("FAIL: the run failed")
            return 1
        records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
        expected = {}  # tag -> {step: value}
        for r in records:
            if r["kind"] not in ("step", "epoch"):  # "best": the confusion matrix, report only
                continue
            for key, value in r.items():
                if key in ("kind", "step") or not isinstance(value, (int, float)) \
                        or isinstance(value, bool) or not tag_of(r["kind"], key):
                    continue
                expected.setdefault(tag_of(r["kind"], key), {})[r["step"]] = float(value)
        acc = EventAccumulator(os.path.join(run_dir, "tensorboard"), size_guidance={"scalars": 0})
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        failures = []
        for tag, points in sorted(expected.items()):
            if tag not in tags:
                failures.append(f"{tag}: not in the event file (tags: {sorted(tags)})")
                continue
            got = {e.step: e.value for e in acc.Scalars(tag)}
            if sorted(got) != sorted(points):
                failures.append(f"{tag}: steps {sorted(got)} != metrics.jsonl's {sorted(points)}")
                continue
            for step, want in points.items():
                if abs(got[step] - want) > 1e-6 * max(1.0, abs(want)):  # stored as float32
                    failures.append(f"{tag} step {step}: {got[step]} != {want}")
        for f in failures:
            print("FAIL:", f)
        for wanted in ("train/loss", "val/accuracy", "val/loss", "train/epoch_loss"):
            if not expected.get(wanted):
                print(f"FAIL: metrics.jsonl gives no {wanted}:", sorted(expected))
                return 1
        epochs = [r for r in records if r["kind"] == "epoch"]
        got = {e.step: e.value for e in acc.Scalars("val/loss")}
        if any(abs(got[r["step"]] - r["val_loss"]) > 1e-6 for r in epochs):
            failures.append(f"val/loss is not the validation loss: {got} vs {epochs}")
        for misleading in ("val/images_per_s", "val/epoch_seconds", "val/val_loss"):
            if misleading in tags:
                failures.append(f"{misleading}: a training figure (or a doubled name) under val/")
        print(f"{len(expected)} scalar tags checked, {sum(len(v) for v in expected.values())} points")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
