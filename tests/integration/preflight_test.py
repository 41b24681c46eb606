"""What `runner validate` passes, runs (issue 51): a table of experiments that cannot run, each
driven through `runner validate`, `runner run --dry-run` and `runner run` with 1 process (it
checks for itself) and 2 (runner's launcher checks before it starts ranks). Each must be exit 2
with one line that names where the key was written (file:line or the --set argument) and what
to change, no rank started, no run folder made. Then what must still pass: the base
experiment, and a default that cannot act (no test split to predict) is a warning, not an error.
Usage: preflight_test.py RUNNER SOURCE"""
import json
import os
import subprocess

from engine_lib import check, finish, metrics, run, tmpdir, write

tmp = tmpdir()
BASE = """\
name: preflight
seed: 3
launch: {device: cpu, threads_per_process: 1, num_processes: 2}
data:
  dataset: {name: synthetic, train_size: 256, val_size: 64, test_size: 32, height: 16, width: 16, noise: 0.5}
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 1.0e-3}
loss: {name: cross_entropy}
metrics: [{name: accuracy}, {name: macro_f1}]
train: {epochs: 1, batch_size: 16}
output: {tensorboard: false}
"""
base = write(os.path.join(tmp, "base.yaml"), BASE)

# A Kaggle CSV of 20 rows, for val_split against the rows it has (written in a file: file:line).
rows = ["label," + ",".join(f"pixel{i}" for i in range(784))]
rows += [f"{i % 10}," + ",".join(str((i * 7 + j) % 256) for j in range(784)) for i in range(20)]
os.makedirs(os.path.join(tmp, "csv"))
write(os.path.join(tmp, "csv", "train.csv"), "\n".join(rows) + "\n")
csv_yaml = write(os.path.join(tmp, "csv.yaml"), BASE.replace(
    "  dataset: {name: synthetic, train_size: 256, val_size: 64, test_size: 32, height: 16, width: 16, noise: 0.5}",
    "  dataset:\n    name: kaggle_csv\n    root: csv\n    test_file: null\n    val_split: 500"))

