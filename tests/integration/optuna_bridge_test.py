#!/usr/bin/env python3
"""What each key of a sweep's sampler, pruner and storage does, through runner's Optuna bridge
(runner/python/optuna_bridge.py, the code `runner sweep` runs with search: optuna) and Optuna
itself: the same requests with one setting changed give other answers.

- sampler.seed: the same seed asks the same settings, another seed others;
- sampler.startup_trials: TPE's first trials are its random sampler's, as many as it says;
- pruner.min_resource: no trial is judged before that epoch;
- pruner.reduction_factor: successive halving keeps the best 1/reduction_factor at a rung;
- pruner.startup_trials, pruner.warmup_epochs: the median pruner judges nothing before that many
  finished trials, nor at the first warmup_epochs epochs;
- storage: an RDB URL (sqlite) holds the study instead of the journal file.
Usage: optuna_bridge_test.py RUNNER SOURCE_DIR   (RUNNER_PYTHON: a Python with Optuna)
"""
import json
import os
import subprocess
import sys
import tempfile

SOURCE = sys.argv[2]
PYTHON = os.environ.get("RUNNER_PYTHON") or "python3"
BRIDGE = os.path.join(SOURCE, "runner", "python", "optuna_bridge.py")
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL:", what)


def talk(requests):
    """The bridge's answers to `requests`, in order."""
    text = "".join(json.dumps(r) + "\n" for r in requests)
    out = subprocess.run([PYTHON, BRIDGE], input=text, capture_output=True, text=True, timeout=120)
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    for a in answers:
        if not a.get("ok"):
            raise RuntimeError(a.get("error"))
    return answers


SPACE = {"optimizer.lr": {"loguniform": [1e-4, 1e-1]}, "train.batch_size": {"choice": [16, 32, 64]}}


def study(tmp, name, sampler=None, pruner=None, storage=None):
    return {"op": "open", "study": name, "journal": os.path.join(tmp, name + ".journal"),
            "storage": storage, "direction": "maximize", "sampler": sampler or {"name": "random"},
            "pruner": pruner or {"name": "none"}, "space": SPACE}


def asked_settings(tmp, name, sampler, n):
    """The settings of n trials asked one after another, each told complete (value 1/(k+1))."""
    requests = [study(tmp, name, sampler)]
    for k in range(n):
        requests += [{"op": "ask", "trials": 100},
                     {"op": "tell", "number": k, "state": "complete", "value": 1.0 / (k + 1)}]
    answers = talk(requests)
    return [a["params"] for a in answers if "params" in a]


def decisions(tmp, name, pruner, finished, candidate):
    """Whether a trial reporting `candidate` (step -> value) is pruned at each step, after trials
    that finished with the `finished` curves (each a list of values at steps 1, 2, ...)."""
    requests = [study(tmp, name, pruner=pruner)]
    number = 0
    for curve in finished:
        requests.append({"op": "ask", "trials": 100})
        for step, value in enumerate(curve, start=1):
            requests.append({"op": "report", "number": number, "step": step, "value": value})
        requests.append({"op": "tell", "number": number, "state": "complete", "value": curve[-1]})
        number += 1
    requests.append({"op": "ask", "trials": 100})
    for step, value in sorted(candidate.items()):
        requests.append({"op": "report", "number": number, "step": step, "value": value})
    answers = talk(requests)
    return [a["prune"] for a in answers if "prune" in a][-len(candidate):]


def main():
    if subprocess.run([PYTHON, "-c", "import optuna"], capture_output=True).returncode != 0:
        print(f"SKIP: {PYTHON} has no optuna (make deps installs it)")
        return 77
    tmp = tempfile.mkdtemp()

    # sampler.seed
    a = asked_settings(tmp, "s1", {"name": "random", "seed": 3}, 3)
    b = asked_settings(tmp, "s2", {"name": "random", "seed": 3}, 3)
    c = asked_settings(tmp, "s3", {"name": "random", "seed": 4}, 3)
    check(a == b, f"sampler.seed 3 twice asks the same settings: {a} / {b}")
    check(a != c, "sampler.seed 4 asks other settings than seed 3")

    # sampler.startup_trials: TPE's first trials are its random sampler's
    random = asked_settings(tmp, "r", {"name": "random", "seed": 5}, 6)
    many = asked_settings(tmp, "t10", {"name": "tpe", "seed": 5, "startup_trials": 10}, 6)
    few = asked_settings(tmp, "t2", {"name": "tpe", "seed": 5, "startup_trials": 2}, 6)
    check(many == random, "tpe with startup_trials 10 asks its first 6 trials at random")
    check(few[:2] == random[:2] and few[2:] != random[2:],
          "tpe with startup_trials 2 models from the third trial on")

    # pruner.min_resource and reduction_factor (successive halving); finished trials 0.1..0.9
    finished = [[v / 10, v / 10, v / 10] for v in range(1, 10)]
    sh = {"name": "successive_halving", "min_resource": 1, "reduction_factor": 2}
    check(decisions(tmp, "sh1", sh, finished, {1: 0.05}) == [True],
          "successive halving prunes the worst trial at epoch 1 (min_resource 1)")
    check(decisions(tmp, "sh2", dict(sh, min_resource=2), finished, {1: 0.05}) == [False],
          "min_resource 2: nothing is judged at epoch 1")
    check(decisions(tmp, "rf2", sh, finished, {1: 0.65}) == [False],
          "reduction_factor 2 keeps a trial in the better half")
    check(decisions(tmp, "rf4", dict(sh, reduction_factor=4), finished, {1: 0.65}) == [True],
          "reduction_factor 4 keeps only the best quarter")

    # pruner.startup_trials and warmup_epochs (median)
    median = {"name": "median", "startup_trials": 0, "warmup_epochs": 0}
    check(decisions(tmp, "m0", median, finished[:3], {1: 0.01}) == [True],
          "median prunes a trial below the median of 3 finished ones")
    check(decisions(tmp, "m5", dict(median, startup_trials=5), finished[:3], {1: 0.01}) == [False],
          "median startup_trials 5: nothing is pruned after 3 finished trials")
    check(decisions(tmp, "mw", dict(median, warmup_epochs=1), finished[:3], {1: 0.01, 2: 0.01})
          == [False, True], "median warmup_epochs 1: epoch 1 is not judged, epoch 2 is")

    # storage: an RDB URL holds the study
    db = os.path.join(tmp, "study.db")
    talk([study(tmp, "rdb", storage=f"sqlite:///{db}"), {"op": "ask", "trials": 10}])
    check(os.path.getsize(db) > 0 and not os.path.exists(os.path.join(tmp, "rdb.journal")),
          "storage sqlite:///study.db holds the study (no journal file)")
    listing = talk([study(tmp, "rdb", storage=f"sqlite:///{db}"), {"op": "trials"}])[1]["trials"]
    check(len(listing) == 1, f"the study in study.db has its trial: {listing}")

    if failures:
        print(f"{failures} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
