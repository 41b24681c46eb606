#!/usr/bin/env python3
"""Only runner talks (issue 20): a 2-rank convnext run on CPU, and every line of its stdout and
stderr is one of runner's: a logger line ("[HH:MM:SS] level ...", "[rank N] " before it on other
ranks; libtorch's own messages arrive as "libtorch: ..." through the logger) or a progress line.
No raw libtorch/c10d/Gloo line, and nothing twice from each rank.
Usage: quiet_ranks_test.py RUNNER SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

RUNNER, SOURCE = sys.argv[1], sys.argv[2]
FMNIST = "/usr/share/datasets/fashion-mnist"
LOGGER = re.compile(r"^(\[rank \d+\] )?\[\d\d:\d\d:\d\d\] (trace|debug|info|warning|error|critical) ")
PROGRESS = re.compile(r"^(epoch \d+/\d+|validate|predict) \d+/\d+ ")


def main():
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    tmp = tempfile.mkdtemp(prefix="runner_quiet_")
    try:
        cmd = [RUNNER, "run", os.path.join(SOURCE, "experiments", "mnist_ddp_fp16.yaml"), "--cpu",
               "--set", "model.backbone=convnext_atto", "--set", "data.limit.train=256",
               "--set", "data.limit.val=64", "--set", "data.limit.test=32",
               "--set", "train.batch_size=16", "--set", "train.epochs=1",
               "--set", "data.num_workers=1", "--set", f"output.root={tmp}",
               "--set", "launch.master_port=0"]  # a free port: other tests run beside it
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
        lines = (p.stdout + p.stderr).splitlines()
        if p.returncode != 0:
            print("\n".join(lines[-30:]))
            print(f"FAIL: the run exited {p.returncode}")
            return 1
        foreign = [line for line in lines if line.strip() and not LOGGER.match(line)
                   and not PROGRESS.match(line)]
        for line in foreign:
            print("FAIL: not from runner's logger:", line)
        if not any(line.startswith("[") and " info run " in line for line in lines):
            print("FAIL: the main process's run line is missing")
            return 1
        print(f"{len(lines)} lines, {len(foreign)} foreign")
        return 1 if foreign else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
