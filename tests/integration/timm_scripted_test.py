#!/usr/bin/env python3
"""model.backbone: timm/<name> (issue 28) against the real timm, through the CLI.

- For each family below, `runner run` trains the scripted model 3 SGD steps on 20 images (one
  batch: the whole training split) and `runner export` writes its weights; timm eager, started
  from the same weights (the cached TorchScript file's) and trained the same way by PyTorch, ends
  with the same weights, and `runner predict` gives its class probabilities; the dry run's
  groups with optimizer.layer_decay are timm's param_groups_layer_decay's.
- A pretrained start (a 3-channel, 1000-class weights file; and `true` through a Hugging Face
  cache): runner's predictions are timm.create_model(..., pretrained=True)'s.
- `runner import` writes the cached file and its description; errors are one line, exit 2.
Usage: timm_scripted_test.py RUNNER SOURCE_DIR   (with the Python of requirements.txt)
"""
import glob
import json
import os
import re
import shutil
import sys
import tempfile

import torch
import torch.nn.functional as F
import timm
from safetensors.torch import load_file, save_file

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "tests", "timm"))
from make_timm_refs import randomize_trivial  # noqa: E402

from engine_lib import check, finish  # noqa: E402  (this folder)
# The same 20 PNGs, runner commands and prediction files as the native backbones' test.
from pretrained_test import MEAN, STD, make_images, predicted, run  # noqa: E402

LR, STEPS = 0.001, 2
# (name, create_model kwargs): one model per timm family file; drop_rate 0 everywhere (dropout
# draws differ between the two programs).
FAMILIES = [
    ("efficientnet_b0", {}),                                            # efficientnet.py
    ("mobilenetv3_small_100", {}),                                      # mobilenetv3.py
    ("regnety_002", {}),                                                # regnet.py
    ("convnextv2_atto", {}),                                            # convnext.py (v2)
    ("edgenext_xx_small", {}),                                          # edgenext.py
    ("resnext26ts", {}),                                                # byobnet.py
    ("vit_tiny_patch16_224", {"img_size": 32, "patch_size": 8}),        # vision_transformer.py
    ("deit_tiny_patch16_224", {"img_size": 32, "patch_size": 8}),       # deit.py
    ("rexnet_100", {}),                                                 # rexnet.py
    ("ghostnet_050", {}),                                               # ghostnet.py
    ("levit_128s", {"img_size": 32}),                                   # levit.py
    ("mobilevit_xxs", {}),                                              # mobilevit.py
]


def experiment(path, tmp, images, name, kwargs, pretrained="false", classes=10):
    with open(path, "w") as f:
        f.write(f"""name: scripted
seed: 0
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
precision: fp32
data:
  dataset: {{name: image_folder, root: {images}, test_root: {images}, mode: grayscale}}
  train_transforms: [{{name: normalize, mean: {MEAN}, std: {STD}}}]
  eval_transforms: [{{name: normalize, mean: {MEAN}, std: {STD}}}]
  num_workers: 0
model: {{backbone: timm/{name}, in_chans: 1, num_classes: {classes}, pretrained: {pretrained},
         kwargs: {json.dumps(dict(drop_rate=0.0, **kwargs))}}}
optimizer: {{name: sgd, lr: {LR}}}
scheduler: {{name: none}}
metrics: [{{name: accuracy}}]
train: {{epochs: {STEPS}, batch_size: 20, log_every_steps: 1, deterministic: true}}
predict: {{enabled: false, split: test, output: predictions.csv, format: csv}}
output: {{root: {tmp}/runs, tensorboard: false}}
""")


def replace_model_section(path, section):
    """The experiment file at `path` with `section` (one line) as its model: section."""
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace(text[text.index("model:"):text.index("optimizer:")], section + "\n"))


def the_cached_file(cache, name):
    files = sorted(glob.glob(os.path.join(cache, "timm", f"{name}-*.pt")))
    return files[-1] if files else None


def relative_gap(got, want):
    return ((got - want).abs().max() / max(want.abs().max().item(), 1e-6)).item()


