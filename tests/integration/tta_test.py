#!/usr/bin/env python3
"""`predict.tta` and `train.eval_tta` as a user meets them (issue 52, item 5), against timm.

- runner predict with timm's resnet10t weights and predict.tta [hflip, vflip, scales 0.8 and
  1.25] gives, per image, the mean of the softmax of timm's model over the image and those four
  views (flips by torch.flip, scales by F.interpolate bilinear, align_corners False), within 1e-4
  of the largest probability; without tta the plain softmax; --input FOLDER averages the same;
- train.eval_tta: the same training (same step losses) validates on other logits (another
  val_loss);
- refused in one line at the key's file:line by validate, --dry-run and run (no folder): a scale the model cannot take
  (convnext_atto given 8 px), train.eval_tta without predict.tta.
Usage: tta_test.py RUNNER SOURCE_DIR   (with the Python of requirements.txt)
"""
import csv
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "tests", "timm"))
from engine_lib import check, finish, metrics  # noqa: E402  (this folder)
from pretrained_test import experiment, make_images, predicted, run, timm_model  # noqa: E402

VIEWS = "[hflip, vflip, {name: scales, factors: [0.8, 1.25]}]"


def tta_reference(model, x):
    """The mean of softmax over the images and runner's four views."""
    size = lambda s, f: int(s * f + 0.5)  # noqa: E731  floor(size x factor + 0.5)
    views = [x, torch.flip(x, [3]), torch.flip(x, [2])]
    for f in (0.8, 1.25):
        views.append(F.interpolate(x, size=(size(x.shape[2], f), size(x.shape[3], f)),
                                   mode="bilinear", align_corners=False))
    with torch.no_grad():
        return torch.stack([F.softmax(model(v), dim=1) for v in views]).mean(0)


def relative_error(got, want):
    if got.shape != want.shape:
        return float("inf")
    return ((got - want).abs().max() / want.abs().max()).item()


def main():
    tmp = tempfile.mkdtemp(prefix="runner_tta_")
    images = os.path.join(tmp, "images")
    x, _ = make_images(images)
    model = timm_model("resnet10t", 0, in_chans=1, num_classes=10).eval()
    weights = os.path.join(tmp, "resnet10t.safetensors")
    save_file(model.state_dict(), weights)
    yaml = os.path.join(tmp, "tta.yaml")
    experiment(yaml, tmp, images, weights, backbone="resnet10t")

    plain, tta = os.path.join(tmp, "plain.csv"), os.path.join(tmp, "tta.csv")
    code, text = run("predict", yaml, "--output", plain)
    check(code == 0, f"runner predict exits 0: {text[-1500:]}")
    code, text = run("predict", yaml, "--output", tta, "--set", f"predict.tta={VIEWS}")
    check(code == 0, f"runner predict with predict.tta exits 0: {text[-1500:]}")
    if code == 0:
        with torch.no_grad():
            softmax = F.softmax(model(x), dim=1)
        want = tta_reference(model, x)
        err = relative_error(predicted(tta), want)
        check(err <= 1e-4, f"TTA probabilities are timm's mean of softmax over the 5 views "
                           f"(max error {err:.2e})")
        check(relative_error(predicted(plain), softmax) <= 1e-4, "without tta: timm's softmax")
        check(relative_error(want, softmax) > 1e-2, "the views change the probabilities")
        # --input FOLDER: the same average per file.
        folder_out = os.path.join(tmp, "folder.csv")
        code, text = run("predict", yaml, "--input", os.path.join(images, "3"), "--output",
                         folder_out, "--set", f"predict.tta={VIEWS}")
        rows = list(csv.DictReader(open(folder_out))) if os.path.exists(folder_out) else []
        got = torch.tensor([[float(r[f"prob_{c}"]) for c in range(10)] for r in rows])
        err = relative_error(got, want[6:8])  # class 3's two images, in file order
        check(code == 0 and err <= 1e-4, f"--input averages the views too ({err:.2e}) {text[-800:]}")

    # train.eval_tta: the same training, validated on the views' average.
    losses, val = {}, {}
    for flag in ("false", "true"):
        run_dir = os.path.join(tmp, f"eval_tta_{flag}")
        code, text = run("run", yaml, "--set", f"output.run_dir={run_dir}", "--set",
                         f"predict.tta={VIEWS}", "--set", f"train.eval_tta={flag}", "--set",
                         "predict.enabled=false")
        check(code == 0, f"run with train.eval_tta {flag}: {text[-1500:]}")
        if code == 0:
            losses[flag] = [r["loss"] for r in metrics(run_dir, "step")]
            val[flag] = [r["val_loss"] for r in metrics(run_dir, "epoch")]
    if len(losses) == 2:
        check(losses["true"] == losses["false"] and val["true"] != val["false"],
              f"eval_tta changes validation only: steps {losses}, val_loss {val}")

    # Refused at validate, at the key.
    cases = (
        (["--set", "model.backbone=convnext_atto", "--set", "model.pretrained=false", "--set",
          "predict.tta=[{name: scales, factors: [0.25]}]"], "--set predict.tta=",
         "predict.tta scale 0.25 gives the model images of 1x1x8x8, which it cannot take"),
        (["--set", "train.eval_tta=true"], "--set train.eval_tta=true",
         "train.eval_tta: averages predict.tta's views in validation, but predict.tta lists none"),
    )
    refused = os.path.join(tmp, "refused")
    for args, where, says in cases:
        for command in (["validate"], ["run", "--dry-run"], ["run"]):
            code, text = run(command[0], yaml, *command[1:], *args, "--set",
                             f"output.root={refused}")
            lines = [t for t in text.strip().splitlines() if t.strip() and "warning" not in t]
            check(code == 2 and where in text and says in text and len(lines) == 1 and
                  not os.path.exists(refused),
                  f"runner {' '.join(command)} {' '.join(args)}: exit 2, one line at {where!r} "
                  f"saying {says!r}, no folder: {code} {text}")
    finish()


if __name__ == "__main__":
    main()
