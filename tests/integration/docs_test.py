#!/usr/bin/env python3
"""The documentation a user finds (issue 44): README.md fits on two screens and links every page
of docs/; every relative link of README.md and docs/*.md leads to a file that exists; every
`runner COMMAND` the README shows is a command runner has; docs/reference.md is what
`runner schema --markdown` prints now (regenerate it with that command when a key changes).
Usage: docs_test.py RUNNER SOURCE_DIR
"""
import os
import re
import subprocess
import sys

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
for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
    for command in re.findall(r"^(?:build/runner/)?runner ([a-z][a-z-]+)", block, re.M):
        check(command in commands, f"README.md shows 'runner {command}', which runner does not have")

generated = subprocess.run([RUNNER, "schema", "--markdown"], capture_output=True, text=True, check=True).stdout
with open(os.path.join(docs, "reference.md")) as f:
    committed = f.read()
if generated != committed:
    old, new = committed.splitlines(), generated.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    check(False, "docs/reference.md is stale (first difference at line "
          f"{first + 1}): regenerate it with `runner schema --markdown > docs/reference.md`")
print(f"{len(failures)} problem(s)" if failures else "all checks passed")
sys.exit(1 if failures else 0)
