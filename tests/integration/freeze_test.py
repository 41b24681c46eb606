#!/usr/bin/env python3
"""`model.freeze`, `train.unfreeze_at_epoch` and `optimizer.param_groups` as a user meets them
(issue 52, items 2 and 3).

- run A trains small_cnn one epoch; run B starts from it (model.init_from) with
  `model.freeze: backbone` on 2 CPU ranks: every backbone tensor of B's export, BatchNorm running
  statistics included, has A's bits, the classifier does not; B's last.pt is far smaller than A's
  (the optimizer keeps no state for the frozen part); the dry run counts the frozen parameters;
- a list of name patterns freezes just what it names;
- `train.unfreeze_at_epoch: 1` of 2 epochs: after epoch 1 the backbone is A's, after epoch 2 it
  has trained, the log says when; stopped after epoch 1 and resumed, the run ends with the
  weights of the uninterrupted run, bit for bit;
- optimizer.param_groups: a group with lr_scale 0 keeps its tensors' bits while the rest
  trains; the dry run lists each group's weight decay and lr ratio;
- refused in one line at the key's file:line by validate, --dry-run and run: a pattern that
  matches no parameter, a freeze of every parameter, unfreeze_at_epoch without model.freeze or
  not below train.epochs; a param group matching nothing, one parameter in two groups, lr and
  lr_scale both; layer_decay on a backbone without a layer grouping.
Usage: freeze_test.py RUNNER SOURCE_DIR
"""
import os

from engine_lib import check, finish, ranks_args, read_safetensors, run, tmpdir, write

FMNIST = "/usr/share/datasets/fashion-mnist"


