#!/usr/bin/env python3
"""Every config key acts (issue 13): each leaf key of schemas/experiment.schema.json, of every
registered plugin's parameter schema and of schemas/sweep.schema.json (as sweep.<key>) must be
listed in tests/key_effects.tsv, which names the
test that shows a user-visible effect of changing it (an output, a metric, a file, an error).

A table row is `PATTERN<TAB>FILE<TAB>IDENTIFIER<TAB>EFFECT`: PATTERN matches key paths
(`train.batch_size`, `transforms.normalize.mean`, `models.*.in_chans`; fnmatch wildcards), FILE
is a test file under the source tree and IDENTIFIER a string that must occur in it (the test's
name or the line that changes the key). The check fails for a key no row covers, for a row whose
file or identifier is missing, and for a row that covers no key (stale). A key the core reads
(launch.*, data.* outside the plugin sections, train.*, precision, predict.*, output.*, seed)
must be shown by a whole run through the CLI: its row names a test under tests/integration/
(a unit test of the function behind a key passes when the key's wiring is removed), unless its
EFFECT begins with "GPU only:" (no effect a CPU machine can see).
Usage: key_audit_test.py RUNNER SOURCE_DIR
"""
import fnmatch
import json
import os
import subprocess
import sys

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
TABLE = os.path.join(SOURCE, "tests", "key_effects.tsv")
# Sections whose content is a plugin's parameters (walked through the plugin schemas instead).
PLUGIN_SECTIONS = {"data.dataset", "data.train_transforms", "data.eval_transforms", "optimizer",
                   "scheduler", "loss", "metrics", "output.trackers"}


CORE_ROOTS = ("launch.", "data.", "train.", "precision", "predict.", "output.", "seed")


def read_by_core(key):
    return key.startswith(CORE_ROOTS) and not any(
        key == s or key.startswith(s + ".") for s in PLUGIN_SECTIONS)


def schema_keys(node, path, out):
    props = node.get("properties")
    if props:
        for key, sub in props.items():
            schema_keys(sub, path + [key], out)
    elif ".".join(path) not in PLUGIN_SECTIONS and path:
        out.append(".".join(path))


def main():
    keys = []
    with open(os.path.join(SOURCE, "schemas", "experiment.schema.json")) as f:
        schema_keys(json.load(f), [], keys)
    listed = subprocess.run([RUNNER, "plugins", "--json"], capture_output=True, text=True,
                            check=True).stdout
    for kind, plugins in json.loads(listed).items():
        for name, entry in plugins.items():
            params = entry.get("schema") or entry.get("parameters") or {}
            found = []
            schema_keys(params, [], found)
            keys += [f"{kind}.{name}.{k}" for k in found]
    # Sweep files are configs too: their keys as sweep.<key>.
    with open(os.path.join(SOURCE, "schemas", "sweep.schema.json")) as f:
        found = []
        schema_keys(json.load(f), [], found)
        keys += [f"sweep.{k}" for k in found]
    # The selector of each plugin section picks the plugin: `runner plugins` lists them.
    keys += ["data.dataset.name", "data.train_transforms.name", "data.eval_transforms.name",
             "optimizer.name", "scheduler.name", "loss.name", "metrics.name"]

    rows = []
    problems = []
    with open(TABLE) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                problems.append(f"{TABLE}:{n}: want 4 tab-separated fields, got {len(parts)}")
                continue
            pattern, file, ident, effect = parts
            path = os.path.join(SOURCE, file)
            if not os.path.isfile(path):
                problems.append(f"{TABLE}:{n}: {file} does not exist")
            elif ident not in open(path, errors="replace").read():
                problems.append(f"{TABLE}:{n}: '{ident}' does not occur in {file}")
            rows.append((n, pattern))
            core = [k for k in keys if fnmatch.fnmatchcase(k, pattern) and read_by_core(k)]
            if core and not file.startswith("tests/integration/") and \
                    not effect.startswith("GPU only:"):
                problems.append(f"{TABLE}:{n}: {core[0]} is read by the core: show its effect "
                                f"in a run through the CLI (a test under tests/integration/), "
                                f"not in {file}")
    for key in keys:
        if not any(fnmatch.fnmatchcase(key, p) for _, p in rows):
            problems.append(f"{key}: no test shows what changing it does (add a row to "
                            f"tests/key_effects.tsv, or remove the key)")
    for n, pattern in rows:
        if not any(fnmatch.fnmatchcase(k, pattern) for k in keys):
            problems.append(f"{TABLE}:{n}: '{pattern}' matches no key (stale row)")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(keys)} keys, {len(rows)} rows: " + (f"{len(problems)} problem(s)" if problems
                                                    else "every key has a test"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
