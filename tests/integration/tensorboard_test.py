#!/usr/bin/env python3
"""TensorBoard reads runner's event files (issue 14): a short real run, then the real tensorboard
package's EventAccumulator finds every scalar of metrics.jsonl with the same steps and values.
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
            prefix = "train/" if r["kind"] == "step" else "val/"
            for key, value in r.items():
                if key in ("kind", "step") or not isinstance(value, (int, float)) \
                        or isinstance(value, bool):
                    continue
                expected.setdefault(prefix + key, {})[r["step"]] = float(value)
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
        if not expected.get("train/loss") or not expected.get("val/val_accuracy"):
            print("FAIL: metrics.jsonl lacks train/loss or val/val_accuracy:", sorted(expected))
            return 1
        print(f"{len(expected)} scalar tags checked, {sum(len(v) for v in expected.values())} points")
        return 1 if failures else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
