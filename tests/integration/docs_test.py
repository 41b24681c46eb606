#!/usr/bin/env python3
"""The documentation a user finds (issue 44): README.md fits on two screens and links every page
of docs/; every relative link of README.md and docs/*.md leads to a file that exists; every
`runner COMMAND` their sh blocks show is a command runner has; every key they name (`a.b.c`,
`--set a.b=...`, the keys of their yaml blocks, a sweep's grid keys) is one the schema has;
every ```sh runnable block runs, command by command, against the built binary on a few hundred
images of Fashion-MNIST; docs/reference.md is what `runner schema --markdown` prints now
(regenerate it with that command when a key changes).
Usage: docs_test.py RUNNER SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


readme_path = os.path.join(SOURCE, "README.md")
with open(readme_path) as f:
    readme = f.read()
check(readme.startswith("# runner\n") and "make run" in readme.split("\n```")[1],
      "README.md begins with the two commands for a fresh machine")
check(len(readme.splitlines()) <= 150, f"README.md has {len(readme.splitlines())} lines (at most 150)")

docs = os.path.join(SOURCE, "docs")
pages = sorted(p for p in os.listdir(docs) if p.endswith(".md"))
check("reference.md" in pages, "docs/reference.md exists")
for page in pages:
    check(f"docs/{page}" in readme, f"README.md links docs/{page}")

link = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")
for path in [readme_path] + [os.path.join(docs, p) for p in pages]:
    with open(path) as f:
        text = f.read()
    for target, _ in link.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        check(os.path.exists(resolved), f"{os.path.relpath(path, SOURCE)} links {target}, which does not exist")

help_text = subprocess.run([RUNNER, "help"], capture_output=True, text=True).stdout
commands = set(re.findall(r"^  ([a-z][a-z-]+) ", help_text, re.M))
check(len(commands) > 8, f"runner help lists its commands: {sorted(commands)}")
texts = {"README.md": readme}
for page in pages:
    if page != "reference.md":
        with open(os.path.join(docs, page)) as f:
            texts[f"docs/{page}"] = f.read()
for name, text in texts.items():
    for block in re.findall(r"```sh[^\n]*\n(.*?)```", text, re.S):
        for command in re.findall(r"^(?:build/runner/)?runner ([a-z][a-z-]+)", block, re.M):
            check(command in commands, f"{name} shows 'runner {command}', which runner does not have")

# ---- what a resume may change: the docs say the list runner's help (and refusal) prints ----
run_help = " ".join(subprocess.run([RUNNER, "run", "--help"], capture_output=True,
                                   text=True).stdout.split())
help_list = re.search(r"only (.*?) may change", run_help)
docs_list = re.search(r"A command line may change only what a stopped run can take: (.*?) \(the list",
                      " ".join(texts["docs/resume-and-interrupts.md"].split()))
help_keys = set(re.findall(r"[a-z_]+(?:\.[a-z_*]+)*", help_list.group(1))) if help_list else set()
docs_keys = set(re.findall(r"`([^`]+)`", docs_list.group(1))) if docs_list else set()
check(help_keys and help_keys == docs_keys,
      f"docs/resume-and-interrupts.md lists what a resume may change as runner run --help does: "
      f"docs {sorted(docs_keys)}, help {sorted(help_keys)}")

# ---- every key the pages name is in the schema (through docs/reference.md, checked below) ----
with open(os.path.join(docs, "reference.md")) as f:
    reference = f.read()
experiment_part = reference[reference.index("## Experiment files"):reference.index("## Plugins")]
plugin_part = reference[reference.index("## Plugins"):reference.index("## Sweep files")]
core_keys = set(re.findall(r"^\| `([^`]+)` \|", experiment_part, re.M))
plugin_params, kind = {}, None
for line in plugin_part.splitlines():
    heading = re.match(r"^### (\w+)", line)
    if heading:
        kind = heading.group(1)
    row = re.match(r"^\| `([^`]+)` \|", line)
    if row and kind:
        plugin_params.setdefault(kind, set()).add(row.group(1))
check(len(core_keys) > 50 and len(plugin_params) >= 6,
      f"docs/reference.md lists the keys ({len(core_keys)} core, kinds {sorted(plugin_params)})")
# Where a plugin's parameters sit in an experiment: prefix -> plugin kind.
PLUGIN_AT = {"data.dataset": "datasets", "model": "models", "optimizer": "optimizers",
             "scheduler": "schedulers", "loss": "losses"}
SECTIONS = "data|model|optimizer|scheduler|loss|train|predict|output|launch"
FILE_SUFFIXES = {"py", "log", "yaml", "json", "jsonl", "csv", "html", "pt", "png", "md", "txt",
                 "safetensors"}


def known_key(path):
    """Whether `path` (a.b.c) is a key of the experiment schema or a parameter of a plugin where
    plugins sit; a list index or a * ends what is checked."""
    parts = []
    for part in path.split("."):
        if part.isdigit() or "*" in part:
            break
        parts.append(part)
    path = ".".join(parts)
    if "." not in path or path in core_keys or any(k.startswith(path + ".") for k in core_keys):
        return True
    for prefix, plugin_kind in sorted(PLUGIN_AT.items(), key=lambda kv: -len(kv[0])):
        if path.startswith(prefix + "."):
            first = path[len(prefix) + 1:].split(".")[0]
            return first == "name" or first in plugin_params.get(plugin_kind, ())
    return False


def flattened(mapping, prefix=""):
    for key, value in mapping.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, dict) and not path.endswith(("grid", "points", "distributions")):
            yield from flattened(value, path + ".")


inline_key = re.compile(r"`(?:--set )?((?:%s)(?:\.[A-Za-z0-9_*]+)+)([^`]*)`" % SECTIONS)
set_key = re.compile(r"--set ((?:%s)(?:\.[A-Za-z0-9_*]+)+)=" % SECTIONS)
named = 0
for name, text in texts.items():
    for match in inline_key.finditer(text):
        key, rest = match.group(1), match.group(2)
        if key.rsplit(".", 1)[-1] in FILE_SUFFIXES or "unknown key" in rest:
            continue  # a file name (train.py, output.log), or an error message shown as such
        named += 1
        check(known_key(key), f"{name} names `{key}`, which is no key of the schema")
    for key in set_key.findall(text):
        named += 1
        check(known_key(key), f"{name} sets --set {key}=..., which is no key of the schema")
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        try:
            document = yaml.safe_load(block)
        except yaml.YAMLError as e:
            check(False, f"{name}: a yaml block does not parse: {e}")
            continue
        if not isinstance(document, dict):
            continue
        sweep = "base" in document or "grid" in document or "executor" in document
        keys = list(document.get("grid", {})) if sweep else list(flattened(document))
        for key in keys:
            named += 1
            check(not re.match(r"^(%s)\." % SECTIONS, key) or known_key(key),
                  f"{name}: its yaml block has {key}, which is no key of the schema")
check(named > 100, f"the pages name keys ({named} found)")

# ---- every ```sh runnable block runs against the built binary, on a few hundred images ----
FASHION = "/usr/share/datasets/fashion-mnist"
blocks = [(name, block) for name, text in texts.items()
          for block in re.findall(r"```sh runnable\n(.*?)```", text, re.S)]
check(len(blocks) >= 1, "the docs have a runnable block")
if not os.path.isdir(FASHION):
    print(f"SKIP the runnable blocks: {FASHION} is absent (Debian's dataset-fashion-mnist)")
    blocks = []
# The runs are cut short: runner run (not a resume) gets a few hundred images and warn logs.
PREAMBLE = """set -e
trap 'echo "FAILED: $BASH_COMMAND" >&2' ERR
runner() {
  if [ "$1" = run ] && [ "${2:-}" != --resume ]; then
    command runner "$@" --set data.limit.train=256 --set data.limit.val=128 \\
      --set data.limit.test=64 --log-level warn
  else
    command runner "$@"
  fi
}
"""
work = tempfile.mkdtemp(prefix="runner_docs_")
try:
    os.symlink(os.path.abspath(os.path.join(SOURCE, "experiments")), os.path.join(work, "experiments"))
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(RUNNER)) + ":" + os.environ["PATH"])
    for name, block in blocks:
        script = PREAMBLE + block.replace("build/runner/runner ", "runner ")
        result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                                text=True, timeout=900)
        check(result.returncode == 0, f"{name}: a runnable block fails:\n"
                                      f"{(result.stdout + result.stderr)[-1500:]}")
        if result.returncode == 0:
            print(f"{name}: its runnable block ran ({len(block.strip().splitlines())} commands)")
finally:
    shutil.rmtree(work, ignore_errors=True)

generated = subprocess.run([RUNNER, "schema", "--markdown"], capture_output=True, text=True, check=True).stdout
with open(os.path.join(docs, "reference.md")) as f:
    committed = f.read()
if generated != committed:
    old, new = committed.splitlines(), generated.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    check(False, "docs/reference.md is stale (first difference at line "
          f"{first + 1}): regenerate it with `runner schema --markdown > docs/reference.md`")
# ARCHITECTURE.md is the map: every path it names exists, every area it lists is there, and
# every area of runner/src and plugins/ is listed.
with open(os.path.join(SOURCE, "ARCHITECTURE.md")) as f:
    architecture = f.read()
check("ARCHITECTURE.md" in readme, "README.md links ARCHITECTURE.md")
named = set(re.findall(r"`((?:runner|plugins|tests|schemas|bench|experiments)/[^`<>*\s]*)`", architecture))
check(len(named) > 30, f"ARCHITECTURE.md names the code's folders and files ({len(named)} found)")
for path in sorted(named):
    check(os.path.exists(os.path.join(SOURCE, path)), f"ARCHITECTURE.md names {path}, which does not exist")
for parent in ("runner/src", "plugins"):
    for area in sorted(os.listdir(os.path.join(SOURCE, parent))):
        if os.path.isdir(os.path.join(SOURCE, parent, area)):
            check(f"`{parent}/{area}/`" in architecture, f"ARCHITECTURE.md lists the area {parent}/{area}/")

# The README's speed row quotes bench/RESULTS.md's latest figures (one source for them).
with open(os.path.join(SOURCE, "bench", "RESULTS.md")) as f:
    results = f.read()
latest = results.split("## The latest figures", 1)[1].split("\n## ", 1)[0] if "## The latest figures" in results else ""
rows = {cells[0]: cells[1:] for cells in
        ([c.strip() for c in line.strip("|").split("|")] for line in latest.splitlines() if line.startswith("| "))
        if len(cells) == 3 and re.match(r"^[0-9.]+$", cells[1])}
check("convnext_small" in rows, "bench/RESULTS.md has a section 'The latest figures' with convnext_small's row")
speed = [line for line in readme.splitlines() if line.startswith("| speed against the Python original")]
check(len(speed) == 1 and "bench/RESULTS.md#the-latest-figures" in speed[0],
      "README.md's speed row links bench/RESULTS.md#the-latest-figures")
if rows.get("convnext_small") and speed:
    fp32, bf16 = rows["convnext_small"]
    ratios = [float(v) for cells in rows.values() for v in cells]
    quoted = f"convnext_small {fp32}x fp32, {bf16}x bf16; every family {min(ratios):.2f}-{max(ratios):.2f}x"
    check(quoted in speed[0], f"README.md's speed row says '{quoted}' as bench/RESULTS.md does: {speed[0]}")

print(f"{len(failures)} problem(s)" if failures else "all checks passed")
sys.exit(1 if failures else 0)
