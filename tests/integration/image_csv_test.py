#!/usr/bin/env python3
"""`data.dataset: {name: image_csv}` as a user meets it (issue 52, item 8).

- a CSV listing an image_folder's files in its order, under other column names (an extra
  column, a quoted path with a comma in it), trains exactly as image_folder does: the same
  per-step losses;
- labels as class indices; paths relative to data.dataset.root; a test CSV without labels gives
  one prediction per row;
- refused by validate, --dry-run and run in one line naming the CSV and its line: a missing
  image, a missing column, a test row of an unknown class; a row with several labels in a
  single-label run (set task: multilabel).
Usage: image_csv_test.py RUNNER SOURCE_DIR   (/usr/bin/python3 with Debian's python3-opencv)
"""
import csv
import json
import os
import struct

import cv2
import numpy as np

from engine_lib import check, finish, metrics, run, tmpdir, write

CLASSES = ("blank", "circle", "square")


def make_images(root):
    """root/<class>/<i>.png, 12 per class; a file with a comma in its name. Returns the files in
    image_folder's order (classes sorted, then file names)."""
    rng = np.random.default_rng(0)
    files = []
    for c, name in enumerate(CLASSES):
        os.makedirs(os.path.join(root, name))
        names = [f"{i:02d}.png" for i in range(12)] + (["a,b.png"] if c == 1 else [])
        for f in sorted(names):
            image = (rng.random((28, 28)) * 60).astype(np.uint8)
            if name == "circle":
                cv2.circle(image, (14, 14), 8, 255, -1)
            elif name == "square":
                cv2.rectangle(image, (6, 6), (21, 21), 255, -1)
            cv2.imwrite(os.path.join(root, name, f), image)
            files.append((name, f))
    return files


def experiment(path, dataset, root):
    return write(path, f"""name: csv
seed: 1
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {dataset}
  train_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  eval_transforms: [{{name: normalize, mean: 0.3, std: 0.3}}]
  num_workers: 0
model: {{backbone: small_cnn, in_chans: 1, num_classes: 3}}
optimizer: {{name: adam, lr: 0.003}}
scheduler: {{name: none}}
metrics: [{{name: accuracy}}]
train: {{epochs: 1, batch_size: 6, log_every_steps: 1}}
predict: {{split: test, output: predictions.csv, format: csv}}
output: {{root: {root}, tensorboard: false}}
""")


def safetensors_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def step_losses(run_dir):
    return [r["loss"] for r in metrics(run_dir, "step")]


