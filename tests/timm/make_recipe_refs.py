#!/usr/bin/env python3
"""Reference outputs of timm's own training-recipe code (requirements.txt), for runner's recipe
parity test (tests/unit/recipe).

Into OUT:
  mixup_K.safetensors   one call of timm.data.mixup.Mixup: `x` and `target` in, `x_out` and
                        `target_out` out, and every random number numpy gave it, in call order
                        per kind: `uniforms` (np.random.rand), `betas` (np.random.beta),
                        `randints` (np.random.randint)
  ema_K.safetensors     timm.utils.model_ema.ModelEmaV3 on nn.Sequential(Linear(6, 5),
                        BatchNorm1d(5), Linear(5, 3)): the model's state at each of 20 steps
                        (`stepS.NAME`) and the average after them (`ema.NAME`)
  erasing_K.safetensors timm.data.random_erasing.RandomErasing (mode const) on a batch: `x` in,
                        `x_out` out, and its draws: `randoms` (random.random), `uniforms`
                        (random.uniform), `randints` (random.randint)
and OUT/manifest.json: {"timm_version", "mixup": [{"file", "options"}], "ema": [...],
"erasing": [...], "groups": {MODEL: {NAME: [weight_decay, lr_scale, layer_decay_weight_decay]}}}:
the parameter groups of timm's param_groups_weight_decay (weight decay 0.05) and
param_groups_layer_decay (0.05, layer_decay 0.75) of timm.create_model(MODEL, in_chans=1,
num_classes=10), per parameter name.
Usage: make_recipe_refs.py OUT
"""
import json
import os
import random
import sys

import numpy as np
import torch
import torch.nn as nn
import timm
from timm.data.mixup import Mixup
from timm.data.random_erasing import RandomErasing
from timm.utils.model_ema import ModelEmaV3
from safetensors.torch import save_file

MIXUP_CASES = [
    {"mixup_alpha": 0.8, "cutmix_alpha": 0.0},
    {"mixup_alpha": 0.0, "cutmix_alpha": 1.0},
    {"mixup_alpha": 0.8, "cutmix_alpha": 1.0, "label_smoothing": 0.1},
    {"mixup_alpha": 0.0, "cutmix_alpha": 1.0, "correct_lam": False},
    {"mixup_alpha": 0.0, "cutmix_alpha": 0.0, "cutmix_minmax": [0.2, 0.8]},
    {"mixup_alpha": 0.8, "cutmix_alpha": 1.0, "prob": 0.5, "switch_prob": 0.3},
]
EMA_CASES = [
    {"decay": 0.9},
    {"decay": 0.999, "warmup": True, "warmup_gamma": 1.0, "warmup_power": 0.75, "min_decay": 0.2},
    {"decay": 0.9, "exclude_buffers": True},
    {"decay": 0.8, "update_after_step": 3},
]


class Recorder:
    """Wraps numpy's draws that timm's mixup makes, recording what they return."""

    def __init__(self):
        self.uniforms, self.betas, self.randints = [], [], []
        self.rand, self.beta, self.randint = np.random.rand, np.random.beta, np.random.randint

    def __enter__(self):
        def rand(*a, **k):
            v = self.rand(*a, **k)
            self.uniforms += list(np.ravel(v).astype(np.float64))
            return v

        def beta(*a, **k):
            v = self.beta(*a, **k)
            self.betas += list(np.ravel(v).astype(np.float64))
            return v

        def randint(*a, **k):
            v = self.randint(*a, **k)
            self.randints += list(np.ravel(v).astype(np.int64))
            return v

        np.random.rand, np.random.beta, np.random.randint = rand, beta, randint
        return self

    def __exit__(self, *exc):
        np.random.rand, np.random.beta, np.random.randint = self.rand, self.beta, self.randint


def mixup_refs(out):
    cases = []
    k = 0
    for mode in ("batch", "pair", "elem"):
        for options in MIXUP_CASES:
            for repeat in range(3):  # different draws for the same options
                np.random.seed(100 + k)
                torch.manual_seed(100 + k)
                x = torch.randn(8, 3, 12, 10)
                target = torch.randint(0, 10, (8,))
                kwargs = dict(mixup_alpha=options["mixup_alpha"], cutmix_alpha=options["cutmix_alpha"],
                              cutmix_minmax=options.get("cutmix_minmax"), prob=options.get("prob", 1.0),
                              switch_prob=options.get("switch_prob", 0.5), mode=mode,
                              correct_lam=options.get("correct_lam", True),
                              label_smoothing=options.get("label_smoothing", 0.0), num_classes=10)
                mixup = Mixup(**kwargs)
                with Recorder() as r:
                    x_out, target_out = mixup(x.clone(), target.clone())
                name = f"mixup_{k}.safetensors"
                save_file({"x": x, "target": target, "x_out": x_out.contiguous(),
                           "target_out": target_out.float().contiguous(),
                           "uniforms": torch.tensor(r.uniforms, dtype=torch.float64).reshape(-1),
                           "betas": torch.tensor(r.betas, dtype=torch.float64).reshape(-1),
                           "randints": torch.tensor(r.randints, dtype=torch.int64).reshape(-1)},
                          os.path.join(out, name))
                cases.append({"file": name, "options": dict(options, mode=mode)})
                k += 1
    return cases