no_val = ["data.dataset.val_size=0"]
CASES = [  # (what, experiment, --set arguments, where the line must point, words it must say)
    ("class weights vs classes", base, ["loss.weight=[1,2,3]"], "--set loss.weight=[1,2,3]",
     "3 class weights for a model with 10 classes"),
    ("batch x processes vs the split", base, ["data.dataset.train_size=20", "train.batch_size=32"],
     "--set train.batch_size=32", "is larger than the training split (20 samples)"),
    ("accumulation vs an epoch's batches", base, ["train.grad_accum_steps=40"],
     "--set train.grad_accum_steps=40", "set train.grad_accum_steps at most"),
    ("val_split vs the rows", csv_yaml, [], "csv.yaml:9:", "data.dataset.val_split asks for the first 500"),
    ("train.best without a validation split", base, no_val + ["train.best.metric=loss"],
     "--set train.best.metric=loss", "train.best picks best.pt by a validation metric"),
    ("early stopping without a validation split", base, no_val + ["train.early_stopping.patience=2"],
     "--set train.early_stopping.patience=2", "train.early_stopping watches the validation metric"),
    ("metrics without a validation split", base, no_val, "base.yaml:12:",
     "metrics are computed on the validation split"),
    ("predict.split that the data lacks", base, ["data.dataset.test_size=0", "predict.output=p.csv"],
     "--set predict.output=p.csv", "has no test split to predict"),
    ("the best metric vs the metrics", base, ["train.best.metric=top5"],
     "--set train.best.metric=top5", "'top5' is not a configured metric"),
    ("channels vs the images", base, ["model.in_chans=3"], "--set model.in_chans=3",
     "set model.in_chans: 1"),
    # A key of a feature that is off has no effect: refused (the rule for feature sections).
    ("a mixup key while mixup is off", base, ["train.mixup.prob=0.5"],
     "--set train.mixup.prob=0.5", "has no effect while mixup is off"),
    ("early stopping's min_delta without patience", base, ["train.early_stopping.min_delta=0.1"],
     "--set train.early_stopping.min_delta=0.1", "has no effect while train.early_stopping.patience is 0"),
    # Names people bring (docs/coming-from.md), at the --set that wrote them.
    ("Lightning's max_epochs", base, ["train.max_epochs=3"], "--set train.max_epochs=3",
     "train.max_epochs: unknown key; runner calls it train.epochs"),
    ("Lightning's gradient_clip_val", base, ["train.gradient_clip_val=1"],
     "--set train.gradient_clip_val=1", "runner calls it train.clip_grad_norm"),
    ("a Hydra config's learning_rate", base, ["optimizer.learning_rate=0.1"],
     "--set optimizer.learning_rate=0.1", "runner calls it optimizer.lr"),
    ("torchmetrics' f1", base, ["metrics=[{name: f1}]"], "--set metrics=[{name: f1}]",
     "unknown metric 'f1'; runner calls it macro_f1"),
    ("albumentations' hflip", base, ["data.train_transforms=[{name: hflip}]"],
     "--set data.train_transforms=[{name: hflip}]", "unknown transform 'hflip'; runner calls it horizontal_flip"),
    ("torch's CrossEntropyLoss", base, ["loss.name=CrossEntropyLoss"], "--set loss.name=CrossEntropyLoss",
     "unknown loss 'CrossEntropyLoss'; runner calls it cross_entropy"),
    ("timm's kwargs on a native model", base, ["model.kwargs.drop_rate=0.2"],
     "--set model.kwargs.drop_rate=0.2", "model.kwargs passes timm.create_model's arguments to timm/<name> models only"),
]
# A timm model of one input size given smaller images: needs timm (requirements.txt) to import.
python = os.environ.get("RUNNER_PYTHON", "")
if python and subprocess.run([python, "-c", "import timm"], capture_output=True).returncode == 0:
    CASES.append(("a timm model's input size vs the images", base,
                  ["model.backbone=timm/vit_tiny_patch16_224"],
                  "--set model.backbone=timm/vit_tiny_patch16_224",
                  "set model.kwargs.img_size to the images' [height, width]"))
    CASES.append(("a misspelt timm name", base, ["model.backbone=timm/mobilenetv3_smal_050"],
                  "model.backbone", "(close: mobilenetv3_small_050"))
else:
    print("note: timm is not importable (RUNNER_PYTHON): the timm cases are skipped")

# What fails only as a run really trains (issue 69): test-only plugins, stepped through the
# run's own step (autocast at the run's precision, train.mixup's soft targets).
plugin = os.environ.get("RUNNER_PREFLIGHT_PLUGIN", "")
if plugin and os.path.exists(plugin):
    plugged = write(os.path.join(tmp, "plugged.yaml"), f"extends: base.yaml\nplugins: [{plugin}]\n")
    CASES.append(("a loss that refuses train.mixup's soft targets", plugged,
                  ["loss.name=hard_labels_only", "train.mixup.mixup_alpha=0.8"],
                  "--set loss.name=hard_labels_only", "and train.mixup's soft targets failed: hard_labels_only takes "
                  "class indices, got class probabilities"))
    CASES.append(("a model that runs in float32 only, at precision bf16", plugged,
                  ["model.backbone=float32_only", "precision=bf16"], "--set precision=bf16",
                  "cannot run at precision bf16 (autocast on the CPU, as the run has it): "
                  "float32_only needs float32 activations, got BFloat16; set precision: fp32"))
else:
    print("note: RUNNER_PREFLIGHT_PLUGIN is not built: the cases of the run's own step are skipped")


def lines_of(out):
    return [line for line in out.splitlines() if line.strip()]


