#!/usr/bin/env python3
"""`model.pretrained` as a user meets it, against the real timm (issue 13).

- `runner predict` from a timm checkpoint file (1-channel/10-class, and 3-channel/1000-class
  adapted to 1 channel) gives timm's class probabilities on the same images;
- `pretrained: true` and `pretrained: hf-hub:timm/<model>.<tag>` read a Hugging Face cache laid
  out as timm/`hf download` leave it; an empty cache is exit 2 naming the path looked for;
- `runner run` on 1 and 2 CPU ranks: the first step's loss is timm's loss on the same batch, so
  every rank started from the file;
- a runner run folder or its checkpoint .pt as the weights: the run's own predictions; weights
  of another backbone, a Python torch.save file or an empty folder: `runner validate` exit 2 in
  one line at the key's file:line.
Usage: pretrained_test.py RUNNER SOURCE_DIR   (with the Python of requirements.txt)
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import timm
from PIL import Image
from safetensors.torch import save_file

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "tests", "timm"))
from make_timm_refs import randomize_trivial  # noqa: E402

from engine_lib import check, finish, metrics  # noqa: E402  (this folder)

MEAN, STD = 0.5, 0.25
def make_images(root, per_class=2, size=32):
    """root/<class>/<i>.png, grayscale; returns the batch timm sees, in runner's dataset order."""
    rng = np.random.default_rng(0)
    pixels, labels = [], []
    for c in range(10):
        os.makedirs(os.path.join(root, str(c)))
        for i in range(per_class):
            img = rng.integers(0, 256, (size, size), dtype=np.uint8)
            Image.fromarray(img).save(os.path.join(root, str(c), f"{i}.png"))
            pixels.append(img)
            labels.append(c)
    x = torch.from_numpy(np.stack(pixels)).float().unsqueeze(1)
    return (x / 255.0 - MEAN) / STD, torch.tensor(labels)


def experiment(path, tmp, images, pretrained, backbone="convnext_atto", classes=10, predict=True):
    with open(path, "w") as f:
        f.write(f"""name: pretrained_check
seed: 0
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: image_folder, root: {images}, test_root: {images}, mode: grayscale, val_split: 10}}
  train_transforms: [{{name: normalize, mean: {MEAN}, std: {STD}}}]
  eval_transforms: [{{name: normalize, mean: {MEAN}, std: {STD}}}]
  num_workers: 0
model: {{backbone: {backbone}, in_chans: 1, num_classes: {classes}, pretrained: {pretrained}}}
optimizer: {{name: sgd, lr: 0.01}}
scheduler: {{name: none}}
train: {{epochs: 1, batch_size: 10, log_every_steps: 1, max_steps: 1}}
predict: {{enabled: {str(predict).lower()}, split: test, output: predictions.csv, format: csv}}
output: {{root: {tmp}/runs, tensorboard: false}}
""")


def run(*args, env=None):
    p = subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    return p.returncode, p.stdout + p.stderr


def predicted(csv_path):
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    n = sum(1 for k in rows[0] if k.startswith("prob_"))
    return torch.tensor([[float(r[f"prob_{c}"]) for c in range(n)] for r in rows])


def compare_predict(name, yaml, reference_model, x, env=None):
    out = os.path.join(os.path.dirname(yaml), name + ".csv")
    code, text = run("predict", yaml, "--output", out, env=env)
    check(code == 0, f"{name}: runner predict exits 0")
    if code != 0:
        print(text[-2000:])
        return text
    check("pretrained weights: loaded" in text, f"{name}: the main process logs what it loaded")
    reference_model.eval()
    with torch.no_grad():
        want = F.softmax(reference_model(x), dim=1)
    got = predicted(out)
    err = ((got - want).abs().max() / want.abs().max()).item()
    check(got.shape == want.shape and err <= 1e-4,
          f"{name}: probabilities equal timm's (max error {err:.2e} of the largest)")
    return text


def timm_model(name, seed, **kwargs):
    torch.manual_seed(seed)
    m = timm.create_model(name, **kwargs)
    randomize_trivial(m)
    return m


def from_run(tmp, images, yaml, run_dir):
    last = os.path.join(run_dir, "checkpoints", "last.pt")
    if not os.path.exists(last):
        check(False, f"{run_dir} kept checkpoints/last.pt for the runs-as-weights checks")
        return
    own = os.path.join(tmp, "own.csv")
    code, text = run("predict", run_dir, "--output", own)
    check(code == 0, f"runner predict of the run itself exits 0\n{text[-1500:]}")
    best = os.path.join(run_dir, "checkpoints", "best.pt")
    for value, taken in ((run_dir, best if os.path.exists(best) else last), (last, last)):
        experiment(yaml, tmp, images, value)
        out = os.path.join(tmp, "from_run.csv")
        code, text = run("predict", yaml, "--output", out)
        check(code == 0, f"pretrained: {value}: runner predict exits 0\n{text[-1500:]}")
        if code != 0:
            continue
        check(f"pretrained weights: loaded" in text and f"from {taken}" in text,
              f"pretrained: {value}: the log names the checkpoint it took ({taken}): "
              + "".join(l for l in text.splitlines(True) if "pretrained" in l))
        gap = (predicted(out) - predicted(own)).abs().max().item()
        check(gap <= 1e-6, f"pretrained: {value}: the run's own predictions ({gap:.1e})")
    # Refused by runner validate, in one line at the key's file:line, before anything runs.
    torch_saved = os.path.join(tmp, "python_state_dict.pt")
    torch.save(timm.create_model("convnext_atto", in_chans=1, num_classes=10).state_dict(),
               torch_saved)
    empty = os.path.join(tmp, "empty_folder")
    os.makedirs(empty)
    for value, backbone, says in (
            (run_dir, "resnet10t", "do not fit the model"),
            (torch_saved, "convnext_atto", "safetensors.torch.save_file"),
            (empty, "convnext_atto", "holds no model.safetensors and no checkpoints/best.pt")):
        experiment(yaml, tmp, images, value, backbone)
        code, text = run("validate", yaml)
        lines = [l for l in text.strip().splitlines() if "[warning]" not in l]
        check(code == 2 and says in text and "exp.yaml:" in text and "model.pretrained" in text
              and len(lines) == 1,
              f"validate with pretrained {os.path.basename(value)} on {backbone}: exit 2, one "
              f"line at file:line saying '{says}' ({code}: {lines})")