def trained_parity(tmp, images, x, labels, name, kwargs):
    yaml = os.path.join(tmp, f"{name}.yaml")
    experiment(yaml, tmp, images, name, kwargs)
    code, text = run("run", yaml, "--set", f"output.run_dir={tmp}/runs/{name}")
    check(code == 0, f"{name}: runner run exits 0\n{text[-1500:]}")
    if code != 0:
        return
    cached = the_cached_file(os.environ["RUNNER_CACHE"], name)
    exported = os.path.join(tmp, f"{name}.safetensors")
    code, text = run("export", f"{tmp}/runs/{name}/checkpoints/last.pt", "--output", exported)
    check(code == 0, f"{name}: runner export exits 0\n{text[-1000:]}")
    out = os.path.join(tmp, f"{name}.csv")
    code, text = run("predict", yaml, "--checkpoint", f"{tmp}/runs/{name}/checkpoints/last.pt",
                     "--output", out, "--set", "predict.format=csv")
    check(code == 0, f"{name}: runner predict exits 0\n{text[-1000:]}")
    if code != 0 or not cached:
        return
    # timm eager from the same start, trained by PyTorch the same way.
    model = timm.create_model(name, in_chans=1, num_classes=10, drop_rate=0.0, **kwargs)
    # (TorchScript keeps timm's non-persistent buffers in its state_dict; timm's has not them.)
    start = {k: v.clone() for k, v in torch.jit.load(cached).state_dict().items()
             if k in model.state_dict()}
    model.load_state_dict(start, strict=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    model.train()
    eager_losses = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        eager_losses.append(loss.item())
    got = load_file(exported)
    want = model.state_dict()
    check(set(got) == set(want), f"{name}: exported names are timm's: {sorted(set(got) ^ set(want))[:5]}")
    # The change from the start against timm eager's, over all parameters (BatchNorm over a few
    # values amplifies float rounding from step to step: a 1e-7 change of the input moves single
    # tensors by their whole change, the whole by ~1e-4; a wrong gradient or a missed update moves
    # it by ~1).
    num = den = 0.0
    for k, w in want.items():
        if k in got and w.is_floating_point() and "running_" not in k:
            num += ((got[k].float() - w.float()) ** 2).sum().item()
            den += ((w.float() - start[k].float()) ** 2).sum().item()
    gap = (num / max(den, 1e-30)) ** 0.5
    check(gap < 2e-2, f"{name}: parameters after {STEPS} steps changed as timm eager's did "
                      f"(difference {gap:.2e} of the change)")
    losses = [r["loss"] for r in map(json.loads, open(f"{tmp}/runs/{name}/metrics.jsonl"))
              if r.get("kind") == "step"]
    loss_gap = max(abs(a - b) / abs(b) for a, b in zip(losses, eager_losses)) if losses else 1
    check(len(losses) == STEPS and loss_gap < 1e-3,
          f"{name}: the step losses are timm eager's: {losses} vs {eager_losses}")
    model.eval()
    with torch.no_grad():
        probs = F.softmax(model(x), dim=1)
    prob_gap = relative_gap(predicted(out), probs)
    check(prob_gap < 1e-3, f"{name}: runner predict's probabilities equal timm eager's "
                           f"(gap {prob_gap:.2e})")
    print(f"{name}: parameters within {gap:.1e} of the change, losses within {loss_gap:.1e}, "
          f"probabilities within {prob_gap:.1e}", flush=True)


GROUP_LINE = re.compile(r"group\s+(\d+) tensors?, (\d+) parameters, weight decay ([0-9.e+-]+), "
                        r"lr x ([0-9.e+-]+)")


def layer_decay_parity(tmp, images, name, kwargs):
    """optimizer.layer_decay on a timm/ model: the dry run's groups are timm's
    param_groups_layer_decay's (the layers timm found at the import, from the model's
    group_matcher or its auto grouping)."""
    yaml = os.path.join(tmp, f"{name}.yaml")
    experiment(yaml, tmp, images, name, kwargs)
    code, text = run("run", yaml, "--dry-run", "--set", "optimizer.name=adamw", "--set",
                     "optimizer.weight_decay=0.05", "--set", "optimizer.layer_decay=0.75")
    check(code == 0, f"{name}: the dry run with layer_decay exits 0\n{text[-1000:]}")
    ours = sorted((int(t), int(n), float(wd), float(lr))
                  for t, n, wd, lr in GROUP_LINE.findall(text))
    from timm.optim._param_groups import param_groups_layer_decay
    model = timm.create_model(name, in_chans=1, num_classes=10, drop_rate=0.0, **kwargs)
    theirs = sorted((len(g["params"]), sum(p.numel() for p in g["params"]), g["weight_decay"],
                     g["lr_scale"]) for g in param_groups_layer_decay(model, 0.05, layer_decay=0.75))
    # The dry run prints lr scales to 4 significant digits.
    same = len(ours) == len(theirs) and all(
        a[:3] == b[:3] and abs(a[3] - b[3]) <= 5e-4 * b[3] for a, b in zip(ours, theirs))
    check(same and len(ours) > 2,
          f"{name}: layer_decay's groups are timm's (tensors, parameters, weight decay, lr "
          f"scale):\n  runner {ours}\n  timm   {theirs}")


def autocast_channels_last(tmp, images, x, labels):
    """precision bf16 and train.channels_last on a scripted model: autocast reaches inside the
    TorchScript graph (the step losses are timm eager's under torch.autocast, not fp32's)."""
    name = "mobilenetv3_small_100"
    yaml = os.path.join(tmp, "bf16.yaml")
    experiment(yaml, tmp, images, name, {})
    code, text = run("run", yaml, "--set", f"output.run_dir={tmp}/runs/bf16", "--set",
                     "precision=bf16", "--set", "train.channels_last=true")
    check(code == 0, f"bf16 + channels_last: runner run exits 0\n{text[-1500:]}")
    cached = the_cached_file(os.environ["RUNNER_CACHE"], name)
    if code != 0 or not cached:
        return
    summary = json.load(open(f"{tmp}/runs/bf16/summary.json"))
    check(summary.get("precision") == "bf16", f"the run says it ran bf16: {summary.get('precision')}")
    runner_losses = [r["loss"] for r in map(json.loads, open(f"{tmp}/runs/bf16/metrics.jsonl"))
                     if r.get("kind") == "step"]

    def eager_losses(autocast):
        model = timm.create_model(name, in_chans=1, num_classes=10, drop_rate=0.0)
        model.load_state_dict({k: v for k, v in torch.jit.load(cached).state_dict().items()
                               if k in model.state_dict()})
        model = model.to(memory_format=torch.channels_last).train()
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        losses = []
        for _ in range(STEPS):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = F.cross_entropy(model(x.contiguous(memory_format=torch.channels_last)),
                                       labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    # bf16 rounding moves a random-init BatchNorm model's loss by ~1-2% whichever way the ops run
    # (eager contiguous vs channels_last differ as much), while fp32 runs agree to ~1e-7: the
    # first loss (before any update) must be near eager bf16's and clearly not fp32's.
    bf16, fp32 = eager_losses(True), eager_losses(False)
    near_bf16 = abs(runner_losses[0] - bf16[0]) / bf16[0] if runner_losses else 1
    off_fp32 = abs(runner_losses[0] - fp32[0]) / fp32[0] if runner_losses else 0
    check(len(runner_losses) == STEPS and near_bf16 < 5e-2 and off_fp32 > 1e-4,
          f"bf16 autocast reaches inside the scripted graph: first loss {runner_losses[:1]}, "
          f"eager bf16 {bf16[0]:.6f} (gap {near_bf16:.1e}), fp32 {fp32[0]:.6f} (gap {off_fp32:.1e})")
    print(f"bf16 + channels_last: first loss within {near_bf16:.1e} of eager autocast, "
          f"{off_fp32:.1e} from fp32", flush=True)


def pretrained_parity(tmp, images, x):
    # A 3-channel, 1000-class weights file, adapted to 1 channel by timm at import.
    torch.manual_seed(3)
    source = timm.create_model("efficientnet_b0")
    randomize_trivial(source)
    weights = os.path.join(tmp, "effb0.in3c1000.safetensors")
    save_file({k: v.contiguous() for k, v in source.state_dict().items()}, weights)
    reference = timm.create_model("efficientnet_b0", pretrained=True, in_chans=1, num_classes=1000,
                                  pretrained_cfg_overlay=dict(file=weights))
    yaml = os.path.join(tmp, "pretrained.yaml")
    experiment(yaml, tmp, images, "efficientnet_b0", {}, pretrained=weights, classes=1000)
    out = os.path.join(tmp, "pretrained.csv")
    code, text = run("predict", yaml, "--output", out, "--set", "predict.format=csv")
    check(code == 0, f"pretrained file: runner predict exits 0\n{text[-1500:]}")
    if code == 0:
        reference.eval()
        with torch.no_grad():
            gap = relative_gap(predicted(out), F.softmax(reference(x), dim=1))
        check(gap < 1e-3, f"pretrained file: probabilities equal timm's pretrained model ({gap:.2e})")

    # A file of the model's own size (a runner export, timm's own state_dict of that model):
    # loaded whole, classifier included, as timm's load_state_dict(strict=True) loads it (timm's
    # load_pretrained would drop the classifier: its class count is not the config's 1000).
    torch.manual_seed(4)
    own = timm.create_model("efficientnet_b0", in_chans=1, num_classes=10)
    randomize_trivial(own)
    own_file = os.path.join(tmp, "effb0.in1c10.safetensors")
    save_file({k: v.contiguous() for k, v in own.state_dict().items()}, own_file)
    whole = timm.create_model("efficientnet_b0", in_chans=1, num_classes=10)
    whole.load_state_dict(load_file(own_file), strict=True)
    whole.eval()
    experiment(yaml, tmp, images, "efficientnet_b0", {}, pretrained=own_file, classes=10)
    code, text = run("predict", yaml, "--output", out, "--set", "predict.format=csv")
    check(code == 0, f"pretrained file of the model's size: runner predict exits 0\n{text[-1500:]}")
    if code == 0:
        with torch.no_grad():
            gap = (predicted(out) - F.softmax(whole(x), dim=1)).abs().max().item()
        check(gap < 1e-5, f"a file of the model's own size loads whole, classifier kept "
                          f"(probabilities {gap:.2e} from timm's load_state_dict)")

    # pretrained: true reads timm's default tag from a Hugging Face cache, offline.
    hub = os.path.join(tmp, "hub")
    tag = timm.create_model("efficientnet_b0").pretrained_cfg["tag"]
    repo = os.path.join(hub, f"models--timm--efficientnet_b0.{tag}")
    os.makedirs(os.path.join(repo, "refs"))
    os.makedirs(os.path.join(repo, "snapshots", "0123abcd"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write("0123abcd")
    shutil.copy(weights, os.path.join(repo, "snapshots", "0123abcd", "model.safetensors"))
    experiment(yaml, tmp, images, "efficientnet_b0", {}, pretrained="true", classes=1000)
    code, text = run("predict", yaml, "--output", out, "--set", "predict.format=csv",
                     env={"HF_HUB_CACHE": hub, "HF_HUB_OFFLINE": "1"})
    check(code == 0, f"pretrained true: runner predict exits 0\n{text[-1500:]}")
    if code == 0:
        with torch.no_grad():
            gap = relative_gap(predicted(out), F.softmax(reference(x), dim=1))
        check(gap < 1e-3, f"pretrained true: probabilities equal timm's ({gap:.2e})")
    # An empty cache: one line naming the weights, exit 2.
    code, text = run("predict", yaml, "--output", out, "--set", "model.kwargs.drop_rate=0.1",
                     env={"HF_HUB_CACHE": os.path.join(tmp, "empty"), "HF_HUB_OFFLINE": "1"})
    check(code == 2 and "not in the Hugging Face cache" in text and text.count("error") == 1,
          f"pretrained true without cached weights: exit 2, one line\n{text[-1500:]}")


def load_file_from_run(tmp, name):
    exported = os.path.join(tmp, f"{name}.safetensors")
    code, text = run("export", f"{tmp}/runs/{name}/checkpoints/last.pt", "--output", exported)
    check(code == 0, f"{name}: runner export exits 0\n{text[-1000:]}")
    return load_file(exported) if code == 0 else {}


def two_ranks(tmp, images):
    """DDP through the reducer: 2 ranks x 10 images step as 1 process x 20 does (vit: no
    BatchNorm, whose statistics are per rank), and resuming the run continues from its checkpoint."""
    name = "vit_tiny_patch16_224"
    yaml = os.path.join(tmp, "ranks.yaml")
    experiment(yaml, tmp, images, name, {"img_size": 32, "patch_size": 8})
    one = load_file_from_run(tmp, name) if os.path.isdir(f"{tmp}/runs/{name}") else None
    code, text = run("run", yaml, "--set", f"output.run_dir={tmp}/runs/two", "--set",
                     "launch.num_processes=2", "--set", "train.batch_size=10")
    check(code == 0, f"2 ranks: runner run exits 0\n{text[-1500:]}")
    if code != 0 or one is None:
        return
    two = load_file_from_run(tmp, "two")
    gap = max((two[k] - v).abs().max().item() for k, v in one.items())
    check(gap < 1e-5, f"2 ranks x 10 images train as 1 process x 20 (largest difference {gap:.1e})")
    # (A run without validation: its history holds NaN, which the checkpoint stores as null.)
    code, text = run("run", "--resume", f"{tmp}/runs/two", "--set", "train.epochs=3")
    check(code == 0 and "resum" in text.lower(), f"resuming the 2-rank run\n{text[-1500:]}")
    steps = [r for r in map(json.loads, open(f"{tmp}/runs/two/metrics.jsonl")) if r.get("kind") == "step"]
    check([r["step"] for r in steps] == [1, 2, 3], f"the resumed run took step 3 only: {steps}")


def import_command(tmp, images):
    out = os.path.join(tmp, "lcnet.pt")
    code, text = run("import", "timm/lcnet_050", "--in-chans", "1", "--num-classes", "10",
                     "--set", "model.kwargs.drop_rate=0.0", "-o", out)
    check(code == 0 and os.path.isfile(out), f"runner import -o writes the file\n{text}")
    if code == 0:
        about = json.load(open(out + ".json"))
        check(about["name"] == "lcnet_050" and about["num_classes"] == 10 and
              about["timm_version"] == timm.__version__ and about["kwargs"] == {"drop_rate": 0.0},
              f"the description names the model, its arguments and timm's version: {about}")
        scripted = torch.jit.load(out)
        check(scripted(torch.zeros(2, 1, 32, 32)).shape == (2, 10), "the file is the model asked for")
        # model.backbone: torchscript trains a scripted file as it is.
        yaml = os.path.join(tmp, "file.yaml")
        experiment(yaml, tmp, images, "lcnet_050", {})
        replace_model_section(yaml, f"model: {{backbone: torchscript, path: {os.path.basename(out)}}}")
        code, text = run("run", yaml, "--set", f"output.run_dir={tmp}/runs/file")
        check(code == 0 and "model torchscript:" in text, f"backbone torchscript trains\n{text[-1500:]}")
        if code == 0:
            trained = load_file_from_run(tmp, "file")
            check(set(trained) == set(scripted.state_dict()) and any(
                  not torch.equal(trained[k], v) for k, v in scripted.state_dict().items()),
                  "the scripted file's parameters were trained (and checkpointed by its names)")
        # layer_decay: the description's layers; a file without them is one line, exit 2.
        code, text = run("run", yaml, "--dry-run", "--set", "optimizer.layer_decay=0.75")
        check(code == 0 and text.count("group ") > 2, f"torchscript + layer_decay: the file's "
                                                      f"layers\n{text[-1000:]}")
        bare = os.path.join(tmp, "bare")
        os.makedirs(bare, exist_ok=True)
        shutil.copy(out, os.path.join(bare, "lcnet.pt"))
        with open(yaml) as f:
            config = f.read().replace(os.path.basename(out), os.path.join(bare, "lcnet.pt"))
        bare_yaml = os.path.join(tmp, "bare.yaml")
        with open(bare_yaml, "w") as f:
            f.write(config)
        code, text = run("run", bare_yaml, "--dry-run", "--set", "optimizer.layer_decay=0.75")
        check(code == 2 and "has no layer grouping" in text and len(text.strip().splitlines()) <= 3,
              f"torchscript without a description + layer_decay: exit 2, one line\n{text[-800:]}")
        # A file that does not fit the data: one line before training, naming model.path.
        for args, expected in ((["--in-chans", "1", "--num-classes", "3"],
                                "gives 3 class scores but the dataset"),
                               (["--in-chans", "3"], "cannot take the training images (1x1x32x32")):
            wrong = os.path.join(tmp, "wrong.pt")
            code, text = run("import", "timm/lcnet_050", *args, "-o", wrong)
            with open(yaml) as f:
                config = f.read().replace(os.path.basename(out), os.path.basename(wrong))
            with open(os.path.join(tmp, "wrong.yaml"), "w") as f:
                f.write(config)
            code, text = run("run", os.path.join(tmp, "wrong.yaml"), "--set",
                             f"output.run_dir={tmp}/runs/wrong")
            check(code == 2 and expected in text and "model.path" in text and "wrong.pt" in text and
                  text.count("\n") == 1, f"torchscript {args}: exit 2, one line: {expected}\n{text}")
    # drop_path_rate: stochastic depth in train mode only, as timm's.
    outputs = {}
    for rate in ("0", "0.5"):
        path = os.path.join(tmp, f"droppath{rate}.pt")
        code, text = run("import", "timm/convnextv2_atto", "--in-chans", "1", "--num-classes", "10",
                         "--drop-path-rate", rate, "-o", path)
        check(code == 0, f"runner import --drop-path-rate {rate}\n{text}")
        if code == 0:
            m = torch.jit.load(path)
            m.train()
            batch = torch.randn(4, 1, 32, 32)
            with torch.no_grad():
                outputs[rate] = torch.equal(m(batch), m(batch))
                m.eval()
                check(torch.equal(m(batch), m(batch)), f"drop_path_rate {rate}: eval is deterministic")
    check(outputs == {"0": True, "0.5": False},
          f"drop_path_rate 0.5 makes train-mode outputs random, 0 does not: {outputs}")
    # Dropouts of probability 0 are identities in the file (TorchScript would draw and apply a
    # mask for each, +45% forward time on convnext_small); a real one stays.
    graphs = {}
    for rate in ("0.0", "0.3"):
        path = os.path.join(tmp, f"droprate{rate}.pt")
        code, text = run("import", "timm/convnextv2_atto", "--in-chans", "1", "--num-classes", "10",
                         "--set", f"model.kwargs.drop_rate={rate}", "-o", path)
        check(code == 0, f"runner import drop_rate {rate}\n{text}")
        if code == 0:
            graphs[rate] = "aten::dropout" in str(torch.jit.load(path).inlined_graph)
    check(graphs == {"0.0": False, "0.3": True},
          f"the scripted graph has a dropout only where its rate is not 0: {graphs}")
    code, text = run("import", "timm/no_such_model_x")
    check(code == 2 and "has no model 'no_such_model_x'" in text and text.count("\n") == 1,
          f"an unknown timm name: exit 2, one line\n{text}")
    code, text = run("import", "timm/resnet18", env={"RUNNER_PYTHON": "/nonexistent/python"})
    check(code == 2 and "RUNNER_PYTHON" in text and "make deps" in text,
          f"no Python environment: exit 2 saying how to get one\n{text}")


def sweep_and_auto_batch(tmp, images):
    """A sweep over model.backbone mixing a native and a timm/ name, and batch_size: auto on a
    scripted model (its trials run the scripted forward, backward and step)."""
    base = os.path.join(tmp, "sweep_base.yaml")
    experiment(base, tmp, images, "lcnet_050", {})
    replace_model_section(base, "model: {backbone: small_cnn, in_chans: 1, num_classes: 10}")
    code, text = run("run", base, "--set", "model.backbone=timm/*")
    check(code == 2 and "names no model" in text and text.count("\n") == 1,
          f"the family entry timm/* is not a model: exit 2, one line\n{text}")
    sweep = os.path.join(tmp, "backbones.yaml")
    with open(sweep, "w") as f:
        f.write(f"""base: sweep_base.yaml
output: {tmp}/sweeps
points:
  - {{model.backbone: small_cnn}}
  - {{model.backbone: timm/lcnet_050, train.batch_size: auto, train.auto_batch.max: 16,
     train.auto_batch.memory_budget_mb: 4000}}
""")
    code, text = run("sweep", sweep)
    check(code == 0, f"a sweep over small_cnn and timm/lcnet_050 exits 0\n{text[-2000:]}")
    summary = os.path.join(tmp, "sweeps", "backbones", "summary.csv")
    rows = open(summary).read().splitlines() if os.path.isfile(summary) else []
    check(len(rows) == 3 and any("lcnet_050" in r and r.endswith(",done") for r in rows),
          f"the sweep's summary has both points, the timm one named: {rows}")
    configs = glob.glob(os.path.join(tmp, "sweeps", "backbones", "*", "config.yaml"))
    chosen = [line.split()[1] for c in configs for line in open(c)
              if line.startswith("  batch_size: ") and "lcnet" in open(c).read()]
    check(chosen == ["16"] and "auto batch size:" in text,
          f"batch_size auto on timm/lcnet_050 reaches the cap 16 with a large budget: {chosen}")


def main():
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="runner_scripted_")
    os.environ["RUNNER_CACHE"] = os.path.join(tmp, "cache")
    try:
        images = os.path.join(tmp, "images")
        x, labels = make_images(images)
        only = sys.argv[3:]  # families (or pretrained, import) to run alone, when debugging
        for name, kwargs in FAMILIES:
            if not only or name in only:
                trained_parity(tmp, images, x, labels, name, kwargs)
                layer_decay_parity(tmp, images, name, kwargs)
        if not only or "bf16" in only:
            autocast_channels_last(tmp, images, x, labels)
        if not only or "pretrained" in only:
            pretrained_parity(tmp, images, x)
        if not only or "ranks" in only:
            two_ranks(tmp, images)
        if not only or "import" in only:
            import_command(tmp, images)
        if not only or "sweep" in only:
            sweep_and_auto_batch(tmp, images)
    finally:
        finish()
        shutil.rmtree(tmp, ignore_errors=True)


main()
