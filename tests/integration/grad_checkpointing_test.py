#!/usr/bin/env python3
"""`model.grad_checkpointing` as a user meets it (issue 52, item 6): native convnext and resnet
blocks recomputed in backward train exactly as without it.

- convnext_atto (drop path on) and resnet10t, 1 and 2 CPU ranks: the per-step losses equal the
  run without checkpointing within 1e-6 and the exported weights (BatchNorm statistics
  included) within 1e-5;
- refused at validate where it cannot act: small_cnn (no blocks), timm/<name> (TorchScript
  cannot recompute: timm's set_grad_checkpointing does not script).
Usage: grad_checkpointing_test.py RUNNER SOURCE_DIR
"""
import os
import struct

from engine_lib import check, finish, metrics, ranks_args, read_safetensors, run, tmpdir, write


def experiment(path, backbone):
    return write(path, f"""name: ckpt
seed: 4
launch: {{num_processes: 1, device: cpu, threads_per_process: 1}}
data:
  dataset: {{name: synthetic, height: 32, width: 32, train_size: 96, val_size: 16, test_size: 0}}
  num_workers: 0
model: {{backbone: {backbone}, in_chans: 1, num_classes: 10, drop_path_rate: 0.1}}
optimizer: {{name: adamw, lr: 0.002}}
scheduler: {{name: none}}
train: {{epochs: 1, batch_size: 12, log_every_steps: 1}}
predict: {{enabled: false}}
output: {{root: {os.path.dirname(path)}/runs, tensorboard: false}}
""")


def floats(raw):
    dtype, _, data = raw
    return struct.unpack(f"<{len(data) // 4}f", data) if dtype == "F32" else None


def main():
    tmp = tmpdir()
    for backbone in ("convnext_atto", "resnet10t"):
        yaml = experiment(os.path.join(tmp, backbone + ".yaml"), backbone)
        for ranks in (1, 2):
            result = {}
            for on in ("false", "true"):
                run_dir = os.path.join(tmp, f"{backbone}_{ranks}_{on}")
                code, text = run("run", [yaml, "--set", f"output.run_dir={run_dir}", "--set",
                                         f"model.grad_checkpointing={on}"] + ranks_args(ranks),
                                 timeout=300)
                out = os.path.join(tmp, f"{backbone}_{ranks}_{on}.safetensors")
                run("export", [run_dir, "--output", out])
                result[on] = ([r["loss"] for r in metrics(run_dir, "step")] if code == 0 else [],
                              read_safetensors(out) if os.path.exists(out) else {})
            (a, wa), (b, wb) = result["false"], result["true"]
            check(len(a) == len(b) > 0 and all(abs(x - y) <= 1e-6 for x, y in zip(a, b)),
                  f"{backbone}, {ranks} rank(s): the same losses with checkpointing: {a} {b}")
            worst = 0.0
            for name, raw in wa.items():
                x, y = floats(raw), floats(wb.get(name, raw))
                if x is not None and y is not None:
                    worst = max([worst] + [abs(p - q) for p, q in zip(x, y)])
            check(wa and set(wa) == set(wb) and worst <= 1e-5,
                  f"{backbone}, {ranks} rank(s): the same weights (largest difference {worst:.1e})")

    yaml = experiment(os.path.join(tmp, "small.yaml"), "small_cnn")
    code, text = run("validate", [yaml, "--set", "model.grad_checkpointing=true"], expect=2)
    check("model.grad_checkpointing" in text, f"small_cnn refuses grad_checkpointing: {text}")
    code, text = run("validate", [yaml, "--set", "model.backbone=timm/resnet10t", "--set",
                                  "model.grad_checkpointing=true"], expect=2)
    check("model.grad_checkpointing" in text, f"timm/ refuses grad_checkpointing: {text}")
    finish()


if __name__ == "__main__":
    main()
