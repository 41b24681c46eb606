"""Kill during save (issue 6): SIGKILL while checkpoints/last.pt.tmp is being written (a ResNet-50
with Adam state makes a ~280 MB checkpoint, slow enough to catch) leaves the previous last.pt
whole: it loads (runner export), and `runner run --resume` continues from it to the end.
Usage: engine_kill_save_test.py RUNNER SOURCE_DIR"""
import glob
import os
import signal
import subprocess
import time

from engine_lib import RUNNER, check, finish, only_run_dir, run, tmpdir, write

CONFIG = """
name: killsave
seed: 1
launch: {device: cpu, threads_per_process: 1, num_processes: 1}
data:
  dataset: {name: synthetic, train_size: 8, val_size: 4, test_size: 0, height: 8, width: 8, channels: 3}
  num_workers: 1
model: {backbone: resnet50, num_classes: 10}
optimizer: {name: adam, lr: 1.0e-4}
loss: {name: cross_entropy}
metrics: [{name: accuracy}]
train: {epochs: 4, batch_size: 4, log_every_steps: 1}
predict: {enabled: false}
"""

tmp = tmpdir()
exp = write(os.path.join(tmp, "killsave.yaml"), CONFIG)
root = os.path.join(tmp, "runs")
proc = subprocess.Popen([RUNNER, "run", exp, "--set", f"output.root={root}"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT)
killed = False
deadline = time.time() + 80
last = tmp_file = None
while proc.poll() is None and time.time() < deadline:
    dirs = glob.glob(os.path.join(root, "killsave", "*", "checkpoints"))
    if dirs:
        last, tmp_file = os.path.join(dirs[0], "last.pt"), os.path.join(dirs[0], "last.pt.tmp")
        # Only once a previous last.pt exists: the kill must hit the save that replaces it.
        if os.path.exists(last) and os.path.exists(tmp_file):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
    time.sleep(0.002)
proc.wait()
if not killed:
    print(proc.stdout.read().decode(errors="replace")[-3000:])
check(killed, "never saw checkpoints/last.pt.tmp beside an older last.pt to kill the run at")
run_dir = only_run_dir(root, "killsave")

if killed:
    # The previous checkpoint is whole: it loads, and the run resumes from it.
    run("export", [last, "-o", os.path.join(tmp, "x.safetensors")])
    code, out = run("run", [exp, "--resume", run_dir, "--set", f"output.root={root}"], timeout=150)
    check("resumed from" in out, f"the resumed run does not say where it resumed:\n{out[-2000:]}")
    check(os.path.exists(os.path.join(run_dir, "summary.json")), "the resumed run did not finish (no summary.json)")
    check(not glob.glob(os.path.join(run_dir, "checkpoints", "*.tmp")), "a .tmp checkpoint outlived the resumed run")
finish()
