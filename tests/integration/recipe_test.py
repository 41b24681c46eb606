#!/usr/bin/env python3
"""The training recipe's keys (issue 41) through the CLI, on tiny synthetic runs: train.ema (its
validation beside the model's, its decay schedule, best.weights, predict/export --weights,
resume equal to one go) and train.mixup (each key changes what trains, the same mixes with any
number of loader threads and on the resident batched path, off_epoch), and their bad input
(exit 2 naming file:line and what to write).
Usage: recipe_test.py RUNNER
"""
import json
import os
import subprocess
import sys

from engine_lib import (check, finish, metrics, ranks_args, read_safetensors, run, tmpdir,
                        write)

CONFIG = """name: recipe
seed: 5
launch: {num_processes: 1, device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 128, val_size: 48, test_size: 16, height: 16,
            width: 16, num_classes: 4, noise: 0.5}
  train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 4}
optimizer: {name: adamw, lr: 3.0e-3}
scheduler: {name: none}
loss: {name: cross_entropy}
metrics: [{name: accuracy}, {name: loss}]
train: {epochs: 2, batch_size: 16, log_every_steps: 1, deterministic: true}
predict: {split: test, output: predictions.csv, format: csv}
"""

tmp = tmpdir()
EXP = write(os.path.join(tmp, "recipe.yaml"), CONFIG)
count = [0]


def train(*sets, expect=0, extra=()):
    """A run of the experiment with `sets` -> (output, run_dir)."""
    count[0] += 1
    run_dir = os.path.join(tmp, f"run{count[0]}")
    args = [EXP, "--set", f"output.run_dir={run_dir}"] + list(extra)
    for s in sets:
        args += ["--set", s]
    _, out = run("run", args, expect=expect, timeout=240)
    return out, run_dir


def epochs(run_dir):
    return metrics(run_dir, "epoch")


def steps(run_dir):
    return [r["loss"] for r in metrics(run_dir, "step")]