for n, (what, experiment, sets, where, words) in enumerate(CASES):
    args = [experiment] + [a for s in sets for a in ("--set", s)]
    for k, (command, extra) in enumerate((("validate", []), ("run", ["--dry-run"]),
                                          ("run", ["--set", "launch.num_processes=1"]),
                                          ("run", ["--set", "launch.num_processes=2"]))):
        folder = os.path.join(tmp, f"case{n}_{k}")
        code, out = run(command, args + extra + ["--set", f"output.run_dir={folder}"]
                        if command == "run" else args, expect=None, timeout=180)
        label = f"{what}: runner {command} {' '.join(extra)}"
        found = lines_of(out)
        check(code == 2, f"{label}: exit {code}, expected 2:\n{out[-800:]}")
        check(len(found) == 1 and where in found[0] and words in found[0],
              f"{label}: one line naming {where!r} and saying {words!r}; got:\n{out[-800:]}")
        check("rank" not in out and "started" not in out, f"{label}: a rank started:\n{out[-500:]}")
        check(not os.path.exists(folder), f"{label}: {folder} was made")

# What must still pass: the base experiment runs, and a default that cannot act is a warning.
code, out = run("validate", [base], expect=0)
check(code == 0 and "ok:" in out, f"the base experiment validates:\n{out[-500:]}")
code, out = run("validate", [base, "--set", "data.dataset.test_size=0"], expect=0)
check(code == 0 and "warning: the dataset (synthetic) has no test split to predict" in out,
      f"no test split with predict left at its defaults: a warning, exit 0:\n{out[-500:]}")
code, out = run("run", [base, "--set", "data.dataset.test_size=0", "--set",
                        f"output.run_dir={os.path.join(tmp, 'ok')}"], expect=0, timeout=180)
check(code == 0 and out.count("has no test split to predict") == 1,
      f"the run trains and warns once, before it starts:\n{out[-800:]}")

# For CI: --format json (an object per problem) and github (Actions' annotations), exit 2.
typos = write(os.path.join(tmp, "typos.yaml"), "extends: base.yaml\noptimizer: {name: adam, lrr: 0.1}\n"
              "train: {max_epochs: 3}\n")
code, out = run("validate", [typos, "--set", "loss.weight=[1,2]", "--format", "json"], expect=None)
try:
    problems = json.loads(out)
except ValueError:
    problems = None
check(code == 2 and problems is not None and len(problems) == 2,
      f"validate --format json: exit 2, an array of the 2 problems:\n{out[-800:]}")
if problems:
    by_key = {p["key"]: p for p in problems}
    lrr = by_key.get("optimizer.lrr", {})
    check(lrr.get("file") == typos and lrr.get("line") == 2 and lrr.get("column") > 0 and
          "did you mean 'lr'" in lrr.get("message", "") and lrr.get("severity") == "error",
          f"the JSON problem has file, line, column, key and message: {lrr}")
    check(set(problems[0]) >= {"file", "line", "column", "key", "message", "hint"},
          f"every JSON problem has file, line, column, key, message, hint: {problems[0]}")
code, out = run("validate", [typos, "--format", "github"], expect=None)
found = lines_of(out)
check(code == 2 and len(found) == 2 and all(line.startswith(f"::error file={typos},line=") for line in found)
      and any(",line=3,col=" in line and "title=train.max_epochs::" in line for line in found),
      f"validate --format github: one ::error annotation per problem at its line:\n{out[-800:]}")
code, out = run("validate", [base, "--set", "data.dataset.test_size=0", "--format", "github"], expect=0)
check(code == 0 and out.startswith("::warning ") and "has no test split to predict" in out,
      f"validate --format github: a warning is a ::warning annotation, exit 0:\n{out[-500:]}")

# A finished run has nothing to continue: --resume is one line saying how to train it longer,
# and changes nothing of the folder; with train.epochs raised it trains on.
finished = os.path.join(tmp, "ok")
before = {name: os.path.getmtime(os.path.join(finished, name)) for name in os.listdir(finished)}
code, out = run("run", ["--resume", finished], expect=None, timeout=120)
check(code == 2 and len(lines_of(out)) == 1 and "the run finished after its 1 epoch(s)" in out and
      f"runner run --resume {finished} --set train.epochs=2" in out and "rank" not in out,
      f"--resume of a finished run: exit 2, one line saying how to train longer:\n{out[-600:]}")
