"""Builds a timm model and writes it as TorchScript for runner (model.backbone: timm/<name>).

Run by `runner import` and by `runner run` on a model's first use, with the project's Python
environment (the venv `make deps` creates, or RUNNER_PYTHON). Writes OUTPUT (the scripted module,
in train mode, with its initial or pretrained weights) and OUTPUT.json (what it is: timm's name
and version, the create_model arguments, the pretrained tag, the input size, mean/std, the first
conv and classifier names, each parameter's layer for layer-wise lr decay). Both are written to temporary names first and renamed last, so a
failed or interrupted import leaves nothing behind.

Errors: one line on stderr, exit 2 (bad arguments or an unknown model), 3 (the model does not
script), 4 (torch or timm cannot be imported), 5 (the pretrained weights are not available
offline).
"""
import argparse
import json
import os
import sys


def close_model_names(name, names):
    """timm names close to `name`, its own family first (mobilenetv3_smal_050 -> mobilenetv3_small_050,
    not mobilenet_edgetpu_*): the part before the first '_' is the family."""
    import difflib
    family = name.split("_")[0]
    same = difflib.get_close_matches(name, [n for n in names if n.split("_")[0] == family], 3, 0.5)
    other = difflib.get_close_matches(name, names, 5, 0.6)
    return list(dict.fromkeys(same + other))[:5]


def fail(code, message):
    print(message.replace("\n", " "), file=sys.stderr)
    sys.exit(code)


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True, help="timm model name, e.g. efficientnet_b0")
    p.add_argument("--in-chans", type=int, required=True)
    p.add_argument("--num-classes", type=int, required=True)
    p.add_argument("--drop-path-rate", type=float, default=0.0)
    p.add_argument("--pretrained", default="false",
                   help="false | true | hf-hub:timm/<name>.<tag> | a weights file")
    p.add_argument("--kwargs", default="{}", help="extra create_model arguments (JSON object)")
    p.add_argument("--output", required=True)
    return p.parse_args()


def create(timm, args, kwargs):
    """timm.create_model as a user of the original would call it."""
    name, pretrained, extra = args.name, False, {}
    if args.pretrained == "true":
        pretrained = True
    elif args.pretrained.startswith("hf-hub:"):
        repo = args.pretrained[len("hf-hub:"):]
        if not repo.startswith("timm/"):
            fail(2, f"model.pretrained {args.pretrained}: only timm's own repositories "
                    f"(hf-hub:timm/<name>.<tag>) name weights for timm/{args.name}")
        architecture, _, tag = repo[len("timm/"):].partition(".")
        if architecture != args.name:
            fail(2, f"model.pretrained {args.pretrained} holds weights of {architecture}, not "
                    f"of {args.name}")
        name, pretrained = f"{args.name}.{tag}" if tag else args.name, True
    elif args.pretrained != "false":
        if not os.path.isfile(args.pretrained):
            fail(2, f"model.pretrained {args.pretrained}: no such file")
        # A file is loaded whole after the model is built (load_file_whole), not by timm's
        # load_pretrained: that one drops a classifier of this model's own size whenever
        # num_classes differs from the pretrained config's.
    if args.name not in timm.list_models() and not timm.is_model(args.name):
        close = close_model_names(args.name, timm.list_models())
        fail(2, f"timm {timm.__version__} has no model '{args.name}'"
                + (f" (close: {', '.join(close)})" if close else "")
                + "; see timm.list_models()")
    try:
        # drop_path_rate only when asked for: models without stochastic depth refuse it.
        if args.drop_path_rate:
            extra["drop_path_rate"] = args.drop_path_rate
        return timm.create_model(name, pretrained=pretrained, in_chans=args.in_chans,
                                 num_classes=args.num_classes, **extra, **kwargs)
    except TypeError as e:
        fail(2, f"timm.create_model('{args.name}', ...) refused its arguments: {e}")
    except Exception as e:  # huggingface_hub raises several types when offline
        if not pretrained:
            raise
        try:
            from huggingface_hub.constants import HF_HUB_CACHE as cache
        except ImportError:
            cache = "$HF_HUB_CACHE"
        fail(5, f"pretrained weights for {name} are not in the Hugging Face cache {cache} "
                f"(runner reads it offline); fetch them once with `python -c \"import timm; "
                f"timm.create_model('{name}', pretrained=True)\"` where there is network access")


def load_file_whole(torch, model, path, in_chans):
    """model.pretrained naming a file, loaded as runner loads one into a native backbone: every
    tensor by name and shape; the first conv adapted to in_chans (timm's adapt_input_conv) only
    where its channels differ; the classifier kept where its shape is the model's (a runner
    export, timm's own state_dict of this model), else left at its fresh init. Exit 2 naming
    the keys that do not fit."""
    from timm.models._manipulate import adapt_input_conv
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        state = load_file(path)
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
        state = state.get("state_dict", state.get("model", state)) if isinstance(state, dict) else state
    own = model.state_dict()
    cfg = dict(getattr(model, "pretrained_cfg", {}) or {})
    first = cfg.get("first_conv")
    first = [first] if isinstance(first, str) else list(first or [])
    for prefix in first:
        key = prefix + ".weight"
        if key in state and key in own and state[key].shape[1] != own[key].shape[1]:
            state[key] = adapt_input_conv(in_chans, state[key])
    heads = cfg.get("classifier")
    heads = [heads] if isinstance(heads, str) else list(heads or [])
    for prefix in heads:
        keys = [k for k in own if k.startswith(prefix + ".")]
        if any(k in state and state[k].shape != own[k].shape for k in keys):
            for k in keys:
                state[k] = own[k]  # another class count: the model's fresh classifier
    missing = sorted(k for k in own if k not in state and not k.endswith("num_batches_tracked"))
    unexpected = sorted(k for k in state if k not in own)
    misshaped = sorted(k for k in state if k in own and state[k].shape != own[k].shape)
    if missing or unexpected or misshaped:
        fail(2, f"model.pretrained {path} does not fit timm's {model.__class__.__name__}: "
                f"missing {missing[:3]}, unexpected {unexpected[:3]}, other shapes {misshaped[:3]}")
    model.load_state_dict(state, strict=False)


