#!/usr/bin/env python3
"""`train.profile` as a user meets it: a window of optimizer steps recorded by PyTorch's profiler.

- a 2-rank run with the window at steps 3-5: RUN/profile/trace.json is a Chrome trace holding
  exactly the spans ProfilerStep#3..#5 and the model's convolutions; summary.json's profile and
  profile/summary.md say 3 steps from step 3 with the ops that took the time; the log names the
  window; the profiler's own progress lines stay off the console; the training is the same loss
  for loss as the run without the key (recording changes nothing it trains);
- validate, run --dry-run and run refuse a window the run never reaches (one line at the key
  that set it, exit 2, no run folder made);
- a full disk (a tiny tmpfs, as root) when the trace is written: one line naming
  profile/trace.json and the full disk, exit 1, no partial trace left, summary.json says failed.
Usage: profile_test.py RUNNER SOURCE_DIR
"""
import json
import os
import subprocess

from engine_lib import check, finish, metrics, ranks_args, run, tmpdir, write


def experiment(path, train_extra="", train_size=128):
    return write(path, f"""name: profiled
seed: 3
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: synthetic, height: 28, width: 28, train_size: {train_size}, val_size: 32, test_size: 0}}
  num_workers: 1
model: {{backbone: small_cnn, in_chans: 1, num_classes: 10}}
optimizer: {{name: adam, lr: 0.001}}
train: {{epochs: 2, batch_size: 16, log_every_steps: 1{train_extra}}}
predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def full_disk(tmp):
    """The trace written onto a full disk: a 2 MiB tmpfs holds the run's first files, not the
    trace of 30 steps."""
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    if os.getuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", full],
                                          capture_output=True).returncode != 0:
        print("note: the full-disk case needs root and a tmpfs mount: skipped")
        return
    try:
        yaml = experiment(os.path.join(tmp, "long.yaml"), train_size=1024)
        run_dir = os.path.join(full, "run")
        code, out = run("run", [yaml, "--set", f"output.run_dir={run_dir}",
                                "--set", "train.profile.enabled=true",
                                "--set", "train.profile.skip_steps=2",
                                "--set", "train.profile.steps=30"], expect=None, timeout=300)
        errors = [l for l in out.splitlines() if "error" in l]
        left = os.listdir(os.path.join(run_dir, "profile")) \
            if os.path.isdir(os.path.join(run_dir, "profile")) else []
        check(code == 1 and len(errors) == 1 and
              f"cannot write {run_dir}/profile/trace.json: No space left" in errors[0] and
              "the disk is full" in errors[0],
              f"a full disk at the trace: one line naming it and why: {code} {errors}")
        check(left == [], f"no partial trace left in profile/: {left}")
        summary = os.path.join(run_dir, "summary.json")
        check(os.path.isfile(summary) and json.load(open(summary)).get("status") == "failed",
              "summary.json records the failure (the partial trace's space is free again)")
    finally:
        subprocess.run(["umount", full])


def main():
    tmp = tmpdir()
    yaml = experiment(os.path.join(tmp, "profiled.yaml"))
    window = ["--set", "train.profile.enabled=true", "--set", "train.profile.skip_steps=2",
              "--set", "train.profile.steps=3"]

    # 128 samples / 2 ranks / batch 16 = 4 steps an epoch, 8 in the run.
    unreachable = experiment(os.path.join(tmp, "unreachable.yaml"),
                             ", profile: {enabled: true}")
    code, out = run("validate", [unreachable, "--set", "launch.num_processes=2"], expect=2)
    lines = [l for l in out.splitlines() if "train.profile" in l]
    check(code == 2 and len(lines) == 1 and lines[0].startswith(unreachable + ":9:")
          and "records steps 11-30, but the run takes 8 optimizer steps" in lines[0]
          and "lower train.profile.skip_steps" in lines[0],
          f"validate names the unreachable window at its key:\n{out[-800:]}")

    # The same refusal from every entry point, before any rank or run folder.
    for command in (["run", "--dry-run"], ["run"]):
        never = os.path.join(tmp, "never")
        code, out = run(command[0], [unreachable] + command[1:] +
                        ["--set", f"output.run_dir={never}"] + ranks_args(2), expect=2)
        lines = [l for l in out.splitlines() if l.strip()]
        check(len(lines) == 1 and "records steps 11-30, but the run takes 8" in lines[0]
              and not os.path.exists(never),
              f"runner {' '.join(command)}: one line, no run folder:\n{out[-800:]}")

    code, out = run("validate", [unreachable, "--set", "train.profile.steps=7"], expect=2)
    check(out.strip().startswith("--set train.profile.steps=7: train.profile records steps 11-17, "
                                 "but the run takes 16 optimizer steps"),
          f"a window made too long by its steps is refused at that key:\n{out[-800:]}")

    profiled = os.path.join(tmp, "with")
    code, out = run("run", [yaml, "--set", f"output.run_dir={profiled}"] + window + ranks_args(2),
                    timeout=300)
    check(code == 0, "the profiled run finishes")
    check("train.profile: optimizer steps 3-5 recorded" in out, f"the log names the window:\n{out[-1500:]}")
    check("STAGE:" not in out and "gpuGetDeviceCount" not in out,
          f"Kineto's own lines stay in the log file:\n{out[-1500:]}")
    trace_path = os.path.join(profiled, "profile", "trace.json")
    check(os.path.isfile(trace_path) and not os.path.exists(trace_path + ".tmp"),
          "profile/trace.json written whole")
    if os.path.isfile(trace_path):
        events = json.load(open(trace_path))["traceEvents"]
        spans = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
        check(spans == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"],
              f"the trace holds the window's step spans: {spans}")
        check(any("convolution" in e.get("name", "") for e in events),
              "the trace holds the model's convolutions")
    summary = json.load(open(os.path.join(profiled, "summary.json")))
    p = summary.get("profile", {})
    check(p.get("first_step") == 3 and p.get("steps") == 3 and p.get("steps_asked") == 3
          and p.get("device") == "cpu" and p.get("host_ms_per_step", 0) > 0,
          f"summary.json's profile: {p}")
    top = [op["name"] for op in p.get("top_host_ops", [])]
    check(0 < len(top) <= 10 and any("conv" in name for name in top),
          f"the ops with the most self time include the convolutions: {top}")
    md_path = os.path.join(profiled, "profile", "summary.md")
    md = open(md_path).read() if os.path.isfile(md_path) else ""
    check("# Profile of optimizer steps 3-5 (3 of 3 asked)" in md and top and f"`{top[0]}`" in md,
          f"profile/summary.md:\n{md[:600]}")

    full_disk(tmp)

    plain = os.path.join(tmp, "without")
    run("run", [yaml, "--set", f"output.run_dir={plain}"] + ranks_args(2), timeout=300)
    a = [r["loss"] for r in metrics(profiled, "step")]
    b = [r["loss"] for r in metrics(plain, "step")]
    check(len(a) == 8 and a == b, f"the same losses with and without the profile: {a} vs {b}")
    check(not os.path.exists(os.path.join(plain, "profile")), "no profile/ without the key")
    finish()


if __name__ == "__main__":
    main()
