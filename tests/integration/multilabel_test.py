#!/usr/bin/env python3
"""`task: multilabel` as a user meets it (issue 52, item 9): a CSV whose labels name several
classes ('circle bar'), trained with `task: multilabel` and nothing else set for it.

- the run takes bce, records val_map, val_micro_f1 and val_macro_f1 every epoch and keeps
  best.pt by map; the best val_map equals the average precision (scikit-learn's definition,
  computed here) of the validation predictions written with the best weights;
- predictions.csv has sigmoid probabilities (rows need not sum to 1) and the label and class
  columns list every class at or above 0.5; report.html has the per-class table with AP;
- runner predict --input gives multi-label rows too; export loads as ever (a timm state_dict);
- refused by validate, --dry-run and run in one line (no folder made): the same CSV without task (set task: multilabel), task
  multilabel with accuracy, with cross_entropy, and map in a single-label run.
Usage: multilabel_test.py RUNNER SOURCE_DIR   (/usr/bin/python3 with Debian's python3-opencv)
"""
import csv
import json
import os

import cv2
import numpy as np

from engine_lib import check, finish, metrics, run, tmpdir, write

SHAPES = ("bar", "circle", "square")


def make_images(root, count=120):
    """Each image holds a random non-empty set of shapes; returns (relative path, label text)."""
    rng = np.random.default_rng(3)
    rows = []
    os.makedirs(root)
    for i in range(count):
        present = [s for s in SHAPES if rng.random() < 0.5] or [SHAPES[i % 3]]
        image = (rng.random((32, 32)) * 50).astype(np.uint8)
        if "bar" in present:
            cv2.rectangle(image, (2, 26), (29, 29), 255, -1)
        if "circle" in present:
            cv2.circle(image, (10, 10), 6, 255, -1)
        if "square" in present:
            cv2.rectangle(image, (18, 4), (28, 14), 255, -1)
        name = f"{i:03d}.png"
        cv2.imwrite(os.path.join(root, name), image)
        rows.append((name, " ".join(present)))
    return rows


