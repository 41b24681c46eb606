#!/usr/bin/env python3
"""Reference outputs from the real timm (requirements.txt), for runner's timm parity test.

For every NAME given, into OUT:
  NAME.weights.safetensors   state_dict of timm.create_model(NAME, in_chans=1, num_classes=10),
                             every constant-initialised tensor re-randomised (so a tensor left
                             unloaded or loaded into the wrong place changes the outputs)
  NAME.shapeK.safetensors    for each input shape K: `input`, `eval_logits` (model.eval()),
                             `train_logits` (model.train(): BatchNorm on batch statistics),
                             `probe` and `input_grad_f64` = d(sum(train_logits * probe)) / d(input),
                             computed in float64
  NAME.adapt.safetensors     `rgb_weight` (a 3-channel first-conv weight) and
                             `adapted_inK` = timm's adapt_input_conv(K, rgb_weight), K = 1, 2, 4
and OUT/manifest.json: {"timm_version", "torch_version", "models": {NAME: {"first_conv",
"classifier", "shapes"}}, "unknown": [names timm does not have]}.
With --load-pretrained NAME...: NAME.in3c1000.safetensors (a random 3-channel, 1000-class
checkpoint) and NAME.pretrained.safetensors (`input`, `features`: pre-logits of the model timm's
own load_pretrained builds from that file with in_chans=1, num_classes=10).
"""
import argparse
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn
import timm
from timm.models._manipulate import adapt_input_conv
from safetensors.torch import save_file

SHAPES = [(2, 1, 56, 56), (3, 1, 37, 53)]  # square, and non-square with odd sizes


@torch.no_grad()
def randomize_trivial(model):
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0.0, 0.2)
            m.running_mean.normal_(0.0, 0.2)
            m.running_var.uniform_(0.5, 2.0)
        elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0.0, 0.2)
    for name, p in model.named_parameters():
        if name.endswith("gamma"):  # ConvNeXt layer scale: 1e-6 would make blocks identities
            p.uniform_(0.25, 1.0)
        elif name.endswith("bias") and torch.all(p == 0):
            p.normal_(0.0, 0.05)


def contiguous(d):
    return {k: v.detach().contiguous().clone() for k, v in d.items()}


def reference(name, out, seed):
    torch.manual_seed(seed)
    model = timm.create_model(name, pretrained=False, in_chans=1, num_classes=10)
    randomize_trivial(model)
    save_file(contiguous(model.state_dict()), os.path.join(out, f"{name}.weights.safetensors"))
    cfg = model.pretrained_cfg
    state = contiguous(model.state_dict())
    for k, shape in enumerate(SHAPES):
        model.load_state_dict(state)  # train mode updates the running statistics
        x = torch.randn(shape)
        model.eval()
        with torch.no_grad():
            eval_logits = model(x)
        model.train()
        xg = x.clone().requires_grad_(True)
        train_logits = model(xg)
        probe = torch.randn_like(train_logits)
        # The input gradient through train-mode BatchNorm on a batch of 2-3 is ill-conditioned:
        # timm's own float32 result moves by 5% between 1 and 2 threads (resnet50). Compare it in
        # float64, where only the architecture decides it.
        model64 = timm.create_model(name, pretrained=False, in_chans=1, num_classes=10).double()
        model64.load_state_dict(state)
        model64.train()
        x64 = x.double().requires_grad_(True)
        (model64(x64) * probe.double()).sum().backward()
        save_file(contiguous({"input": x, "eval_logits": eval_logits, "train_logits": train_logits,
                              "probe": probe, "input_grad_f64": x64.grad}),
                  os.path.join(out, f"{name}.shape{k}.safetensors"))
    rgb = torch.randn(8, 3, 3, 3)
    save_file({"rgb_weight": rgb, **{f"adapted_in{c}": adapt_input_conv(c, rgb.clone()).contiguous()
                                    for c in (1, 2, 4)}},
              os.path.join(out, f"{name}.adapt.safetensors"))
    from timm.models._registry import _model_default_cfgs
    return {"first_conv": cfg["first_conv"], "classifier": cfg["classifier"],
            "default_tag": _model_default_cfgs[name].tags[0],  # what pretrained=True loads
            "shapes": [list(s) for s in SHAPES]}


def pretrained_reference(name, out, seed):
    torch.manual_seed(seed)
    source = timm.create_model(name, pretrained=False)  # in_chans=3, num_classes=1000
    randomize_trivial(source)
    ckpt = os.path.join(out, f"{name}.in3c1000.safetensors")
    save_file(contiguous(source.state_dict()), ckpt)
    model = timm.create_model(name, pretrained=True, in_chans=1, num_classes=10,
                              pretrained_cfg_overlay=dict(file=ckpt))
    model.eval()
    x = torch.randn(2, 1, 56, 56)
    with torch.no_grad():
        features = model.forward_head(model.forward_features(x), pre_logits=True)
    save_file({"input": x, "features": features.contiguous()},
              os.path.join(out, f"{name}.pretrained.safetensors"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--from-runner", metavar="RUNNER",
                        help="also every backbone `RUNNER plugins models --json` lists")
    parser.add_argument("--load-pretrained", nargs="*", default=[])
    args = parser.parse_args()
    if args.from_runner:
        listed = subprocess.run([args.from_runner, "plugins", "models", "--json"], check=True,
                                capture_output=True, text=True).stdout
        args.names += [n for n in json.loads(listed) if n not in args.names]
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    known = set(timm.list_models())
    manifest = {"timm_version": timm.__version__, "torch_version": torch.__version__,
                "models": {}, "unknown": []}
    for i, name in enumerate(args.names):
        if name not in known:
            manifest["unknown"].append(name)
            continue
        manifest["models"][name] = reference(name, args.out, 1000 + i)
        if name in args.load_pretrained:
            pretrained_reference(name, args.out, 2000 + i)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