def without_inactive_dropout(torch, module):
    """Replaces each dropout of probability 0 by an identity that keeps its `p` (forward code may
    read it). Eager PyTorch skips such a dropout, TorchScript does not: it draws a Bernoulli mask
    and multiplies by it (measured: +45% forward time on convnext_small, whose MLPs hold two
    each). Returns how many were replaced."""

    class InactiveDropout(torch.nn.Identity):
        def __init__(self, p: float):
            super().__init__()
            self.p = p

    replaced = 0
    for name, child in module.named_children():
        if isinstance(child, torch.nn.modules.dropout._DropoutNd) and child.p == 0:
            setattr(module, name, InactiveDropout(child.p))
            replaced += 1
        else:
            replaced += without_inactive_dropout(torch, child)
    return replaced


def layer_map(model):
    """Each parameter's layer as timm's param_groups_layer_decay finds it (optimizer.layer_decay):
    group_parameters over the model's group_matcher(coarse=False), else auto_group_layers. None
    where this timm has neither."""
    try:
        from timm.optim._param_groups import auto_group_layers, group_parameters
    except ImportError:
        return None
    if hasattr(model, "group_matcher"):
        return group_parameters(model, model.group_matcher(coarse=False), reverse=True)
    return auto_group_layers(model)


def script(torch, model, name):
    """torch.jit.script, or exit 3 with TorchScript's first line."""
    try:
        return torch.jit.script(model)
    except Exception as e:  # TorchScript raises several types, all with a long message
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        fail(3, f"timm's {name} does not compile to TorchScript: {first.strip()}")


def main():
    args = parse()
    try:
        kwargs = json.loads(args.kwargs)
        assert isinstance(kwargs, dict)
    except (ValueError, AssertionError):
        fail(2, f"--kwargs must be a JSON object, got {args.kwargs!r}")
    try:
        import torch
        import timm
        from timm.layers import set_layer_config
    except ImportError as e:
        fail(4, f"{sys.executable} cannot import torch and timm ({e}): run `make deps` or set "
                f"RUNNER_PYTHON to a Python that has them")
    # A fixed seed: the same request gives the same initial weights on any machine (the cached
    # file is the start of every run that asks for it, whatever the experiment's seed).
    torch.manual_seed(0)
    # Scriptable layer variants (no memory-efficient custom autograd functions, no dynamic
    # padding that TorchScript cannot compile); the weights are the same.
    with set_layer_config(scriptable=True, exportable=True):
        model = create(timm, args, kwargs)
    if args.pretrained not in ("false", "true") and not args.pretrained.startswith("hf-hub:"):
        load_file_whole(torch, model, args.pretrained, args.in_chans)
    model.train()
    layers = layer_map(model)
    inactive_dropouts = without_inactive_dropout(torch, model)
    scripted = script(torch, model, args.name)
    cfg = dict(getattr(model, "pretrained_cfg", {}) or {})
    info = {
        "format": "runner-timm-torchscript/1",
        "timm_version": timm.__version__,
        "torch_version": torch.__version__,
        "name": args.name,
        "in_chans": args.in_chans,
        "num_classes": args.num_classes,
        "drop_path_rate": args.drop_path_rate,
        "kwargs": kwargs,
        "pretrained": args.pretrained,
        "pretrained_tag": cfg.get("tag") if args.pretrained != "false" else None,
        "input_size": list(cfg.get("input_size", (args.in_chans, 224, 224))),
        "mean": list(cfg.get("mean", ())),
        "std": list(cfg.get("std", ())),
        "first_conv": cfg.get("first_conv"),
        "classifier": cfg.get("classifier"),
        "num_features": getattr(model, "num_features", None),
        # Buffers outside the state_dict (persistent=False), which TorchScript keeps as plain
        # buffers: runner leaves them out of checkpoints and exports, as timm's state_dict does.
        "non_persistent_buffers": sorted(
            name for name, _ in model.named_buffers() if name not in model.state_dict()),
        "parameters": sum(p.numel() for p in model.parameters()),
        "inactive_dropouts_removed": inactive_dropouts,
        "layers": layers,
    }
    out = args.output
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    suffix = f".tmp{os.getpid()}"
    try:
        scripted.save(out + suffix)
        with open(out + ".json" + suffix, "w") as f:
            json.dump(info, f, indent=1)
        # The sidecar last: a file with a sidecar is complete.
        os.replace(out + suffix, out)
        os.replace(out + ".json" + suffix, out + ".json")
    finally:
        for leftover in (out + suffix, out + ".json" + suffix):
            if os.path.exists(leftover):
                os.remove(leftover)


if __name__ == "__main__":
    main()