def summary(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as f:
        return json.load(f)


def ema_gap(run_dir):
    """How far the average's validation loss is from the model's, at the last epoch."""
    last = epochs(run_dir)[-1]
    return abs(last["ema_val_loss"] - last["val_loss"])


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


# ---- train.ema -------------------------------------------------------------------------------
EMA = "train.ema.enabled=true"
out, plain_ema = train(EMA, "train.ema.decay=0.999999")
last = epochs(plain_ema)[-1]
check({"ema_val_accuracy", "ema_val_loss", "val_accuracy"} <= set(last),
      f"an epoch record with train.ema has ema_val_*: {sorted(last)}")
with open(os.path.join(plain_ema, "metrics.csv")) as f:
    header = f.readline().strip().split(",")
check("ema_val_accuracy" in header and header.count("ema_val_loss") == 1,
      f"metrics.csv has one column per average metric: {header}")
check("ema_accuracy" in summary(plain_ema)["last_metrics"], "summary.json's last_metrics has ema_*")
check("ema val accuracy" in out, f"the epoch line shows the average's validation:\n{out[-800:]}")
# decay near 1: the average stays at the first step's weights, away from the model's
check(ema_gap(plain_ema) > 1e-3, f"decay 0.999999 keeps the average behind: gap {ema_gap(plain_ema)}")
e = epochs(plain_ema)
check(abs(e[0]["ema_val_loss"] - e[1]["ema_val_loss"]) < 2e-3,
      f"decay 0.999999: the average barely moves between epochs: {e[0]['ema_val_loss']} "
      f"{e[1]['ema_val_loss']}")
# decay near 0: the average is the model
_, tiny = train(EMA, "train.ema.decay=1e-9")
check(ema_gap(tiny) < 1e-5, f"decay 1e-9: the average is the model: gap {ema_gap(tiny)}")
# update_after_step beyond the run: every update only copies
_, copies = train(EMA, "train.ema.decay=0.999999", "train.ema.update_after_step=1000")
check(ema_gap(copies) < 1e-5, f"update_after_step 1000: the average is a copy: {ema_gap(copies)}")
# warm-up: 1 - (1 + s/gamma)^-power, clamped to [min_decay, decay]
_, warm = train(EMA, "train.ema.decay=0.999999", "train.ema.warmup.enabled=true")
check(ema_gap(warm) < ema_gap(plain_ema),
      f"warmup: the average follows the model early: {ema_gap(warm)} vs {ema_gap(plain_ema)}")
_, big_gamma = train(EMA, "train.ema.decay=0.999999", "train.ema.warmup.enabled=true",
                     "train.ema.warmup.gamma=1e9")
check(ema_gap(big_gamma) < 1e-4, f"warmup gamma 1e9: decay ~0, the average is the model: "
      f"{ema_gap(big_gamma)}")
_, big_power = train(EMA, "train.ema.decay=0.999999", "train.ema.warmup.enabled=true",
                     "train.ema.warmup.power=50")
check(ema_gap(big_power) > ema_gap(warm) + 1e-4,
      f"warmup power 50: decay ~1 at once: {ema_gap(big_power)} vs {ema_gap(warm)}")
_, floor = train(EMA, "train.ema.decay=0.999999", "train.ema.warmup.enabled=true",
                 "train.ema.warmup.gamma=1e9", "train.ema.min_decay=0.999999")
check(ema_gap(floor) > 1e-3, f"min_decay 0.999999 holds the warm-up's decay up: {ema_gap(floor)}")
# exclude_buffers: BatchNorm's running statistics copied from the model, not averaged
_, no_buffers = train(EMA, "train.ema.decay=0.999999", "train.ema.exclude_buffers=true")
check(abs(epochs(no_buffers)[-1]["ema_val_loss"] - epochs(plain_ema)[-1]["ema_val_loss"]) > 1e-4,
      "exclude_buffers changes the average's validation (BatchNorm statistics are the model's)")

# train.best.weights: ema judges best.pt by ema_val_<metric> and predicts with the average
out, best_ema = train(EMA, "train.ema.decay=0.999999", "train.best.weights=ema")
s = summary(best_ema)
check(s["best"]["metric"] == "ema_accuracy", f"best.weights ema: best by ema_accuracy: {s['best']}")
check("loaded the best averaged weights" in out, f"predictions with the average:\n{out[-800:]}")
check(abs(s["best_metrics"]["loss"] - epochs(best_ema)[s["best"]["epoch"] - 1]["ema_val_loss"])
      < 1e-6, "summary best_metrics are the average's")
with open(os.path.join(best_ema, "predictions.csv")) as f:
    trained_predictions = f.read()
_, out = run("predict", [best_ema, "--output", os.path.join(tmp, "p_ema.csv")])
_, out = run("predict", [best_ema, "--weights", "model", "--output", os.path.join(tmp, "p_model.csv")])
with open(os.path.join(tmp, "p_ema.csv")) as f:
    predicted_ema = f.read()
with open(os.path.join(tmp, "p_model.csv")) as f:
    predicted_model = f.read()
check(predicted_ema == trained_predictions,
      "runner predict RUN_DIR uses the run's train.best.weights (ema): same file as training's")
check(predicted_model != predicted_ema, "--weights model predicts with the model's weights")
run("export", [best_ema, "--weights", "ema", "-o", os.path.join(tmp, "ema.safetensors")])
run("export", [best_ema, "--weights", "model", "-o", os.path.join(tmp, "model.safetensors")])
a, b = read_safetensors(os.path.join(tmp, "ema.safetensors")), read_safetensors(
    os.path.join(tmp, "model.safetensors"))
check(a.keys() == b.keys() and any(a[k] != b[k] for k in a),
      "export --weights ema writes the average, --weights model the model")
_, plain = train()


def folder_bytes(folder):
    """Every file's bytes but run.lock's (it names the last command that held the folder)."""
    out = {}
    for base, _, files in os.walk(folder):
        for name in files:
            if name == "run.lock" and base == folder:
                continue
            with open(os.path.join(base, name), "rb") as f:
                out[os.path.relpath(os.path.join(base, name), folder)] = f.read()
    return out


before = folder_bytes(plain)
code, out = run("predict", [plain, "--weights", "ema"], expect=None)
check(folder_bytes(plain) == before, "a refused --weights ema leaves the run folder byte for byte")
check(code != 0 and "holds no averaged weights" in out and "--weights model" in out,
      f"--weights ema of a run without train.ema: one line saying what to do:\n{out[-600:]}")

# ---- train.mixup -----------------------------------------------------------------------------
base = steps(plain)
_, mix = train("train.mixup.mixup_alpha=0.8")
check(not close(steps(mix), base, 1e-4), "mixup_alpha 0.8 changes the training losses")
_, never = train("train.mixup.mixup_alpha=0.8", "train.mixup.prob=0")
check(close(steps(never), base, 1e-4),
      "prob 0: never mixed, the soft one-hot targets train as the labels do")
_, smooth = train("train.mixup.mixup_alpha=0.8", "train.mixup.prob=0",
                  "train.mixup.label_smoothing=0.1")
_, smooth_loss = train("loss.label_smoothing=0.1")
# (the first steps: float rounding of the two formulas drifts apart later in training)
check(close(steps(smooth)[:3], steps(smooth_loss)[:3], 1e-4) and
      not close(steps(smooth)[:3], base[:3], 1e-3),
      "mixup's label_smoothing 0.1 smooths the targets as the loss's own 0.1 does")
_, cut = train("train.mixup.cutmix_alpha=1.0")
check(not close(steps(cut), steps(mix), 1e-4) and not close(steps(cut), base, 1e-4),
      "cutmix_alpha 1.0 trains differently from mixup and from no mix")
_, minmax = train("train.mixup.cutmix_minmax=[0.3, 0.6]")
check(not close(steps(minmax), steps(cut), 1e-4), "cutmix_minmax changes the boxes")
_, uncorrected = train("train.mixup.cutmix_alpha=1.0", "train.mixup.correct_lam=false")
check(not close(steps(uncorrected), steps(cut), 1e-4), "correct_lam false changes the targets")
_, both = train("train.mixup.mixup_alpha=0.8", "train.mixup.cutmix_alpha=1.0")
_, switched = train("train.mixup.mixup_alpha=0.8", "train.mixup.cutmix_alpha=1.0",
                    "train.mixup.switch_prob=1.0")
check(not close(steps(both), steps(switched), 1e-4), "switch_prob changes what mixes")
for mode in ("pair", "elem"):
    _, by_mode = train("train.mixup.mixup_alpha=0.8", f"train.mixup.mode={mode}")
    check(not close(steps(by_mode), steps(mix), 1e-4), f"mode {mode} draws differently from batch")
_, off = train("train.mixup.mixup_alpha=0.8", "train.mixup.off_epoch=1")
per_epoch = len(base) // 2
check(close(steps(off)[:per_epoch], steps(mix)[:per_epoch], 0) and
      not close(steps(off)[per_epoch:], steps(mix)[per_epoch:], 1e-4),
      "off_epoch 1: the first epoch mixes as without it, the second does not")
# the same mixes with 1 or 3 loader threads, and on the resident batched path
RECIPE = ["train.mixup.mixup_alpha=0.8", "train.mixup.cutmix_alpha=1.0", "train.mixup.mode=elem",
          EMA]
_, threads1 = train(*RECIPE, "data.num_workers=1")
_, threads3 = train(*RECIPE, "data.num_workers=3")
check(steps(threads1) == steps(threads3), "1 and 3 loader threads give the same mixed steps")
_, resident = train(*RECIPE, "data.device=cpu")
check(close(steps(resident), steps(threads1), 1e-4),
      "data.device cpu (batched augmentation) mixes as the loader path does")

# ---- resume with the recipe on: equal to one go, the average included -------------------------
sets = RECIPE + ["train.ema.decay=0.9"]
_, one_go = train(*sets, extra=ranks_args(2))
_, stopped = train(*sets, "train.max_steps=5", extra=ranks_args(2))
_, out = run("run", ["--resume", stopped, "--set", "train.max_steps="] + ranks_args(2),
             timeout=240)
check("resumed from" in out, f"the recipe run resumed:\n{out[-800:]}")
for weights in ("model", "ema"):
    for tag, d in (("one", one_go), ("two", stopped)):
        run("export", [os.path.join(d, "checkpoints", "last.pt"), "--weights", weights, "-o",
                       os.path.join(tmp, f"{tag}_{weights}.safetensors")])
    a = read_safetensors(os.path.join(tmp, f"one_{weights}.safetensors"))
    b = read_safetensors(os.path.join(tmp, f"two_{weights}.safetensors"))
    check(a and a == b, f"last.pt's {weights} weights after a resume equal one go")
check(steps(one_go) == steps(stopped), "the resumed recipe run's step losses equal one go")
check(epochs(one_go)[-1]["ema_val_loss"] == epochs(stopped)[-1]["ema_val_loss"],
      "the resumed run's average validates as one go's")

# ---- transforms.random_erasing: each key changes what trains --------------------------------------
ERASE = write(os.path.join(tmp, "erase.yaml"), CONFIG.replace(
    "train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]",
    "train_transforms: [{name: normalize, mean: 0.5, std: 0.25}, {name: random_erasing, p: 1.0}]"))


def transform_run(yaml, index, *sets, raw=(), expect=0):
    """A run of `yaml` with `sets` applied to its train transform `index` and `raw` as given."""
    count[0] += 1
    run_dir = os.path.join(tmp, f"run{count[0]}")
    args = [yaml, "--set", f"output.run_dir={run_dir}"]
    for s_ in sets:
        args += ["--set", f"data.train_transforms.{index}." + s_]
    for s_ in raw:
        args += ["--set", s_]
    _, out = run("run", args, expect=expect, timeout=240)
    return out, run_dir


def erase(*sets, raw=()):
    return transform_run(ERASE, 1, *sets, raw=raw)


_, erased = erase()
_, not_erased = erase("p=0")
_, unflipped = train("data.train_transforms.0.p=0")
check(close(steps(not_erased), steps(unflipped), 1e-6) and
      not close(steps(erased), steps(not_erased), 1e-4),
      "random_erasing p 1 erases (other losses), p 0 trains as without it")
for variant in ("mode=rand", "mode=pixel", "min_area=0.2", "max_area=0.05", "min_aspect=0.9",
                "max_aspect=1.2", "min_count=2", "max_count=3"):
    _, changed = erase(variant)
    check(not close(steps(changed), steps(erased), 1e-5), f"random_erasing {variant} changes it")
_, pixel = erase("mode=pixel", raw=["data.num_workers=3"])
_, resident_pixel = erase("mode=pixel", raw=["data.device=cpu"])
check(close(steps(resident_pixel), steps(pixel), 1e-4),
      "random_erasing pixel erases alike on the resident batched path (data.device cpu)")
code, out = run("run", [EXP, "--set", f"output.run_dir={os.path.join(tmp, 'u8erase')}", "--set",
                        "data.train_transforms=[{name: random_erasing}, {name: normalize}]"],
                expect=None)
check(code != 0 and "after normalize" in out,
      f"random_erasing before normalize: one line saying where it goes:\n{out[-600:]}")

# ---- the optimizer's groups: weight_decay_exclude and layer_decay, as the dry run shows them ---
def group_lines(*sets, expect=0):
    code, out = run("run", [EXP, "--dry-run"] + sum((["--set", s_] for s_ in sets), []),
                    expect=expect)
    return [line for line in out.splitlines() if line.strip().startswith("group ")], out


groups, _ = group_lines("optimizer.weight_decay=0.05")
check(len(groups) == 2 and "weight decay 0.05" in groups[0] and "weight decay 0," in groups[1],
      f"adamw's default weight_decay_exclude [bias, norm]: a decay and a no-decay group: {groups}")
groups, _ = group_lines("optimizer.weight_decay=0.05", "optimizer.weight_decay_exclude=[]")
check(len(groups) == 1 and "weight decay 0.05" in groups[0], f"[] decays every parameter: {groups}")
groups, _ = group_lines("optimizer.weight_decay=0.05", "optimizer.layer_decay=0.5",
                        "model.backbone=resnet10t")
check(len(groups) > 6 and "lr x 1" in groups[0] and any("lr x 0.25" in g for g in groups),
      f"layer_decay 0.5: a group per layer, lr halved per layer down from the head: {groups}")
_, out = group_lines("optimizer.layer_decay=0.5", expect=2)
check("no layer grouping" in out, f"layer_decay on a model without timm's grouping:\n{out[-500:]}")

# ---- transforms.rand_augment: each key changes what trains ---------------------------------------
AUGMENT = write(os.path.join(tmp, "augment.yaml"), CONFIG.replace(
    "train_transforms: [{name: horizontal_flip, p: 0.5}, {name: normalize, mean: 0.5, std: 0.25}]",
    "train_transforms: [{name: rand_augment, p: 1.0}, {name: normalize, mean: 0.5, std: 0.25}]"))


def augment(*sets, raw=()):
    return transform_run(AUGMENT, 0, *sets, raw=raw)


_, augmented = augment()
_, not_augmented = augment("p=0")
check(close(steps(not_augmented), steps(unflipped), 1e-6) and
      not close(steps(augmented), steps(not_augmented), 1e-4),
      "rand_augment p 1 augments (other losses), p 0 trains as without it")
for variant in ("num_ops=1", "magnitude=3", "magnitude_std=0", "magnitude_max=5",
                "increasing=false", "fill=0", "interpolation=bilinear"):
    _, changed = augment(variant)
    check(not close(steps(changed), steps(augmented), 1e-5), f"rand_augment {variant} changes it")


def augment_config(config):  # the string alone (p from the string: p1)
    return augment(raw=[f"data.train_transforms=[{{name: rand_augment, config: {config}}}, "
                        "{name: normalize, mean: 0.5, std: 0.25}]"])


# A full string trains as the keys it names (runner's defaults are rand-m9-mstd0.5-inc1 + p);
# a string that leaves mstd out has no magnitude noise (timm's mstd0), whatever the key's default.
_, full_string = augment_config("rand-m9-mstd0.5-inc1-p1")
check(close(steps(full_string), steps(augmented), 1e-6),
      "config rand-m9-mstd0.5-inc1-p1 trains as num_ops 2, magnitude 9, magnitude_std 0.5, p 1")
_, no_mstd = augment_config("rand-m9-inc1-p1")
check(not close(steps(no_mstd), steps(full_string), 1e-5),
      "config rand-m9-inc1 (no mstd: timm's 0) trains otherwise than rand-m9-mstd0.5-inc1")
_, keyed_no_noise = augment("magnitude_std=0")
check(close(steps(no_mstd), steps(keyed_no_noise), 1e-6),
      "config rand-m9-inc1-p1 trains as the keys with magnitude_std 0")
_, other_string = augment_config("rand-m5-n3-mstd0-inc0")
check(not close(steps(other_string), steps(augmented), 1e-5), "config rand-m5-n3-mstd0-inc0 changes it")
_, resident_augmented = augment(raw=["data.device=cpu"])
check(close(steps(resident_augmented), steps(augmented), 1e-4),
      "rand_augment on the resident batched path (data.device cpu) augments alike")
code, out = run("run", [EXP, "--set", f"output.run_dir={os.path.join(tmp, 'floataug')}", "--set",
                        "data.train_transforms=[{name: normalize, mean: 0.5, std: 0.25}, {name: rand_augment}]"],
                expect=None)
check(code != 0 and "before normalize" in out,
      f"rand_augment after normalize: one line saying where it goes:\n{out[-600:]}")

# ---- runner show-batch: what the model sees -----------------------------------------------------
def show(*args, expect=0):
    png = os.path.join(tmp, f"shown{count[0]}.png")
    count[0] += 1
    code, out = run("show-batch", [EXP, "-o", png] + list(args), expect=expect)
    if code != 0:
        return out, None
    with open(png, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "show-batch writes a PNG")
    with open(png + ".json") as f:
        return out, json.load(f)


def shown_pixels(config):  # show-batch's PNG with the string as the only augmentation
    show("--set", f"data.train_transforms=[{{name: rand_augment, config: {config}}}, "
         "{name: normalize, mean: 0.5, std: 0.25}]")
    with open(os.path.join(tmp, f"shown{count[0] - 1}.png"), "rb") as f:
        return f.read()


check(shown_pixels("rand-m9-inc1") != shown_pixels("rand-m9-mstd0.5-inc1"),
      "show-batch draws other images for rand-m9-inc1 than for rand-m9-mstd0.5-inc1")
check(shown_pixels("rand-m9-inc1") == shown_pixels("rand-m9-inc1-mstd0-n2-p0.5-mmax10"),
      "show-batch: rand-m9-inc1 is rand-m9-inc1 with timm's defaults written out")

_, plain_batch = show("--count", "8")
check(len(plain_batch["samples"]) == 8 and all(
    "+" not in s_["caption"] and max(s_["target"]) == 1.0 for s_ in plain_batch["samples"]),
      f"without mixup each sample shows its class: {[s_['caption'] for s_ in plain_batch['samples']]}")
_, mixed_batch = show("--set", "train.mixup.mixup_alpha=0.8", "--set", "train.mixup.mode=elem")
samples = mixed_batch["samples"]
two_classes = [s_ for s_ in samples if "+" in s_["caption"]]
check(len(samples) == 16 and len(two_classes) >= 10 and
      all(sum(1 for v in s_["target"] if v > 0) == 2 for s_ in two_classes) and
      all(abs(sum(s_["target"]) - 1) < 1e-5 for s_ in samples),
      f"mixup per element: samples show their two classes, weights summing to 1: "
      f"{[s_['caption'] for s_ in samples]}")
# Each mixed sample says its own weight and its partner (issue 53, item 3): the caption
# "a x0.70 + b x0.30" and the JSON's lam, mode and mixed_with give the target's two weights.
mixed = [s_ for s_ in samples if s_["mode"] != "none" and s_["mixed_with"] != s_["label"]]
check(mixed and all(
    abs(s_["target"][s_["label"]] - s_["lam"]) < 1e-4 and
    abs(s_["target"][s_["mixed_with"]] - (1 - s_["lam"])) < 1e-4 and
    s_["mode"] == "mixup" and
    s_["caption"] == f"{s_['label']} x{s_['lam']:.2f} + {s_['mixed_with']} x{1 - s_['lam']:.2f}"
    for s_ in mixed), f"captions and JSON give each mix's weights: {mixed[:2]}")
_, cut = show("--set", "train.mixup.cutmix_alpha=1.0", "--set", "train.mixup.mode=elem")
check(any(s_["mode"] == "cutmix" and s_["caption"].endswith(" cutmix") for s_ in cut["samples"]),
      f"cutmix is named: {[s_['caption'] for s_ in cut['samples']]}")
_, again = show("--set", "train.mixup.mixup_alpha=0.8", "--set", "train.mixup.mode=elem")
check(again == mixed_batch, "show-batch shows the same batch for the same seed")
_, two_ranks = show("--set", "train.mixup.mixup_alpha=0.8", "--set", "train.mixup.mode=elem",
                    "--num-processes", "2")
check(two_ranks != mixed_batch, "with 2 processes it shows rank 0's own batch")
_, val_batch = show("--split", "val", "--set", "train.mixup.mixup_alpha=0.8")
check(all("+" not in s_["caption"] for s_ in val_batch["samples"]), "the val split is not mixed")
code, out = run("show-batch", [EXP, "-o", os.path.join(tmp, "no", "such", "folder", "b.png")],
                expect=None)
check(code == 1 and "b.png" in out and len(out.strip().splitlines()) <= 2,
      f"show-batch into a missing folder: one line naming the file:\n{out[-500:]}")
full = os.path.join(tmp, "full")
os.makedirs(full)
if os.getuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", full],
                                       capture_output=True).returncode == 0:
    try:
        code, out = run("show-batch", [EXP, "-o", os.path.join(full, "b.png")], expect=None)
        check(code == 1 and "b.png" in out and "No space left" in out and
              len(out.strip().splitlines()) <= 2 and not os.listdir(full),
              f"show-batch onto a full disk: one line, nothing half-written left:\n{out[-500:]}")
    finally:
        subprocess.run(["umount", full])