def main():
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="runner_pretrained_")
    try:
        images = os.path.join(tmp, "images")
        x, labels = make_images(images)
        yaml = os.path.join(tmp, "exp.yaml")

        # 1. Checkpoints of the model's own shape (1 channel, 10 classes).
        for backbone in ("convnext_atto", "resnet10t"):
            model = timm_model(backbone, 1, in_chans=1, num_classes=10)
            weights = os.path.join(tmp, f"{backbone}.in1c10.safetensors")
            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
            experiment(yaml, tmp, images, weights, backbone)
            compare_predict(f"{backbone} in1c10", yaml, model, x)

        # 2. A 3-channel, 1000-class checkpoint: the first conv adapted as timm does.
        source = timm_model("convnext_atto", 2)
        in3 = os.path.join(tmp, "convnext_atto.in3c1000.safetensors")
        save_file({k: v.contiguous() for k, v in source.state_dict().items()}, in3)
        adapted = timm.create_model("convnext_atto", pretrained=True, in_chans=1, num_classes=1000,
                                    pretrained_cfg_overlay=dict(file=in3))
        experiment(yaml, tmp, images, in3, classes=1000)
        text = compare_predict("convnext_atto in3c1000 adapted", yaml, adapted, x)
        check("first conv adapted from 3 to 1 channel(s)" in text, "the log says the conv was adapted")
        # 10 classes: the classifier stays fresh, and the log says so.
        experiment(yaml, tmp, images, in3, classes=10)
        code, text = run("predict", yaml, "--output", os.path.join(tmp, "fresh.csv"))
        check(code == 0 and "classifier left at its fresh init (1000 -> 10 classes)" in text,
              "a 1000-class checkpoint in a 10-class model keeps the fresh classifier, and says so")

        # 3. The Hugging Face cache: true (timm's default tag) and hf-hub: names.
        cache = os.path.join(tmp, "hub")
        repo = os.path.join(cache, "models--timm--convnext_atto.d2_in1k")
        os.makedirs(os.path.join(repo, "refs"))
        os.makedirs(os.path.join(repo, "snapshots", "0123abcd"))
        with open(os.path.join(repo, "refs", "main"), "w") as f:
            f.write("0123abcd")
        shutil.copy(in3, os.path.join(repo, "snapshots", "0123abcd", "model.safetensors"))
        for value in ("true", "hf-hub:timm/convnext_atto.d2_in1k"):
            experiment(yaml, tmp, images, value, classes=1000)
            compare_predict(f"pretrained: {value}", yaml, adapted, x, env={"HF_HUB_CACHE": cache})
        empty = os.path.join(tmp, "empty_hub")
        os.makedirs(empty)
        experiment(yaml, tmp, images, "true", classes=1000)
        code, text = run("predict", yaml, env={"HF_HUB_CACHE": empty})
        looked = os.path.join(empty, "models--timm--convnext_atto.d2_in1k", "refs", "main")
        check(code == 2 and looked in text and "hf download timm/convnext_atto.d2_in1k" in text,
              "an empty cache: exit 2 naming the path and the command that fills it")
        check(len(text.strip().splitlines()) == 1, "... in one line: " + text.strip()[:300])
        code, text = run("run", yaml, env={"HF_HUB_CACHE": empty})
        check(code == 2 and looked in text and "exp.yaml:" in text,
              "runner run with missing weights: exit 2 before training, with file:line")

        # 4. runner run: the first step's loss is timm's on the same batch (1 and 2 ranks).
        model = timm_model("convnext_atto", 3, in_chans=1, num_classes=10)
        weights = os.path.join(tmp, "start.safetensors")
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
        model.train()
        with torch.no_grad():
            want = F.cross_entropy(model(x[:10]), labels[:10]).item()
        for ranks, batch in ((1, 10), (2, 5)):
            run_dir = os.path.join(tmp, f"run{ranks}")
            experiment(yaml, tmp, images, weights, predict=False)
            code, text = run("run", yaml, "--set", f"launch.num_processes={ranks}",
                             "--set", "launch.master_port=0", "--set",
                             f"train.batch_size={batch}", "--set", f"output.run_dir={run_dir}")
            check(code == 0, f"runner run on {ranks} rank(s) exits 0")
            if code != 0:
                print(text[-2000:])
                continue
            steps = metrics(run_dir, "step")
            got = steps[0]["loss"] if steps else float("nan")
            check(abs(got - want) <= 1e-4 * max(1.0, abs(want)),
                  f"{ranks} rank(s): first-step loss {got:.6f} equals timm's {want:.6f}")

        # 5. A runner run as the start (issue 51): its folder or checkpoint, never a safetensors
        # error. run1 ended at max_steps 1, before any validation: no best.pt, so last.pt.
        from_run(tmp, images, yaml, os.path.join(tmp, "run1"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()  # exits 1 when a check failed
    return 0


if __name__ == "__main__":
    sys.exit(main())