def ema_refs(out):
    cases = []
    for k, options in enumerate(EMA_CASES):
        torch.manual_seed(7 + k)
        model = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 3))
        ema = ModelEmaV3(model, decay=options["decay"], min_decay=options.get("min_decay", 0.0),
                         update_after_step=options.get("update_after_step", 0),
                         use_warmup=options.get("warmup", False),
                         warmup_gamma=options.get("warmup_gamma", 1.0),
                         warmup_power=options.get("warmup_power", 2 / 3),
                         exclude_buffers=options.get("exclude_buffers", False))
        tensors = {}
        for step in range(1, 21):
            with torch.no_grad():  # a training step's change, buffers included
                for name, v in model.state_dict().items():
                    if v.is_floating_point():
                        v.add_(torch.randn_like(v) * 0.1)
                    else:
                        v.add_(1)
            for name, v in model.state_dict().items():
                tensors[f"step{step}.{name}"] = v.clone().contiguous()
            ema.update(model, step=step)
        for name, v in ema.module.state_dict().items():
            tensors[f"ema.{name}"] = v.clone().contiguous()
        name = f"ema_{k}.safetensors"
        save_file(tensors, os.path.join(out, name))
        cases.append({"file": name, "options": options})
    return cases


ERASING_CASES = [
    {},
    {"max_count": 3},
    {"min_aspect": 0.5, "max_aspect": 3.0, "min_area": 0.1, "max_area": 0.6, "probability": 0.8},
    {"min_count": 2, "max_count": 4, "probability": 1.0},
]


def erasing_refs(out):
    cases = []
    for k, options in enumerate(ERASING_CASES):
        random.seed(300 + k)
        torch.manual_seed(300 + k)
        x = torch.randn(24, 3, 23, 17)
        erasing = RandomErasing(mode="const", device="cpu", **options)
        draws = {"random": [], "uniform": [], "randint": []}
        originals = {name: getattr(random, name) for name in draws}

        def recording(name):
            def call(*a, **kw):
                v = originals[name](*a, **kw)
                draws[name].append(v)
                return v
            return call

        for name in draws:
            setattr(random, name, recording(name))
        try:
            x_out = erasing(x.clone())
        finally:
            for name, f in originals.items():
                setattr(random, name, f)
        name = f"erasing_{k}.safetensors"
        save_file({"x": x, "x_out": x_out.contiguous(),
                   "randoms": torch.tensor(draws["random"], dtype=torch.float64).reshape(-1),
                   "uniforms": torch.tensor(draws["uniform"], dtype=torch.float64).reshape(-1),
                   "randints": torch.tensor(draws["randint"], dtype=torch.int64).reshape(-1)},
                  os.path.join(out, name))
        cases.append({"file": name, "options": options})
    return cases


def groups_refs():
    from timm.optim._param_groups import param_groups_layer_decay, param_groups_weight_decay
    out = {}
    for model_name in ("convnext_atto", "resnet10t", "resnet18"):
        model = timm.create_model(model_name, in_chans=1, num_classes=10)
        name_of = {id(p): n for n, p in model.named_parameters()}
        table = {}
        for g in param_groups_weight_decay(model, 0.05):
            for p in g["params"]:
                table[name_of[id(p)]] = [g["weight_decay"], 1.0, None]
        for g in param_groups_layer_decay(model, 0.05, layer_decay=0.75):
            for p in g["params"]:
                table[name_of[id(p)]][1] = g["lr_scale"]
                table[name_of[id(p)]][2] = g["weight_decay"]
        out[model_name] = table
    return out


OP_NAMES = ["AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd",
            "Color", "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel",
            "TranslateYRel"]


def test_images(seed):
    """Smooth-ish u8 images (a gradient, a blob and noise): a 1-channel and a 3-channel one."""
    g = np.random.default_rng(seed)
    out = []
    for shape in ((21, 17), (23, 19, 3)):
        h, w = shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        base = 40 + 150 * (xx / w) + 50 * np.exp(-((yy - h / 2) ** 2 + (xx - w / 3) ** 2) / 30)
        if len(shape) == 3:
            base = np.stack([base, base[::-1], 255 - base], axis=2)
        out.append(np.clip(base + g.normal(0, 12, size=shape), 0, 255).astype(np.uint8))
    return out