else:
    print("note: the full-disk case of show-batch needs root and a tmpfs mount: skipped")
check(os.path.exists(os.path.join(plain_ema, "batch.png")), "a run writes batch.png")
with open(os.path.join(plain_ema, "report.html")) as f:
    check("The first training batch" in f.read(), "report.html shows the first training batch")

# ---- bad input: exit 2, file:line, what to write ---------------------------------------------
for i, (yaml, expected) in enumerate((
        ("train: {mixup: {mixup_alpha: 0.8}, batch_size: 15}", "bad0.yaml:3"),
        ("train:\n  mixup: {cutmix_minmax: [0.8, 0.2]}", "with min < max"),
        ("train:\n  ema: {enabled: true, decay: 1.0}", "train.ema.decay"),
        ("train:\n  best: {weights: ema}", "train.ema.enabled: true"),
        ("train:\n  mixup: {mode: half}", "train.mixup.mode"),
        ("data:\n  train_transforms: [{name: rand_augment, config: rand-m9-xx}]", "rand-m9-mstd0.5-inc1"),
        ("data:\n  train_transforms:\n    - {name: rand_augment, config: rand-m9-inc1, magnitude_std: 0.5}",
         "magnitude_std: set beside config 'rand-m9-inc1', which covers it: write it into config as mstd0.5"))):
    bad = write(os.path.join(tmp, f"bad{i}.yaml"), f"# a bad recipe\nextends: recipe.yaml\n{yaml}\n")
    code, out = run("validate", [bad], expect=2)
    check(expected in out and f"bad{i}.yaml:" in out,
          f"{yaml}: exit 2 naming the file:line and {expected!r}:\n{out[-600:]}")

finish()
