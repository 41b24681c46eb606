#!/usr/bin/env python3
"""`model.init_from` as a user meets it (issue 52, item 1): a new run starts from an earlier
run's weights.

- run A trains small_cnn two epochs (with train.ema); `runner predict` of an experiment whose
  model.init_from names A's folder gives A's own predictions with its best weights, and with
  init_from_weights last / ema those of `runner predict A --checkpoint last` / `--weights ema`;
  a checkpoint file and A's export (.safetensors) as init_from too;
- `runner run` from A: the log names the checkpoint, the first step's loss is far below a fresh
  run's, the optimizer starts fresh (B's own steps only), run.json and report.html say where
  it started, the dry run shows it; A's files are not touched (same bytes, same times);
- 12 classes from A's 10: one line saying the classifier was re-initialised;
- refused by validate, --dry-run and run in one line at the key's file:line, no run folder: a
  run of another backbone, init_from beside model.pretrained, init_from_weights last with a
  file, a folder with no checkpoint;
- a resume of a run that started from A continues after A was moved away.
Usage: init_from_test.py RUNNER SOURCE_DIR
"""
import csv
import hashlib
import json
import os

from engine_lib import check, finish, metrics, run, tmpdir, write

FMNIST = "/usr/share/datasets/fashion-mnist"


def experiment(path, root, model_extra="", name="init", epochs=1, ema=False, lr=2e-3):
    return write(path, f"""name: {name}
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
{model_extra}optimizer: {{name: adam, lr: {lr}}}
scheduler: {{name: none}}
metrics: [{{name: accuracy}}, {{name: loss}}]
train:
  epochs: {epochs}
  batch_size: 32
  log_every_steps: 1
  best: {{metric: loss, mode: min}}  # epoch 1 (val loss 2.14, then 2.60): best.pt is not last.pt
  ema: {{enabled: {str(ema).lower()}, decay: 0.9}}
predict: {{split: test, output: predictions.csv, format: csv}}
output: {{root: {root}, tensorboard: false}}
""")


