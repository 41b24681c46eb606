"""data.device (issue 27): every split decoded once into one uint8 tensor, batches picked from it and
augmented whole by the transforms' batched forms, against the per-sample loader path on 2 ranks.
Same seed: the same draws per sample, so the same training up to resize's one-level rounding.
auto on a CPU run: the loader.
Errors: a transform without a batched form, data.device cuda without CUDA (exit 2, one line).
Usage: engine_data_device_test.py RUNNER SOURCE_DIR"""
import json
import os

from engine_lib import check, finish, metrics, only_run_dir, ranks_args, run, tmpdir, write

CONFIG = """
name: device
seed: 5
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 256, val_size: 63, test_size: 37, height: 16, width: 16, noise: 0.5}
  train_transforms:
    - {name: horizontal_flip, p: 0.5}
    - {name: vertical_flip, p: 0.5}
    - {name: random_rotate90, p: 0.5}
    - {name: random_brightness_contrast, p: 0.5}
    - {name: resize, height: 24, width: 24, interpolation: lanczos4}
    - {name: normalize, mean: 0.5, std: 0.25}
  eval_transforms:
    - {name: resize, height: 24, width: 24, interpolation: lanczos4}
    - {name: normalize, mean: 0.5, std: 0.25}
  num_workers: 1
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: sgd, lr: 0.05}
scheduler: {name: none}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: 16, max_steps: 8, log_every_steps: 1, deterministic: true}
predict: {enabled: true, format: csv, output: predictions.csv}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "device.yaml"), CONFIG)
losses, evals, made_on, predictions = {}, {}, {}, {}
for device in ("loader", "cpu", "auto"):
    root = os.path.join(tmp, device)
    run("run", [exp, "--set", f"output.root={root}", "--set", f"data.device={device}"] + ranks_args(2))
    run_dir = only_run_dir(root, "device")
    losses[device] = [r["loss"] for r in metrics(run_dir, "step")]
    evals[device] = metrics(run_dir, "epoch")[-1]
    with open(os.path.join(run_dir, "predictions.csv")) as f:
        predictions[device] = [line.split(",") for line in f.read().splitlines()[1:]]
    made_on[device] = json.load(open(os.path.join(run_dir, "summary.json")))["train_loader"]["batches_made_on"]

check(made_on == {"loader": "loader", "cpu": "cpu", "auto": "loader"},
      f"summary.json train_loader.batches_made_on: loader, cpu, and auto on a CPU run: {made_on}")
check(len(losses["cpu"]) == 8 and losses["auto"] == losses["loader"], f"step records: {losses}")
# One u8 level of resize rounding in a minority of pixels moves the losses by far less than a
# different augmentation would.
worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(losses["cpu"], losses["loader"]))
check(worst < 2e-3, f"batched and per-sample training differ by {worst}: {losses['cpu']} vs {losses['loader']}")
check(abs(evals["cpu"]["val_loss"] - evals["loader"]["val_loss"]) < 2e-3,
      f"validation on the resident split: {evals['cpu']} vs {evals['loader']}")

# The sampler's order and gather_for_metrics are the loader path's: 63 validation and 37 test
# samples on 2 ranks pad each rank's last batch; the gathered predictions drop the padding and keep
# the split's order, so the prediction file has one row per test sample, in order, with the loader
# run's probabilities (to one resize level's rounding).
check([row[0] for row in predictions["cpu"]] == [str(i) for i in range(37)],
      f"predictions.csv index column under data.device cpu: {[row[0] for row in predictions['cpu']]}")
prob_gap = max(abs(float(a) - float(b)) for ra, rb in zip(predictions["cpu"], predictions["loader"])
               for a, b in zip(ra[2:], rb[2:]))
check(len(predictions["cpu"]) == len(predictions["loader"]) and prob_gap < 2e-3,
      f"predicted probabilities differ between the paths by {prob_gap}")

code, out = run("run", [exp, "--set", f"output.root={tmp}/crop", "--set", "data.device=cpu", "--set",
                        "data.train_transforms=[{name: shift_scale_rotate, border_mode: wrap}]"],
                expect=2)
check("data.train_transforms[0] shift_scale_rotate has no batched form with border_mode wrap" in out
      and out.count("error") == 1,
      f"a transform without a batched form: exit 2, one line naming it\n{out[-800:]}")
if not os.path.exists("/dev/nvidia0"):
    code, out = run("run", [exp, "--set", f"output.root={tmp}/cuda", "--set", "data.device=cuda"], expect=2)
    check("data.device is cuda but no CUDA device" in out and "--cpu" in out and out.count("error") == 1,
          f"data.device cuda without CUDA: exit 2, one line naming --cpu\n{out[-800:]}")
finish()
