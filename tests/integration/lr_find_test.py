#!/usr/bin/env python3
"""`runner lr-find EXPERIMENT.yaml` as a user meets it (issue 52, item 7).

- on a small synthetic experiment (2 ranks configured: lr-find runs one process), 40 steps:
  lr_find.csv, lr_find.json and lr_find.html in the -o folder; the lrs are Lightning's
  _ExponentialLR's, the smoothed losses its _LRCallback's from the measured ones, and the
  suggested lr is Lightning's suggestion() computed here with torch.gradient on those columns;
  the output says to set optimizer.lr; no run folder appears under output.root;
- sgd up to lr 1000 diverges: the test stops early, saying so in lr_find.json;
- a full disk: one line naming the file, nothing half-written; an unwritable -o: one line;
- the same -o folder again (not empty, its files byte for byte kept), --min-lr above --max-lr,
  no experiment: exit 2, one line.
Usage: lr_find_test.py RUNNER SOURCE_DIR   (with the Python of requirements.txt: torch)
"""
import csv
import json
import os
import subprocess
import sys

import torch

from engine_lib import check, finish, run, tmpdir, write


def experiment(path, optimizer="{name: adam, lr: 0.001}"):
    return write(path, f"""name: lrfind
seed: 2
launch: {{num_processes: 2, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: synthetic, height: 16, width: 16, train_size: 256, val_size: 32, test_size: 0}}
  num_workers: 0
model: {{backbone: small_cnn, in_chans: 1, num_classes: 10}}
optimizer: {optimizer}
train: {{epochs: 1, batch_size: 32}}
predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def lightning_suggestion(lrs, smoothed, skip_begin=10, skip_end=1):
    """Lightning 2.6's _LRFinder.suggestion on the recorded columns."""
    losses = torch.tensor(smoothed[skip_begin:-skip_end], dtype=torch.float64)
    x = torch.tensor(lrs[skip_begin:-skip_end], dtype=torch.float64)
    finite = torch.isfinite(losses)
    gradients = torch.gradient(losses[finite], spacing=[x[finite]])[0]
    index = torch.arange(len(smoothed))[skip_begin:-skip_end][finite][torch.argmin(gradients)]
    return lrs[int(index)]


def main():
    tmp = tmpdir()
    yaml = experiment(os.path.join(tmp, "lr.yaml"))
    out = os.path.join(tmp, "found")
    code, text = run("lr-find", [yaml, "-o", out, "--steps", "40", "--min-lr", "1e-6"], timeout=300)
    rows = list(csv.DictReader(open(os.path.join(out, "lr_find.csv")))) if code == 0 else []
    record = json.load(open(os.path.join(out, "lr_find.json"))) if code == 0 else {}
    page = open(os.path.join(out, "lr_find.html")).read() if code == 0 else ""
    check(len(rows) == 40 and '"x_log":true' in page and page.count('"points"') >= 2,
          f"40 rows and the page's chart of them: {len(rows)} {text[-800:]}")
    if rows:
        lrs = [float(r["lr"]) for r in rows]
        losses = [float(r["loss"]) for r in rows]
        smoothed = [float(r["smoothed_loss"]) for r in rows]
        # Lightning's _ExponentialLR: base, then base * (end / base) ** ((k + 1) / n).
        want = [1e-6] + [1e-6 * (1.0 / 1e-6) ** ((k + 1) / 40) for k in range(1, 40)]
        check(all(abs(a - b) <= 1e-6 * b for a, b in zip(lrs, want)) and lrs[-1] == 1.0,
              f"the lrs are Lightning's exponential ramp: {lrs[:3]} ... {lrs[-1]}")
        # Lightning's _LRCallback: avg = beta avg + (1 - beta) loss; / (1 - beta^(step + 1)).
        avg, ours = 0.0, []
        for step, loss in enumerate(losses, start=1):
            avg = 0.98 * avg + 0.02 * loss
            ours.append(avg / (1 - 0.98 ** (step + 1)))
        check(all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(smoothed, ours)),
              "the smoothed losses are Lightning's from the measured ones")
        suggested = lightning_suggestion(lrs, smoothed)
        check(record.get("suggested_lr") is not None and
              abs(record["suggested_lr"] - suggested) <= 1e-6 * suggested,
              f"the suggestion is Lightning's: {record.get('suggested_lr')} vs {suggested}")
        check(f"set optimizer.lr: {suggested:.3g}" in text, f"the output says what to set: {text[-400:]}")
        check(record.get("steps_run") == 40 and record.get("batch_size") == 32,
              f"lr_find.json: {record}")
    check(not os.path.exists(os.path.join(tmp, "runs")), "lr-find writes no run folder")

    # Diverging: sgd up to lr 1000 stops early.
    sgd = experiment(os.path.join(tmp, "sgd.yaml"), "{name: sgd, lr: 0.01, momentum: 0.9}")
    diverged = os.path.join(tmp, "diverged")
    code, text = run("lr-find", [sgd, "-o", diverged, "--steps", "60", "--max-lr", "1000"],
                     timeout=300)
    record = json.load(open(os.path.join(diverged, "lr_find.json"))) if code in (0, 1) else {}
    check(record.get("stopped_early") in ("diverged", "non-finite loss") and
          record.get("steps_run", 60) < 60 and "lr-find stopped after" in text,
          f"sgd to lr 1000 stops early and says so: {record} {text[-600:]}")

    # Where it cannot write: a full disk (a tiny tmpfs) fails in one line naming the file,
    # leaving no half-written file; a folder under a plain file is refused before any step.
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    if os.getuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs",
                                            full], capture_output=True).returncode == 0:
        try:
            code, text = run("lr-find", [yaml, "-o", os.path.join(full, "lr"), "--steps", "12"],
                             expect=None, timeout=300)
            errors = [t for t in text.splitlines() if "error" in t]
            left = os.listdir(os.path.join(full, "lr")) if os.path.isdir(os.path.join(full, "lr")) \
                else []
            check(code == 1 and len(errors) == 1 and "No space left" in errors[0] and
                  "lr_find" in errors[0] and not any(n.startswith(".") or ".tmp" in n for n in left),
                  f"lr-find onto a full disk: one line naming the file, nothing half-written: "
                  f"{code} {errors} {left}")
        finally:
            subprocess.run(["umount", full])
    else:
        print("note: the full-disk case needs root and a tmpfs mount: skipped")
    plain_file = write(os.path.join(tmp, "plain_file"), "x")
    code, text = run("lr-find", [yaml, "-o", os.path.join(plain_file, "lr")], expect=2)
    check("cannot create" in text and "writable -o DIR" in text and
          len(text.strip().splitlines()) == 1, f"an unwritable -o: one line: {text}")

    # Refused in one line, exit 2; the folder that is not empty keeps its bytes.
    before = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
    for args, says in (([yaml, "-o", out], "is not empty"),
                       ([yaml, "-o", os.path.join(tmp, "x"), "--min-lr", "1", "--max-lr", "0.1"],
                        "need 0 < min-lr < max-lr"),
                       ([], "give one experiment file")):
        code, text = run("lr-find", args, expect=2)
        lines = [t for t in text.strip().splitlines() if t.strip()]
        check(says in text and len(lines) == 1, f"lr-find {args}: one line saying {says!r}: {text}")
    check({n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)} == before,
          "the refused -o folder is byte for byte as it was")
    finish()


if __name__ == "__main__":
    sys.exit(main())