def main():
    tmp = tmpdir()
    images = os.path.join(tmp, "images")
    files = make_images(images)
    runs = os.path.join(tmp, "runs")

    # The same files and labels as image_folder, listed in a CSV: the same training.
    table = os.path.join(images, "labels.csv")
    with open(table, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["note", "species", "filename"])
        for name, file in files:
            out.writerow(["x", name, f"{name}/{file}"])
    folder = os.path.join(tmp, "folder_run")
    run("run", [experiment(os.path.join(tmp, "folder.yaml"),
                           f"{{name: image_folder, root: {images}, mode: grayscale, val_split: 28, "
                           "split_shuffle: true}",
                           runs), "--set", f"output.run_dir={folder}", "--set",
                "predict.enabled=false"])
    listed = os.path.join(tmp, "csv_run")
    csv_yaml = experiment(os.path.join(tmp, "csv.yaml"),
                          f"{{name: image_csv, file: {table}, path_column: filename, "
                          f"label_column: species, mode: grayscale, val_split: 28, "
                          "split_shuffle: true}", runs)
    code, text = run("run", [csv_yaml, "--dry-run", "--set", "predict.enabled=false"])
    check("image_csv: train 28, val 9, test none, classes 3" in text, f"the dry run's data line: {text[-800:]}")
    code, text = run("validate", [csv_yaml, "--set", "data.dataset.mode=color"], expect=2)
    check("in_chans" in text, f"mode color gives 3-channel images to a 1-channel model: {text}")
    run("run", [csv_yaml, "--set", f"output.run_dir={listed}", "--set", "predict.enabled=false"])
    a, b = step_losses(folder), step_losses(listed)
    check(len(a) == 4 and a == b, f"image_csv trains as image_folder on the same files: {a} {b}")

    # Class indices, paths relative to root, a test CSV without labels.
    indexed = os.path.join(tmp, "indexed.csv")
    with open(indexed, "w") as f:
        f.write("path,label\n" + "".join(f"{n}/{x},{CLASSES.index(n)}\n" for n, x in files
                                         if "," not in x))
    test = os.path.join(tmp, "test.csv")
    with open(test, "w") as f:
        f.write("path\n" + "".join(f"{n}/{x}\n" for n, x in files[:5]))
    i_yaml = experiment(os.path.join(tmp, "indexed.yaml"),
                        f"{{name: image_csv, file: {indexed}, root: {images}, test_file: {test}, "
                        f"mode: grayscale, val_split: 30, split_shuffle: true}}", runs)
    indexed_run = os.path.join(tmp, "indexed_run")
    code, text = run("run", [i_yaml, "--set", f"output.run_dir={indexed_run}"])
    predictions = os.path.join(indexed_run, "predictions.csv")
    rows = list(csv.reader(open(predictions))) if os.path.exists(predictions) else []
    check(len(rows) == 6, f"a prediction per test row (5 and the header): {rows[:2]}")
    # Predictions a person can use (item 10): each row names its file and class.
    check(rows[:1] == [["index", "file", "label", "class", "prob_0", "prob_1", "prob_2"]] and
          all(r[1] == os.path.join(images, n, x) and r[3] == r[2]  # labels given as indices
              for r, (n, x) in zip(rows[1:], files[:5])),
          f"test predictions name the file and the class: {rows[:3]}")
    examples_file = os.path.join(indexed_run, "best_examples.json")
    examples = json.load(open(examples_file)) if os.path.exists(examples_file) else []
    check(all(os.path.isfile(e.get("file", "")) for e in examples),
          f"best_examples.json names each image's file: {[e.get('file') for e in examples]}")
    report = open(os.path.join(indexed_run, "report.html")).read()
    check(all(os.path.basename(e["file"]) in report for e in examples if "file" in e),
          "the report's misclassified grid names the files")
    exported = os.path.join(tmp, "indexed.safetensors")
    code, text = run("export", [listed, "--output", exported])  # the CSV of class names
    metadata = safetensors_metadata(exported) if os.path.exists(exported) else {}
    check(json.loads(metadata.get("class_names", "null")) == list(CLASSES) and
          json.loads(metadata.get("mean", "null")) == [0.3] and
          json.loads(metadata.get("std", "null")) == [0.3] and
          json.loads(metadata.get("input_size", "null")) == [1, 28, 28],
          f"the export's metadata: class names, mean, std, input size: {metadata}")
    check("timm state_dict names" not in text and "runner's own model" in text,
          f"export of small_cnn does not claim timm names: {text}")

    # Refused before anything runs: one line naming the CSV's line.
    bad = os.path.join(tmp, "bad.csv")
    cases = (
        ("path,label\nblank/00.png,blank\nblank/99.png,blank\n", "", "bad.csv:3: ",
         "blank/99.png does not exist"),
        ("file,label\nblank/00.png,blank\n", "", "bad.csv:1: ", "no column 'path'"),
        ("path,label\nblank/00.png,blank\nblank/01.png,blank circle\n", "", "bad.yaml:",
         "blank/01.png: blank and circle), but the run trains one class per image: set task: "
         "multilabel"),
        ("path,label\nblank/00.png,blank\nblank/01.png,circle\n", "path,label\nblank/02.png,star\n",
         "test.csv:2: ", "label 'star' is not a class of the training CSV"),
    )
    for text_csv, test_csv, where, says in cases:
        write(bad, text_csv)
        write(test, test_csv or "path\nblank/00.png\n")
        yaml = experiment(os.path.join(tmp, "bad.yaml"),
                          f"{{name: image_csv, file: {bad}, root: {images}, test_file: {test}, "
                          f"mode: grayscale}}", os.path.join(tmp, "refused"))
        for command in (["validate", yaml], ["run", yaml, "--dry-run"], ["run", yaml]):
            code, out = run(command[0], command[1:], expect=None)
            lines = [l for l in out.strip().splitlines() if "[warning]" not in l]
            check(code == 2 and len(lines) == 1 and where in out and says in out,
                  f"runner {' '.join(command[:1] + command[2:])}: '{says}' at {where} in one line, "
                  f"exit 2 ({code}: {lines})")
        check(not os.path.exists(os.path.join(tmp, "refused")), f"no run folder made ({says})")
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
