"""The original script's loop on a Fashion-MNIST subset, 2 CPU ranks (issue 6): the loss falls,
validation accuracy beats chance, the kaggle submission has one row per test sample in order,
the run directory holds every promised file; then `runner predict` (csv, 1 and 2 ranks: the same
file, probabilities summing to 1) and `runner export`.
Usage: engine_loop_test.py RUNNER SOURCE_DIR"""
import csv
import glob
import json
import os

from engine_lib import (SOURCE, check, finish, metrics, only_run_dir, ranks_args, read_safetensors,
                        run, tmpdir)

MNIST = "/usr/share/datasets/fashion-mnist"
if not os.path.isdir(MNIST):
    print("skipped: no Fashion-MNIST at " + MNIST)
    raise SystemExit(77)

tmp = tmpdir()
exp = os.path.join(SOURCE, "experiments", "quickstart.yaml")
root = os.path.join(tmp, "runs")
N_TEST = 300
limits = ["--set", "data.limit.train=2048", "--set", "data.limit.val=512", "--set", f"data.limit.test={N_TEST}",
          "--set", f"output.root={root}", "--set", "scheduler.warmup_steps=2", "--set", "train.log_every_steps=2",
          "--set", "predict.format=kaggle", "--set", "predict.output=submission.csv"]
code, out = run("run", [exp] + limits + ranks_args(2), timeout=180)
run_dir = only_run_dir(root, "quickstart")

# The loop: the loss falls, accuracy beats chance (0.1 on 10 classes) by far.
steps = metrics(run_dir, "step")
# A run of 16 steps has a record per step (the report's curves); train.log_every_steps=2 is the
# console's cadence (a plain line every 2 steps, stdout not being a terminal).
check([s["step"] for s in steps] == list(range(1, 17)),
      f"expected a step record for each of the 16 steps, got {[s['step'] for s in steps]}")
check("epoch 1/1 2/16 " in out and "epoch 1/1 4/16 " in out and "epoch 1/1 3/16 " not in out,
      f"train.log_every_steps=2: a progress line every 2 steps\n{out[-1500:]}")
if steps:
    check(steps[-1]["loss"] < steps[0]["loss"], f"loss did not fall: {steps[0]['loss']} -> {steps[-1]['loss']}")
epochs = metrics(run_dir, "epoch")
check(len(epochs) == 1, f"expected one epoch record, got {len(epochs)}")
if epochs:
    check(epochs[-1].get("val_accuracy", 0) > 0.3, f"validation accuracy {epochs[-1].get('val_accuracy')} <= 0.3")

# The run directory.
for name in ["config.yaml", "command.txt", "env.json", "logs/rank0.log", "logs/rank1.log", "metrics.jsonl",
             "metrics.csv", "checkpoints/best.pt", "checkpoints/last.pt", "report.html", "summary.json",
             "submission.csv"]:
    path = os.path.join(run_dir, name)
    check(os.path.isfile(path) and os.path.getsize(path) > 0, f"run directory lacks {name} (or it is empty)")
check(glob.glob(os.path.join(run_dir, "tensorboard", "events.out.tfevents.*")), "no tensorboard event file")
check(not glob.glob(os.path.join(run_dir, "**", "*.tmp"), recursive=True), "a .tmp file was left behind")
check(not os.path.exists(os.path.join(run_dir, "curves.png")), "curves.png: report.html draws the curves")
with open(os.path.join(run_dir, "summary.json")) as f:
    summary = json.load(f)
check(summary.get("world_size") == 2 and summary.get("optimizer_steps") == 16, f"summary.json: {summary}")
with open(os.path.join(run_dir, "metrics.csv")) as f:
    rows = list(csv.DictReader(f))
check(len(rows) == len(steps) + len(epochs), f"metrics.csv has {len(rows)} rows, metrics.jsonl {len(steps) + len(epochs)}")

# The kaggle submission: ImageId 1..N in order, a label in 0..9 each.
with open(os.path.join(run_dir, "submission.csv")) as f:
    lines = f.read().splitlines()
check(lines[:1] == ["ImageId,Label"], f"submission header {lines[:1]}")
ids = [line.split(",")[0] for line in lines[1:]]
check(ids == [str(i) for i in range(1, N_TEST + 1)], f"ImageIds are not 1..{N_TEST} in order ({len(ids)} rows)")
check(all(line.split(",")[1] in [str(c) for c in range(10)] for line in lines[1:]), "a label outside 0..9")