after = {name: os.path.getmtime(os.path.join(finished, name)) for name in os.listdir(finished)}
check(before == after, "a refused resume wrote nothing into the run folder")
code, out = run("run", ["--resume", finished, "--set", "train.epochs=2"], expect=0, timeout=180)
check(code == 0 and "resumed from" in out, f"--resume with train.epochs raised trains on:\n{out[-600:]}")

# train.max_steps ending the first epoch: no validation picked best weights, and the last
# line, the summary and predict say the last weights were used.
short = os.path.join(tmp, "short")
code, out = run("run", [base, "--set", "train.max_steps=3", "--set", f"output.run_dir={short}"],
                expect=0, timeout=180)
with open(os.path.join(short, "summary.json")) as f:
    summary = json.load(f)
done = [line for line in out.splitlines() if "done in" in line]
check(code == 0 and done and "; last weights (no best.pt): accuracy" in done[-1] and
      summary["best"]["value"] is None and summary.get("evaluated_weights") == "last" and
      not os.path.exists(os.path.join(short, "checkpoints", "best.pt")),
      f"max_steps inside the first epoch: the last weights, said so everywhere:\n{out[-600:]}")

# Writing a setting into train.ema turns it on: the run keeps and validates the average.
ema_run = os.path.join(tmp, "ema")
code, out = run("run", [base, "--set", "train.ema.decay=0.9", "--set", f"output.run_dir={ema_run}"],
                expect=0, timeout=180)
with open(os.path.join(ema_run, "metrics.jsonl")) as f:
    epoch_records = [json.loads(line) for line in f if '"epoch"' in line and '"ema_val_loss"' in line]
check(code == 0 and epoch_records, f"train.ema: {{decay: 0.9}} keeps and validates the average:\n{out[-500:]}")
with open(os.path.join(ema_run, "config.yaml")) as f:
    check("enabled: true" in f.read(), "the run's config.yaml says train.ema.enabled: true")
code, out = run("run", [base, "--set", "train.ema.decay=0.9", "--set", "train.ema.enabled=false",
                        "--set", f"output.run_dir={os.path.join(tmp, 'ema_off')}"], expect=0, timeout=180)
with open(os.path.join(tmp, "ema_off", "metrics.jsonl")) as f:
    check("ema_val_loss" not in f.read(), "train.ema.enabled: false turns the average off")
# The step check steps the run's own model where the run has built it on the CPU (--dry-run, a
# rank that checks for itself), then puts it back: one build per command, and a lone rank's run
# trains as one whose check ran before runner's launcher started it (launch.max_restarts).
if plugin and os.path.exists(plugin):
    builds = os.path.join(tmp, "builds.txt")
    os.environ["RUNNER_TEST_MODEL_BUILDS"] = builds

    def builds_of(command, args):
        if os.path.exists(builds):
            os.remove(builds)
        code, out = run(command, [plugged, "--set", "model.backbone=counted_cnn"] + args,
                        expect=0, timeout=180)
        with open(builds) if os.path.exists(builds) else open(os.devnull) as f:
            return code, out, len(f.readlines())

    for command, args, expected in (("validate", [], 1), ("run", ["--dry-run"], 1)):
        code, out, count = builds_of(command, args)
        check(count == expected, f"runner {command} {' '.join(args)} builds the model {expected} "
              f"time(s), built it {count}:\n{out[-500:]}")
    losses = {}
    for label, extra, expected in (("lone", [], 1), ("launched", ["--set", "launch.max_restarts=1"], 2)):
        folder = os.path.join(tmp, f"built_{label}")
        code, out, count = builds_of("run", ["--set", "launch.num_processes=1", "--set",
                                             f"output.run_dir={folder}"] + extra)
        check(count == expected, f"a {label} run builds the model {expected} time(s) (the check "
              f"{'in the rank' if label == 'lone' else 'before the launcher'}), built it {count}")
        losses[label] = [(r["loss"], r.get("val_loss")) for r in metrics(folder, "epoch")]
    check(losses["lone"] and losses["lone"] == losses["launched"],
          f"the run the check stepped trains as the unstepped one: {losses}")
    del os.environ["RUNNER_TEST_MODEL_BUILDS"]
finish()