def experiment(path, model_extra="", train_extra="", optimizer="{name: adam, lr: 0.002}"):
    return write(path, f"""name: freeze
seed: 3
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: mnist, root: {FMNIST}, val_split: 59744}}
  limit: {{train: 256, test: 64}}
  train_transforms: [{{name: normalize, mean: 0.286, std: 0.353}}]
  eval_transforms: [{{name: normalize, mean: 0.286, std: 0.353}}]
  num_workers: 0
model:
  backbone: small_cnn
  in_chans: 1
  num_classes: 10
{model_extra}optimizer: {optimizer}
scheduler: {{name: none}}
metrics: [{{name: accuracy}}]
train:
  epochs: 2
  batch_size: 32
{train_extra}predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def export(tmp, source, name):
    out = os.path.join(tmp, name + ".safetensors")
    run("export", [source, "--output", out])
    return read_safetensors(out) if os.path.exists(out) else {}


def same(a, b, names):
    return [n for n in names if n in a and n in b and a[n] == b[n]]


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} is missing (apt-get install dataset-fashion-mnist)")
        return 77
    tmp = tmpdir()
    a = os.path.join(tmp, "a_run")
    run("run", [experiment(os.path.join(tmp, "a.yaml")), "--set", f"output.run_dir={a}",
                "--set", "train.epochs=1"], timeout=300)
    a_weights = export(tmp, os.path.join(a, "checkpoints", "last.pt"), "a")
    backbone = sorted(n for n in a_weights if not n.startswith("fc."))
    head = sorted(n for n in a_weights if n.startswith("fc."))
    check(len(backbone) == 30 and head == ["fc.bias", "fc.weight"],
          f"small_cnn's export: 30 backbone tensors (5 x conv, BN weight, bias, running mean, "
          f"var, count) and fc: {len(backbone)}, {head}")

    # The backbone frozen: its bits stay A's, BatchNorm statistics included.
    b_yaml = experiment(os.path.join(tmp, "b.yaml"), f"  init_from: {a}/checkpoints/last.pt\n"
                                                     "  freeze: backbone\n")
    code, text = run("run", [b_yaml, "--dry-run"] + ranks_args(2))
    check("small_cnn: 278890 parameters (1290 trainable, 277600 frozen by model.freeze)" in text,
          f"the dry run counts the frozen and trainable parameters: {text[-900:]}")
    b = os.path.join(tmp, "b_run")
    run("run", [b_yaml, "--set", f"output.run_dir={b}"] + ranks_args(2), timeout=300)
    b_weights = export(tmp, os.path.join(b, "checkpoints", "last.pt"), "b")
    kept = same(a_weights, b_weights, backbone)
    check(kept == backbone, f"model.freeze backbone: every backbone tensor keeps A's bits "
                            f"({len(kept)} of {len(backbone)}: {sorted(set(backbone) - set(kept))[:4]})")
    check(not same(a_weights, b_weights, head), "the classifier trained")
    a_size, b_size = (os.path.getsize(os.path.join(r, "checkpoints", "last.pt")) for r in (a, b))
    check(b_size < 0.5 * a_size, f"no optimizer state for the frozen part: B's last.pt {b_size} "
                                 f"bytes, A's {a_size}")

    # Name patterns: only what they name.
    p_yaml = experiment(os.path.join(tmp, "p.yaml"), f"  init_from: {a}/checkpoints/last.pt\n"
                                                     "  freeze: ['features.0.*', 'features.1.*']\n")
    p = os.path.join(tmp, "p_run")
    run("run", [p_yaml, "--set", f"output.run_dir={p}", "--set", "train.epochs=1"], timeout=300)
    p_weights = export(tmp, os.path.join(p, "checkpoints", "last.pt"), "p")
    named = [n for n in backbone if n.startswith(("features.0.", "features.1."))]
    check(same(a_weights, p_weights, named) == named and len(named) == 12,
          f"the patterns' 12 tensors keep A's bits: {len(same(a_weights, p_weights, named))}")
    check("features.2.conv.weight" not in same(a_weights, p_weights, backbone),
          "a layer the patterns do not name trains")

    # Thawed after the first epoch; a resume across the thaw ends as one go.
    c_yaml = experiment(os.path.join(tmp, "c.yaml"), f"  init_from: {a}/checkpoints/last.pt\n"
                        "  freeze: backbone\n", "  unfreeze_at_epoch: 1\n")
    whole = os.path.join(tmp, "c_whole")
    code, text = run("run", [c_yaml, "--set", f"output.run_dir={whole}"] + ranks_args(2),
                     timeout=300)
    check("epoch 2: model.freeze's part (277600 parameters) trains from here on" in text,
          f"the log says when the part thaws: {text[-1200:]}")
    whole_weights = export(tmp, os.path.join(whole, "checkpoints", "last.pt"), "whole")
    check(len(same(a_weights, whole_weights, backbone)) < 10, "thawed, the backbone trained")
    cut = os.path.join(tmp, "c_cut")
    run("run", [c_yaml, "--set", f"output.run_dir={cut}", "--set", "train.max_steps=4"]
        + ranks_args(2), timeout=300)
    cut_weights = export(tmp, os.path.join(cut, "checkpoints", "last.pt"), "cut")
    check(same(a_weights, cut_weights, backbone) == backbone,
          "after the first epoch (4 steps) the backbone is still A's")
    run("run", ["--resume", cut, "--set", "train.max_steps=null"] + ranks_args(2)[2:],
        timeout=300)
    resumed = export(tmp, os.path.join(cut, "checkpoints", "last.pt"), "resumed")
    check(resumed and resumed == whole_weights,
          "stopped after epoch 1 and resumed, the run ends with the uninterrupted run's weights")

    # A parameter group that stands still while the rest trains; the dry run shows the groups.
    groups = ("{name: adamw, lr: 0.002, param_groups: [{match: ['features.0.*'], lr_scale: 0}, "
              "{match: ['fc.*'], lr: 0.02, weight_decay: 0.1}]}")
    g_yaml = experiment(os.path.join(tmp, "g.yaml"), f"  init_from: {a}/checkpoints/last.pt\n",
                        optimizer=groups)
    code, text = run("run", [g_yaml, "--dry-run"])
    for line in ("group         1 tensor, 1280 parameters, weight decay 0.1, lr x 10",
                 "group         1 tensor, 288 parameters, weight decay 0.01, lr x 0",
                 "group         1 tensor, 10 parameters, weight decay 0, lr x 10"):
        check(line in text, f"the dry run lists the group '{line}': {text[-1500:]}")
    g = os.path.join(tmp, "g_run")
    run("run", [g_yaml, "--set", f"output.run_dir={g}", "--set", "train.epochs=1"], timeout=300)
    g_weights = export(tmp, os.path.join(g, "checkpoints", "last.pt"), "g")
    still = ["features.0.conv.weight", "features.0.bn.weight", "features.0.bn.bias"]
    check(same(a_weights, g_weights, still) == still, "lr_scale 0: the group's tensors keep A's bits")
    check(not same(a_weights, g_weights, ["features.1.conv.weight", "fc.weight"]),
          "the other groups trained")

    # Refused before anything runs.
    refused = (
        ("  freeze: ['features.9.*']\n", "", "model.freeze: 'features.9.*' matches no parameter"),
        ("  freeze: ['*']\n", "", "nothing is left to train"),
        ("", "  unfreeze_at_epoch: 1\n", "model.freeze is not set"),
        ("  freeze: backbone\n", "  unfreeze_at_epoch: 2\n", "the part would never train"),
        ("", "", "optimizer.param_groups.0.match: matches no trainable parameter",
         "{name: adam, param_groups: [{match: ['head.*']}]}"),
        ("", "", "optimizer.param_groups.1.match: fc.bias is matched by param_groups.0 too",
         "{name: adam, param_groups: [{match: ['fc.*']}, {match: ['*.bias']}]}"),
        ("", "", "lr and lr_scale both set",
         "{name: adam, param_groups: [{match: ['fc.*'], lr: 0.1, lr_scale: 2}]}"),
        ("", "", "optimizer.layer_decay: this backbone has no layer grouping",
         "{name: adamw, layer_decay: 0.7}"),
    )
    r_yaml = os.path.join(tmp, "r.yaml")
    for model_extra, train_extra, says, *optimizer in refused:
        write(r_yaml, open(experiment(r_yaml, model_extra, train_extra, *optimizer)).read().replace(
            f"{tmp}/runs", f"{tmp}/refused"))
        for command in (["validate", r_yaml], ["run", r_yaml, "--dry-run"], ["run", r_yaml]):
            code, text = run(command[0], command[1:], expect=None)
            lines = [l for l in text.strip().splitlines() if "[warning]" not in l]
            check(code == 2 and len(lines) == 1 and says in text and "r.yaml:" in text,
                  f"runner {' '.join(command[:1] + command[2:])} refuses ({says}): exit 2, one "
                  f"line at r.yaml:line ({code}: {lines})")
        check(not os.path.exists(os.path.join(tmp, "refused")), f"no run folder made ({says})")
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
