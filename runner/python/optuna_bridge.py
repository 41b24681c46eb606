"""runner's bridge to Optuna (`runner sweep` with `search: optuna`): one study, driven by ask and
tell, one JSON request a line on stdin, one JSON answer a line on stdout. runner runs the trials;
Optuna's samplers choose their parameters and its pruners judge their epochs.

Requests: {"op": "open", ...}, {"op": "probe", "storage": URL}, {"op": "ask"}, {"op": "adopt", "number": N},
{"op": "report", "number": N, "step": E, "value": V}, {"op": "tell", "number": N,
"state": "complete" | "pruned" | "fail", "value": V}, {"op": "trials"}.
Answers: {"ok": true, ...} or {"ok": false, "error": "one line"}.
Compiled into runner (python -c); the project's venv has Optuna (`make deps`).
"""
import json
import math
import os
import sys


def fail(message):
    raise RuntimeError(message)


def sampler_of(spec, space):
    import optuna
    name, seed = spec.get("name", "tpe"), spec.get("seed")
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=spec.get("startup_trials", 10))
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "grid":
        grid = {}
        for key, dist in space.items():
            if "choice" not in dist:
                fail(f"sampler grid takes {{choice: [...]}} distributions only; {key} is not one")
            grid[key] = dist["choice"]
        return optuna.samplers.GridSampler(grid, seed=seed)
    fail(f"unknown sampler {name}")


def pruner_of(spec):
    import optuna
    name = spec.get("name", "none")
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "median":
        # Epochs count from 1: the first judged is warmup_epochs + 1 (Optuna's earliest step).
        return optuna.pruners.MedianPruner(n_startup_trials=spec.get("startup_trials", 5),
                                           n_warmup_steps=spec.get("warmup_epochs", 0) + 1)
    if name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=spec.get("min_resource", 1), reduction_factor=spec.get("reduction_factor", 3))
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=spec.get("min_resource", 1), max_resource=spec.get("max_resource", "auto"),
            reduction_factor=spec.get("reduction_factor", 3))
    fail(f"unknown pruner {name}")


def distribution_of(dist):
    import optuna.distributions as d
    if "uniform" in dist:
        lo, hi = dist["uniform"]
        return d.FloatDistribution(lo, hi)
    if "loguniform" in dist:
        lo, hi = dist["loguniform"]
        return d.FloatDistribution(lo, hi, log=True)
    if "int" in dist:
        lo, hi = dist["int"]
        return d.IntDistribution(lo, hi)
    if "choice" in dist:
        return d.CategoricalDistribution(dist["choice"])
    fail(f"unknown distribution {dist}")


def storage_of(url, journal):
    import optuna
    if url:
        return url  # an RDB URL (postgresql://, sqlite:///): Optuna's own storage
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    return JournalStorage(JournalFileBackend(journal))


class Bridge:
    def __init__(self):
        self.study = None
        self.space = {}
        self.trials = {}  # number -> optuna.trial.Trial this process asked or adopted

    def open(self, r):
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = storage_of(r.get("storage"), r["journal"])
        self.space = {k: distribution_of(v) for k, v in r["space"].items()}
        self.study = optuna.create_study(
            study_name=r["study"], storage=storage, load_if_exists=True,
            direction=r["direction"], sampler=sampler_of(r.get("sampler", {}), r["space"]),
            pruner=pruner_of(r.get("pruner", {})))
        said = self.study.user_attrs.get("runner.space")
        if said is None:
            self.study.set_user_attr("runner.space", r["space"])
        elif said != r["space"]:
            changed = sorted(k for k in set(said) | set(r["space"]) if said.get(k) != r["space"].get(k))
            fail(f"study {r['study']} searched another space ({', '.join(changed)} differ): "
                 f"give the sweep another name or storage, or put the space back")
        return {"trials": self.list_trials()["trials"]}

    def probe(self, r):
        # The storage answers and holds this Optuna's schema (RDBStorage connects and checks
        # it); the default journal file needs nothing.
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if r.get("storage"):
            optuna.storages.RDBStorage(r["storage"])
        return {}

    def list_trials(self, r=None):
        out = []
        for t in self.study.get_trials(deepcopy=False):
            if t.user_attrs.get("runner.over_budget"):
                continue
            out.append({"number": t.number, "state": t.state.name.lower(), "params": t.params,
                        "value": t.value, "epochs": len(t.intermediate_values),
                        "point": t.user_attrs.get("runner.point")})
        return {"trials": out}

    def ask(self, r):
        import optuna
        from optuna.trial import TrialState
        counted = self.study.get_trials(deepcopy=False, states=(
            TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING))
        if len(counted) >= r["trials"]:
            return {"number": -1}
        trial = self.study.ask(self.space)
        if trial.number >= r["trials"]:
            # Workers sharing the study asked at once: numbers count every trial, so one past
            # the budget is told over and left out of the listing; exactly `trials` run.
            trial.set_user_attr("runner.over_budget", True)
            self.study.tell(trial, state=TrialState.FAIL)
            return {"number": -1}
        if "point" in r:
            trial.set_user_attr("runner.point", r["point"].format(number=trial.number))
        self.trials[trial.number] = trial
        return {"number": trial.number, "params": trial.params,
                "point": trial.user_attrs.get("runner.point")}

    def adopt(self, r):
        import optuna
        storage = self.study._storage
        trial_id = storage.get_trial_id_from_study_id_trial_number(self.study._study_id, r["number"])
        trial = optuna.trial.Trial(self.study, trial_id)
        self.trials[r["number"]] = trial
        return {"number": r["number"], "params": trial.params}

    def report(self, r):
        trial = self.trials[r["number"]]
        value = r["value"]
        if value is None or not math.isfinite(value):
            return {"prune": True}
        trial.report(value, r["step"])
        return {"prune": bool(trial.should_prune())}

    def tell(self, r):
        from optuna.trial import TrialState
        state = {"complete": TrialState.COMPLETE, "pruned": TrialState.PRUNED,
                 "fail": TrialState.FAIL}[r["state"]]
        value = r.get("value") if state == TrialState.COMPLETE else None
        if state == TrialState.COMPLETE and (value is None or not math.isfinite(value)):
            state = TrialState.FAIL
        self.study.tell(r["number"], value, state=state, skip_if_finished=True)
        self.trials.pop(r["number"], None)
        return {}


def main():
    bridge = Bridge()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            ops = {"open": bridge.open, "probe": bridge.probe, "ask": bridge.ask, "adopt": bridge.adopt,
                   "report": bridge.report, "tell": bridge.tell, "trials": bridge.list_trials}
            if r.get("op") not in ops:
                fail(f"unknown request {r.get('op')}")
            answer = ops[r["op"]](r)
            answer["ok"] = True
        except Exception as e:  # one line back, whatever Optuna raised
            text = str(e).strip().splitlines()
            answer = {"ok": False, "error": (text[0] if text else type(e).__name__)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        import optuna  # noqa: F401
    except ImportError:
        sys.stdout.write(json.dumps({"ok": False, "error": "optuna is not installed in "
                                     f"{sys.executable}: run `make deps` (it installs the "
                                     "project's venv) or set RUNNER_PYTHON"}) + "\n")
        sys.exit(3)
    main()
