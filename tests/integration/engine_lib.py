"""Helpers for the engine's whole-run tests (run with /usr/bin/python3; no third-party modules)."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

RUNNER = sys.argv[1] if len(sys.argv) > 1 else "runner"
SOURCE = sys.argv[2] if len(sys.argv) > 2 else "."
failures = []
created = []  # temporary folders, removed when every check passed (kept to debug a failure)


def check(ok, what):
    """Records a failed expectation (the test goes on, and fails at the end)."""
    if not ok:
        failures.append(what)
        print("FAIL: " + what, flush=True)


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    for d in created:
        shutil.rmtree(d, ignore_errors=True)
    print("all checks passed")


def free_port():
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tmpdir():
    created.append(tempfile.mkdtemp(prefix="runner_engine_"))
    return created[-1]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run(command, args, timeout=120, expect=0, cwd=None):
    """Runs `runner COMMAND ARGS...` (in `cwd`); returns (exit code, combined output)."""
    cmd = [RUNNER, command] + list(args)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           env=dict(os.environ, OMP_NUM_THREADS="1"), cwd=cwd)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        check(False, f"timed out after {timeout} s: {' '.join(cmd)}\n{out[-3000:]}")
        return None, out
    out = p.stdout.decode(errors="replace")
    if expect is not None and p.returncode != expect:
        check(False, f"exit {p.returncode} (expected {expect}): {' '.join(cmd)}\n{out[-3000:]}")
    return p.returncode, out


def ranks_args(n):
    return ["--set", f"launch.num_processes={n}", "--set", f"launch.master_port={free_port()}"]


def only_run_dir(root, name):
    """The single run directory of experiment `name` under `root`."""
    base = os.path.join(root, name)
    dirs = sorted(os.listdir(base)) if os.path.isdir(base) else []
    check(len(dirs) == 1, f"expected one run directory under {base}, found {dirs}")
    return os.path.join(base, dirs[-1]) if dirs else base


def metrics(run_dir, kind):
    """The metrics.jsonl records of one kind ('step' or 'epoch')."""
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind", r.get("type")) == kind:
                out.append(r)
    return out


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of a safetensors file: 8-byte header length, JSON, data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], data[a:b])
    return out