def rand_augment_refs(out):
    """Each op of timm's RandAugment alone (AugmentOp with p 1 and no magnitude noise, the sign
    coin and the resampling forced), and whole rand_augment_transform calls with their draws."""
    from PIL import Image
    import timm.data.auto_augment as aa
    tensors, ops = {}, []
    k = 0
    for image in test_images(11):
        channels = 1 if image.ndim == 2 else 3
        pil = Image.fromarray(image)
        tensors[f"image{channels}"] = torch.from_numpy(image.reshape(image.shape[0], image.shape[1], channels).copy())
        for increasing in (False, True):
            for index, name in enumerate(OP_NAMES):
                timm_name = name
                if increasing and name in ("Posterize", "Solarize", "Color", "Contrast", "Brightness", "Sharpness"):
                    timm_name = name + "Increasing"
                for magnitude in (0.0, 3.7, 9.0, 10.0):
                    for negate in (False, True):
                        for bicubic in (False, True):
                            hparams = dict(img_mean=(128,) * channels, magnitude_std=0,
                                           interpolation=Image.BICUBIC if bicubic else Image.BILINEAR)
                            op = aa.AugmentOp(timm_name, prob=1.0, magnitude=magnitude, hparams=hparams)
                            saved = random.random
                            random.random = (lambda: 0.9) if negate else (lambda: 0.1)
                            try:
                                result = np.array(op(pil))
                            except ValueError:  # Pillow >= 12 refuses posterize to 0 bits
                                continue
                            finally:
                                random.random = saved
                            tensors[f"op{k}"] = torch.from_numpy(result.reshape(image.shape[0], image.shape[1], channels).copy())
                            ops.append({"key": f"op{k}", "channels": channels, "op": index,
                                        "increasing": increasing, "magnitude": magnitude,
                                        "negate": negate, "bicubic": bicubic, "name": timm_name})
                            k += 1
    save_file(tensors, os.path.join(out, "rand_augment_ops.safetensors"))
    # Whole transforms: numpy's op choice and `random`'s draws recorded, in call order.
    calls = []
    tensors = {}
    # Full strings, then strings that leave sections out (each takes timm's default: m10, n2,
    # p0.5, mstd0, mmax10, inc0): every section is left out by at least one.
    for n, config in enumerate(["rand-m9-mstd0.5-inc1", "rand-m7-n3-mstd1-inc0",
                                "rand-m10-n2-mstd101-p0.8-inc1", "rand-m9-inc1",
                                "rand-n3-mstd0.5-p0.9", "rand-mmax8-mstd2-inc1", "rand"]):
        for image in test_images(50 + n):
            channels = 1 if image.ndim == 2 else 3
            transform = aa.rand_augment_transform(config, dict(img_mean=(128,) * channels))
            for repeat in range(6):
                rec = {"choice": [], "random": [], "gauss": [], "uniform": [], "pick": []}
                saved = {name: getattr(random, name) for name in ("random", "gauss", "uniform", "choice")}
                saved_np = np.random.choice

                def np_choice(ops, size, replace=True, p=None):
                    picked = saved_np(len(ops), size, replace=replace, p=p)
                    rec["choice"].extend(int(i) for i in picked)
                    return [ops[i] for i in picked]

                def wrap(name, into):
                    def call(*a, **kw):
                        v = saved[name](*a, **kw)
                        rec[into].append(v if name != "choice" else list(a[0]).index(v))
                        return v
                    return call

                random.random, random.gauss = wrap("random", "random"), wrap("gauss", "gauss")
                random.uniform, random.choice = wrap("uniform", "uniform"), wrap("choice", "pick")
                np.random.choice = np_choice
                try:
                    result = np.array(transform(Image.fromarray(image)))
                except ValueError:  # Pillow >= 12 refuses posterize to 0 bits: timm raises
                    continue
                finally:
                    for name, f in saved.items():
                        setattr(random, name, f)
                    np.random.choice = saved_np
                key = f"call{len(calls)}"
                tensors[key + ".in"] = torch.from_numpy(image.reshape(image.shape[0], image.shape[1], channels).copy())
                tensors[key + ".out"] = torch.from_numpy(result.reshape(image.shape[0], image.shape[1], channels).copy())
                for kind, values in rec.items():
                    tensors[f"{key}.{kind}"] = torch.tensor(values, dtype=torch.float64).reshape(-1)
                calls.append({"key": key, "config": config, "channels": channels})
    save_file(tensors, os.path.join(out, "rand_augment_calls.safetensors"))
    return {"ops": ops, "calls": calls}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {"timm_version": timm.__version__, "mixup": mixup_refs(out), "ema": ema_refs(out),
                "erasing": erasing_refs(out), "groups": groups_refs(),
                "rand_augment": rand_augment_refs(out)}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(manifest['mixup'])} mixup, {len(manifest['ema'])} EMA and "
          f"{len(manifest['erasing'])} erasing references in {out}")


if __name__ == "__main__":
    main()
