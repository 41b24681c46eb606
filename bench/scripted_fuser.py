#!/usr/bin/env python3
"""TorchScript's CPU fuser (NNC / TensorExpr) on the scripted timm models runner trains as
timm/<name> (issue 42, item 5): a 1-thread training step (forward, backward, fused Adam) of the
scripted model, with the fuser off (runner's setting: the profiling executor without fusion)
and on (`_jit_override_can_fuse_on_cpu`, `_jit_set_texpr_fuser_enabled`); the torch wheel's
libtorch is the one runner links. One line per model and setting; a setting that fails prints
why (each run in its own process, with a time limit).

  .venv/bin/python bench/scripted_fuser.py [--timeout 300] [--llvm-only 1]
"""
import argparse
import subprocess
import sys

ONE_RUN = r"""
import sys, time, torch, timm, torch.nn.functional as F
from timm.layers import set_layer_config
name, size, bs, fuse, llvm_only = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1"
torch.set_num_threads(1)
torch._C._jit_override_can_fuse_on_cpu(fuse)
torch._C._jit_set_texpr_fuser_enabled(fuse)
torch._C._jit_set_te_must_use_llvm_cpu(llvm_only)
torch.manual_seed(0)
kw = {"img_size": size} if name.startswith("vit") else {}
with set_layer_config(scriptable=True, exportable=True):
    m = timm.create_model(name, in_chans=1, num_classes=10, **kw)
m = torch.jit.script(m.train())
x, y = torch.randn(bs, 1, size, size), torch.randint(0, 10, (bs,))
opt = torch.optim.Adam(m.parameters(), lr=1e-4, fused=True)
def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(m(x), y); loss.backward(); opt.step(); return loss.item()
first = [step() for _ in range(4)]
t = time.perf_counter()
for _ in range(8): step()
print(f"{bs * 8 / (time.perf_counter() - t):.1f} img/s (first loss {first[0]:.5f})")
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--llvm-only", default="1", help="1: NNC must use LLVM (its CPU backend)")
    args = p.parse_args()
    print("| model (56 px, 1 thread) | fuser off | fuser on |")
    print("| --- | --- | --- |")
    for name, size, bs in (("convnext_small", 56, 16), ("efficientnet_b0", 56, 32),
                           ("vit_tiny_patch16_224", 56, 32)):
        cells = []
        for fuse in ("0", "1"):
            try:
                r = subprocess.run([sys.executable, "-c", ONE_RUN, name, str(size), str(bs), fuse,
                                    args.llvm_only], capture_output=True, text=True,
                                   timeout=args.timeout)
                lines = (r.stdout + r.stderr).strip().splitlines()
                cells.append(lines[-1] if r.returncode == 0 else "fails: " + lines[-1][:80])
            except subprocess.TimeoutExpired:
                cells.append(f"not done in {args.timeout} s")
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