def probabilities(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [[float(v) for k, v in r.items() if k.startswith("prob_")] for r in rows]


def largest_gap(a, b):
    if len(a) != len(b) or not a:
        return float("inf")
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def fingerprint(folder):
    """Every file's bytes and modification time under `folder`."""
    out = {}
    for base, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                out[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def first_step_loss(run_dir):
    steps = metrics(run_dir, "step")
    return steps[0]["loss"] if steps else float("nan")


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} is missing (apt-get install dataset-fashion-mnist)")
        return 77
    tmp = tmpdir()
    source_yaml = experiment(os.path.join(tmp, "a.yaml"), os.path.join(tmp, "runs"), epochs=2,
                             ema=True)
    a = os.path.join(tmp, "a_run")
    run("run", [source_yaml, "--set", f"output.run_dir={a}"], timeout=300)
    best, last = (os.path.join(a, "checkpoints", n) for n in ("best.pt", "last.pt"))
    if not (os.path.exists(best) and os.path.exists(last)):
        check(False, "run A keeps best.pt and last.pt")
        return finish()
    exported = os.path.join(tmp, "a_export.safetensors")
    run("export", [a, "--output", exported])
    before = fingerprint(a)

    # What A's weights predict, and the same through an experiment that starts from A.
    own = {}
    for key, flags in (("best", []), ("last", ["--checkpoint", "last"]),
                       ("ema", ["--weights", "ema"])):
        own[key] = os.path.join(tmp, f"own_{key}.csv")
        run("predict", [a, "--output", own[key]] + flags)
    gaps = [largest_gap(probabilities(own[x]), probabilities(own[y]))
            for x, y in (("best", "last"), ("best", "ema"), ("last", "ema"))]
    check(min(gaps) > 1e-3, f"A's best, last and EMA weights predict differently: {gaps}")
    b_yaml = os.path.join(tmp, "b.yaml")
    for value, weights, want in ((a, "best", "best"), (a, "last", "last"), (a, "ema", "ema"),
                                 (last, "best", "last"), (exported, "best", "best")):
        experiment(b_yaml, os.path.join(tmp, "runs"),
                   f"  init_from: {value}\n  init_from_weights: {weights}\n")
        out = os.path.join(tmp, "from_a.csv")
        code, text = run("predict", [b_yaml, "--output", out])
        if code != 0:
            continue
        check("initial weights (model.init_from): loaded" in text,
              f"init_from {value} ({weights}): the log says what it loaded: {text[-800:]}")
        gap = largest_gap(probabilities(out), probabilities(own[want]))
        check(gap <= 1e-6, f"init_from {os.path.basename(value)} ({weights}): A's own {want} "
                           f"predictions (largest gap {gap:.1e})")

    # A training run from A: starts where A stopped, with a fresh optimizer.
    experiment(b_yaml, os.path.join(tmp, "runs"), f"  init_from: {a}\n", name="b")
    code, text = run("run", [b_yaml, "--dry-run"])
    check(f"from a run (model.init_from), {best} (best weights)" in text,
          f"the dry run names the weights it starts from: {text[-1500:]}")
    b = os.path.join(tmp, "b_run")
    code, text = run("run", [b_yaml, "--set", f"output.run_dir={b}"], timeout=300)
    check(f"initial weights (model.init_from): loaded" in text and f"from {best}" in text,
          f"run B logs the checkpoint it starts from: {text[-1500:]}")
    fresh = os.path.join(tmp, "fresh_run")
    run("run", [source_yaml, "--set", f"output.run_dir={fresh}", "--set", "train.epochs=1"],
        timeout=300)
    started, fresh_start = first_step_loss(b), first_step_loss(fresh)
    check(started < fresh_start - 0.3, f"B's first loss {started:.3f} is A's level, well below a "
                                       f"fresh run's {fresh_start:.3f}")
    summary = json.load(open(os.path.join(b, "summary.json")))
    check(summary.get("optimizer_steps") == 8,
          f"B's optimizer counts its own 8 steps only: {summary.get('optimizer_steps')}")
    record = json.load(open(os.path.join(b, "run.json")))
    check(record.get("init_from", {}).get("file") == best and
          record["init_from"].get("weights") == "best" and record["init_from"].get("run") == a,
          f"run.json records where B started: {record.get('init_from')}")
    report = open(os.path.join(b, "report.html")).read()
    check('id="init-from"' in report and best in report, "report.html says where B started")
    check(fingerprint(a) == before, "A's files are only read: same bytes and times")

    # Another class count: the classifier starts fresh, and one line says so.
    code, text = run("run", [b_yaml, "--set", f"output.run_dir={os.path.join(tmp, 'b12')}",
                             "--set", "model.num_classes=12", "--set", "train.max_steps=1"])
    check("classifier left at its fresh init (10 -> 12 classes)" in text,
          f"12 classes from a 10-class run: said in one line: {text[-1200:]}")

    # Refused before anything runs: one line at the key's file:line, no run folder.
    refused = (
        (f"  init_from: {a}\n", "trained small_cnn, but model.backbone is resnet10t"),
        (f"  init_from: {a}\n  pretrained: {exported}\n", "model.pretrained is set too"),
        (f"  init_from: {best}\n  init_from_weights: last\n", "picks a run folder's last.pt"),
        (f"  init_from: {tmp}\n  init_from_weights: last\n", "holds no checkpoints/last.pt"),
    )
    for extra, says in refused:
        experiment(b_yaml, os.path.join(tmp, "refused"), extra)
        if "resnet10t" in says:
            write(b_yaml, open(b_yaml).read().replace("backbone: small_cnn", "backbone: resnet10t"))
        for command in (["validate", b_yaml], ["run", b_yaml, "--dry-run"], ["run", b_yaml]):
            code, text = run(command[0], command[1:], expect=None)
            lines = [l for l in text.strip().splitlines() if "[warning]" not in l]
            check(code == 2 and len(lines) == 1 and says in text and "b.yaml:" in text,
                  f"runner {' '.join(command[:1] + command[2:])} refuses ({says}): exit 2, one "
                  f"line at b.yaml:line ({code}: {lines})")
        check(not os.path.exists(os.path.join(tmp, "refused")), f"no run folder made ({says})")
    check(fingerprint(a) == before, "A's files are still untouched")

    # A resume continues from the run's own last.pt: the run it started from may be gone.
    experiment(b_yaml, os.path.join(tmp, "runs"), f"  init_from: {a}\n", name="b")
    c = os.path.join(tmp, "c_run")
    run("run", [b_yaml, "--set", f"output.run_dir={c}", "--set", "train.max_steps=2"])
    os.rename(a, a + ".moved")
    code, text = run("run", ["--resume", c, "--set", "train.max_steps=4"])
    check("initial weights" not in text, f"the resume loads no initial weights: {text[-800:]}")
    summary = json.load(open(os.path.join(c, "summary.json")))
    check(summary.get("status") == "finished" and summary.get("optimizer_steps") == 4,
          f"resumed without the source run, the run ends at step 4: {summary.get('status')}, "
          f"{summary.get('optimizer_steps')}")
    os.rename(a + ".moved", a)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