def experiment(path, table, images, extra=""):
    return write(path, f"""name: multi
seed: 1
{extra}launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: image_csv, file: {table}, root: {images}, mode: grayscale, val_split: 90}}
  train_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  eval_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  num_workers: 0
model: {{backbone: small_cnn, in_chans: 1, num_classes: 3}}
optimizer: {{name: adam, lr: 0.003}}
scheduler: {{name: none}}
train: {{epochs: 4, batch_size: 10}}
predict: {{split: val, output: predictions.csv}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def average_precision(scores, positive):
    """scikit-learn's average_precision_score for one class (ties as one threshold)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    total = sum(positive)
    ap, tp, seen, i = 0.0, 0, 0, 0
    while i < len(order):
        j, hits = i, 0
        while j < len(order) and scores[order[j]] == scores[order[i]]:
            hits += positive[order[j]]
            j += 1
        tp += hits
        seen += j - i
        ap += hits / total * tp / seen
        i = j
    return ap


def main():
    tmp = tmpdir()
    images = os.path.join(tmp, "images")
    rows = make_images(images)
    table = os.path.join(tmp, "labels.csv")
    with open(table, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["path", "label"])
        out.writerows(rows)
    truth = {os.path.join(images, name): set(text.split()) for name, text in rows}

    yaml = experiment(os.path.join(tmp, "multi.yaml"), table, images, "task: multilabel\n")
    run_dir = os.path.join(tmp, "run")
    code, text = run("run", [yaml, "--set", f"output.run_dir={run_dir}"], timeout=300)
    epochs = metrics(run_dir, "epoch") if code == 0 else []
    check(len(epochs) == 4 and all(k in epochs[0] for k in ("val_map", "val_micro_f1",
                                                             "val_macro_f1")),
          f"every epoch records val_map, val_micro_f1, val_macro_f1: {epochs[:1]} {text[-1500:]}")
    summary = json.load(open(os.path.join(run_dir, "summary.json"))) if code == 0 else {}
    best = summary.get("best", {})
    check(best.get("metric") == "map", f"best.pt by map: {best}")
    predictions = os.path.join(run_dir, "predictions.csv")
    table_rows = list(csv.DictReader(open(predictions))) if os.path.exists(predictions) else []
    check(len(table_rows) == 30, f"30 validation predictions: {len(table_rows)}")
    if table_rows and epochs:
        probs = [[float(r[f"prob_{c}"]) for c in range(3)] for r in table_rows]
        check(any(abs(sum(p) - 1) > 0.05 for p in probs), "sigmoid probabilities, not a softmax")
        listed = all(r["class"].split() == [SHAPES[c] for c in range(3) if p[c] >= 0.5] and
                     r["label"].split() == [str(c) for c in range(3) if p[c] >= 0.5]
                     for r, p in zip(table_rows, probs))
        check(listed, f"label and class list every class at or above 0.5: {table_rows[:2]}")
        aps = []
        for c, shape in enumerate(SHAPES):
            positive = [1 if shape in truth[r["file"]] else 0 for r in table_rows]
            if sum(positive):
                aps.append(average_precision([p[c] for p in probs], positive))
        want = sum(aps) / len(aps)
        check(abs(best.get("value", -1) - want) < 2e-3,
              f"best val_map {best.get('value')} is the AP of the predictions: {want:.4f}")
        check(max(e["val_map"] for e in epochs) > 0.8, f"it learns: {[e['val_map'] for e in epochs]}")
    report = open(os.path.join(run_dir, "report.html")).read() if code == 0 else ""
    check("per class (multi-label" in report and "<th>AP</th>" in report,
          "report.html's per-class table in the multi-label form")

    folder_out = os.path.join(tmp, "folder.csv")
    code, text = run("predict", [run_dir, "--input", images, "--output", folder_out])
    folder_rows = {r["path"]: r for r in csv.DictReader(open(folder_out))} \
        if os.path.exists(folder_out) else {}
    same = [r for r in table_rows if r["file"] in folder_rows and
            all(abs(float(folder_rows[r["file"]][f"prob_{s}"]) - float(r[f"prob_{c}"])) < 1e-5
                for c, s in enumerate(SHAPES)) and
            folder_rows[r["file"]]["class"] == r["class"]]
    check(len(folder_rows) == 120 and len(same) == 30,
          f"predict --input gives each validation file the same multi-label row ({len(same)})")
    exported = os.path.join(tmp, "multi.safetensors")
    code, text = run("export", [run_dir, "--output", exported])
    check(code == 0 and os.path.getsize(exported) > 100000, f"export: {text}")

    # Refused at validate, one line each.
    plain = experiment(os.path.join(tmp, "plain.yaml"), table, images)
    cases = ((plain, [], "gives images several labels", "set task: multilabel"),
             (yaml, ["--set", "metrics=[{name: accuracy}]"], "accuracy is a single-label metric",
              "task: multilabel takes map"),
             (yaml, ["--set", "loss={name: cross_entropy}"], "set loss: {name: bce}", "loss"),
             (plain, ["--set", "metrics=[{name: map}]"], "map scores multi-label predictions",
              "set task: multilabel"))
    refused = os.path.join(tmp, "refused")
    for path, args, says, also in cases:
        for command in (["validate"], ["run", "--dry-run"], ["run"]):
            code, text = run(command[0], [path] + command[1:] + args +
                             ["--set", f"output.root={refused}"], expect=2)
            lines = [t for t in text.strip().splitlines() if t.strip() and "[warning]" not in t]
            check(says in text and also in text and len(lines) == 1 and
                  not os.path.exists(refused),
                  f"runner {' '.join(command)} {args}: one line saying {says!r}, no folder: {text}")
    finish()


if __name__ == "__main__":
    main()