def predict(ranks, output):
    run("predict", [exp, "--checkpoint", os.path.join(run_dir, "checkpoints", "best.pt"), "--output", output,
                    "--set", "predict.format=csv"] + limits[:6] + ["--set", f"output.root={tmp}/predict"] +
        ranks_args(ranks), timeout=120)
    with open(output) as f:
        return f.read()


one = predict(1, os.path.join(tmp, "p1.csv"))
two = predict(2, os.path.join(tmp, "p2.csv"))
check(one != "" and one == two, "runner predict on 1 and 2 ranks wrote different files")
rows = list(csv.reader(one.splitlines()))
check(rows[:1] == [["index", "label"] + [f"prob_{c}" for c in range(10)]], f"csv header {rows[:1]}")
check([r[0] for r in rows[1:]] == [str(i) for i in range(N_TEST)], "csv index is not 0..N-1 in order")
for r in rows[1:]:
    probs = [float(p) for p in r[2:]]
    if abs(sum(probs) - 1) > 1e-4 or int(r[1]) != max(range(10), key=lambda c: probs[c]):
        check(False, f"csv row {r}: probabilities do not sum to 1 or label is not their argmax")
        break
# The same weights predict the same labels as the submission written after training.
check([r[1] for r in rows[1:]] == [line.split(",")[1] for line in lines[1:]],
      "runner predict --checkpoint best.pt disagrees with the run's own submission")

# Predicting from a run writes into that run (predictions/) and creates no new run directory.
before = sorted(os.listdir(root))
run("predict", [exp, "--checkpoint", os.path.join(run_dir, "checkpoints", "best.pt"),
                "--set", "predict.output=again.csv"] + limits[:6] + ["--set", f"output.root={root}"])
check(os.path.isfile(os.path.join(run_dir, "predictions", "again.csv")),
      "runner predict --checkpoint RUN/checkpoints/best.pt did not write RUN/predictions/again.csv")
check(sorted(os.listdir(root)) == before, "runner predict created a new run directory")
check(not os.path.exists(os.path.join(tmp, "predict")), "runner predict --output created output.root")

# A plain predict from a config (no run) writes its file in the working folder and nothing else.
plain = os.path.join(tmp, "plain")
os.makedirs(plain)
run("predict", [exp, "--set", "predict.output=plain.csv", "--set", f"output.root={plain}/runs"] + limits[:6],
    cwd=plain)
check(sorted(os.listdir(plain)) == ["plain.csv"], f"a plain predict left {sorted(os.listdir(plain))}")

# format: kaggle takes the ids from sample_submission.csv beside the test file.
kaggle = os.path.join(tmp, "kaggle")
os.makedirs(kaggle)
pixels = ",".join(f"pixel{i}" for i in range(784))
with open(os.path.join(kaggle, "train.csv"), "w") as f:
    f.write("label," + pixels + "\n" + "".join(f"{i % 10}," + ",".join(["7"] * 784) + "\n" for i in range(40)))
with open(os.path.join(kaggle, "test.csv"), "w") as f:
    f.write(pixels + "\n" + "".join(",".join(["9"] * 784) + "\n" for _ in range(5)))
with open(os.path.join(kaggle, "sample_submission.csv"), "w") as f:
    f.write("ImageId,Label\n" + "".join(f"{100 + 3 * i},0\n" for i in range(5)))
run("predict", [os.path.join(SOURCE, "experiments", "mnist_kaggle_ddp_fp16.yaml"), "--cpu", "-n", "1",
                "--set", f"data.dataset.root={kaggle}", "--set", "data.dataset.val_split=30",
                "--set", "model.backbone=small_cnn", "--set", "data.num_workers=0",
                "--output", os.path.join(tmp, "kaggle.csv")], timeout=120)
with open(os.path.join(tmp, "kaggle.csv")) as f:
    submitted = f.read().splitlines()
check([line.split(",")[0] for line in submitted] == ["ImageId"] + [str(100 + 3 * i) for i in range(5)],
      f"kaggle ids are not sample_submission.csv's: {submitted[:3]}")

# Export: model.safetensors beside the run, readable, with the classifier's shape.
run("export", [run_dir])
tensors = read_safetensors(os.path.join(run_dir, "model.safetensors")) if os.path.exists(
    os.path.join(run_dir, "model.safetensors")) else {}
check(any(shape == [10, 128] for _, shape, _ in tensors.values()), "model.safetensors lacks a 10x128 classifier")
finish()
