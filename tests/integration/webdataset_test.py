#!/usr/bin/env python3
"""WebDataset shards (issue 54), the way a user meets them: experiments/make_shards.py writes
8 training shards of 250 Fashion-MNIST images (and 2 validation, 1 test), and
experiments/fashion_shards.yaml (data.dataset.name: webdataset) reads them.

- validate says ok; the dry run says the epoch reads shard by shard;
- `runner bench-data --rank R --samples F` for both ranks of the 2-rank world: together they read
  each of the 2,000 samples once an epoch, each rank 4 whole shards (shuffled by the buffer),
  another order the next epoch;
- a 2-rank run trains, and its summary.json says samples {train: 2000, val: 400, test: 100};
- stopped mid-epoch (train.max_steps) and resumed, it ends as the run in one go: the same step
  losses, the same weights;
- what users get wrong is one line: shards missing (at validate, exit 2, how many and the first),
  a truncated shard (at validate, naming it), a corrupt image inside a shard (the run stops
  naming shard and sample; data.on_bad_image: skip leaves it out and counts it).
Usage: webdataset_test.py RUNNER SOURCE_DIR
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tarfile

from engine_lib import (check, finish, metrics, only_run_dir, ranks_args, read_safetensors, run,
                        tmpdir)

SOURCE = sys.argv[2]
FMNIST = "/usr/share/datasets/fashion-mnist"
EXPERIMENT = os.path.join(SOURCE, "experiments", "fashion_shards.yaml")


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    tmp = tmpdir()
    shards = os.path.join(tmp, "shards")
    subprocess.run([sys.executable, os.path.join(SOURCE, "experiments", "make_shards.py"), shards],
                   check=True, capture_output=True)
    at = ["--set", f"data.dataset.root={shards}", "--set", "predict.enabled=true"]

    code, out = run("validate", [EXPERIMENT] + at)
    check(code == 0 and "ok" in out, f"validate: {out[-500:]}")
    code, out = run("run", [EXPERIMENT, "--dry-run"] + at)
    check("shard by shard: 8 shards shuffled per epoch, each rank reads its own through a "
          "shuffle buffer of 500, 2000 samples per epoch" in out, f"the dry run's sampler: {out}")

    # Which samples each rank reads: 2,000 once, whole shards, a new order each epoch.
    orders = {}
    for epoch in (1, 2):
        for rank in (0, 1):
            f = os.path.join(tmp, f"samples_{epoch}_{rank}.json")
            code, out = run("bench-data", [EXPERIMENT, "--rank", str(rank), "--epoch", str(epoch),
                                           "--batches", "1000", "--samples", f] + at)
            check(code == 0 and "images/s" in out and "decode" in out, f"bench-data: {out[-800:]}")
            orders[epoch, rank] = json.load(open(f))["indices"] if os.path.exists(f) else []
        both = orders[epoch, 0] + orders[epoch, 1]
        check(len(both) == 2000 and len(set(both)) == 2000,
              f"epoch {epoch}: the 2 ranks read each of the 2,000 samples once ({len(set(both))} distinct of {len(both)})")
        for rank in (0, 1):
            shards_read = {i // 250 for i in orders[epoch, rank]}
            check(len(shards_read) == 4 and len(orders[epoch, rank]) == 1000,
                  f"epoch {epoch} rank {rank}: 4 whole shards of its own: {sorted(shards_read)}")
            check(orders[epoch, rank] != sorted(orders[epoch, rank]), "the shuffle buffer mixes")
    check(orders[1, 0] != orders[2, 0], "another order the next epoch")

    # A 2-rank run, in one go and stopped mid-epoch then resumed.
    one = os.path.join(tmp, "one")
    code, out = run("run", [EXPERIMENT, "--set", f"output.root={one}"] + at + ranks_args(2),
                    timeout=300)
    check(code == 0, "the 2-rank run finishes")
    a = only_run_dir(one, "fashion_shards")
    summary = json.load(open(os.path.join(a, "summary.json"))) if a else {}
    check(summary.get("samples") == {"train": 2000, "val": 400, "test": 100},
          f"summary.json samples: {summary.get('samples')}")
    check(summary.get("best_metrics", {}).get("accuracy", 0) > 0.6,
          f"it learns from the shards: {summary.get('best_metrics')}")
    rows = list(csv.DictReader(open(os.path.join(a, "predictions.csv")))) if a else []
    names = {"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
             "bag", "ankle-boot"}
    check(len(rows) == 100 and all(r["class"] in names for r in rows),
          f"test_urls' 100 samples predicted, named by data.dataset.classes: {rows[:2]}")

    two = os.path.join(tmp, "two")
    run("run", [EXPERIMENT, "--set", f"output.root={two}", "--set", "train.max_steps=31"] + at +
        ranks_args(2), timeout=300)
    b = only_run_dir(two, "fashion_shards")
    code, out = run("run", [EXPERIMENT, "--set", f"output.root={two}", "--resume", b,
                            "--set", "train.max_steps="] + at + ranks_args(2), timeout=300)
    check(code == 0 and "resumed from" in out, f"the resume: {out[-800:]}")
    sa = [(r["step"], r["loss"]) for r in metrics(a, "step")] if a else []
    sb = [(r["step"], r["loss"]) for r in metrics(b, "step")] if b else []
    check(sa and sa == sb, f"resumed mid-epoch, the step losses are the one-go run's:\n{sa[28:34]}\n{sb[28:34]}")
    weights = []
    for tag, d in (("a", a), ("b", b)):
        path = os.path.join(tmp, tag + ".safetensors")
        run("export", [os.path.join(d or "", "checkpoints", "last.pt"), "-o", path])
        weights.append(read_safetensors(path) if os.path.exists(path) else {})
    check(weights[0] and weights[0] == weights[1], "the resumed run's weights are the one-go run's")

    # Shards missing: at validate, how many and the first.
    code, out = run("validate", [EXPERIMENT, "--set", "data.dataset.urls=train-{000000..000009}.tar"]
                    + at, expect=None)
    check(code == 2 and "2 of 10 shards missing, the first " + os.path.join(shards, "train-000008.tar") in out
          and len(out.strip().splitlines()) == 1, f"missing shards at validate: {out}")
    for command in (["run", "--dry-run"], ["run"]):
        root = os.path.join(tmp, "missing_" + str(len(command)))
        code, out = run(command[0], [EXPERIMENT] + command[1:] + [
            "--set", "data.dataset.urls=train-{000000..000009}.tar", "--set", f"output.root={root}"]
            + at + ranks_args(2), expect=None)
        check(code == 2 and "2 of 10 shards missing" in out and len(out.strip().splitlines()) == 1
              and "rank" not in out and not os.path.exists(root),
              f"missing shards at {' '.join(command)}: exit 2, one line, no rank, no folder: {out}")
    # A truncated shard: at validate, named.
    cut = os.path.join(tmp, "cut")
    shutil.copytree(shards, cut)
    with open(os.path.join(cut, "train-000003.tar"), "r+b") as f:
        f.truncate(100000)
    code, out = run("validate", [EXPERIMENT, "--set", f"data.dataset.root={cut}"], expect=None)
    check(code == 2 and "train-000003.tar" in out and "truncated" in out
          and len(out.strip().splitlines()) == 1, f"a truncated shard at validate: {out}")
    # A corrupt image inside a shard: the run stops naming shard and sample; skip counts it.
    bad = os.path.join(tmp, "bad")
    shutil.copytree(shards, bad)
    path = os.path.join(bad, "train-000005.tar")
    with tarfile.open(path) as t:
        member = next(m for m in t.getmembers() if m.name.endswith(".png"))
    with open(path, "r+b") as f:
        f.seek(member.offset_data + 8)  # past the PNG signature: the header chunk is garbage
        f.write(b"\xff" * 40)
    key = member.name.split(".")[0]
    code, out = run("run", [EXPERIMENT, "--set", f"data.dataset.root={bad}", "--set",
                            f"output.root={os.path.join(tmp, 'badrun')}", "--set", "data.check=none"]
                    + ranks_args(2), expect=None, timeout=300)
    check(code != 0 and f"train-000005.tar: sample {key}: cannot decode its .png image" in out,
          f"a corrupt image in a shard stops the run, naming shard and sample: {out[-1500:]}")
    code, out = run("run", [EXPERIMENT, "--set", f"data.dataset.root={bad}", "--set",
                            f"output.root={os.path.join(tmp, 'skiprun')}", "--set", "data.check=none",
                            "--set", "data.on_bad_image=skip"] + ranks_args(2), expect=None, timeout=300)
    skip_dir = only_run_dir(os.path.join(tmp, "skiprun"), "fashion_shards")
    skipped = json.load(open(os.path.join(skip_dir, "summary.json"))).get("skipped_images", {}) if skip_dir else {}
    check(code == 0 and skipped.get("train", 0) >= 1,
          f"data.on_bad_image: skip leaves it out and counts it: {skipped} {out[-800:]}")
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
