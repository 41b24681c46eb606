#!/usr/bin/env python3
"""Where the 1-thread training step of a timm model goes, op by op (issues 42 and 55, item 1).

The step is the compute floor's (forward + backward + Adam on one ready batch, no loader) of timm's
--model (convnext_small by default; resnet18, resnet50, resnet10t, efficientnet_b0, ...), 1 input
channel, 10 classes, at 56 px, batch 16, on ONE thread, in eager PyTorch: the same ATen kernels
runner's native models call (and what runner's timm/<name> TorchScript import runs). torch.profiler
records a steady window of steps (after warm-up) for each --variants entry (fp32, bf16: autocast,
_cl: channels_last); each ATen op's share of the step's self CPU time, its ms per step, and what it
achieved against this core's peak:

- FLOP-bound ops (convolutions and matrix products, where the profiler counts FLOPs): GFLOP/s
  against the probe's 1-thread GEMM peak of the same dtype (a 2048^3 fp32 or bf16 matmul);
- the others: GB/s moved (each call's inputs read once and its output written once, from the
  recorded shapes: a lower bound) against the probe's 1-thread copy bandwidth (256 MiB arrays).

The probe measures the peaks here, on this machine, before the profile; nothing is assumed.

  .venv/bin/python bench/op_profile.py [--model resnet18] [--variants fp32,bf16_cl] [--steps 6]
      [--warmup 3] [--top 18] > bench/out/op_profile.md
"""
import argparse
import time
from collections import defaultdict

import timm
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile



def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def probe():
    """This core's 1-thread peaks: GEMM GFLOP/s (fp32, bf16) and copy GB/s."""
    peaks = {}
    for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        a = torch.randn(2048, 2048).to(dtype)
        b = torch.randn(2048, 2048).to(dtype)
        torch.mm(a, b)
        seconds = best_of(lambda: torch.mm(a, b), 3)
        peaks[f"gemm_{name}"] = 2 * 2048 ** 3 / seconds / 1e9
    src = torch.empty(64 * 1024 * 1024)  # 256 MiB of float32
    dst = torch.empty_like(src)
    src.fill_(1.0)
    dst.copy_(src)
    seconds = best_of(lambda: dst.copy_(src), 5)
    peaks["copy_gbs"] = 2 * src.numel() * 4 / seconds / 1e9  # read + write
    return peaks


def step_fn(model_name, bf16, channels_last, batch, size):
    torch.manual_seed(0)
    model = timm.create_model(model_name, in_chans=1, num_classes=10)
    x = torch.randn(batch, 1, size, size)
    y = torch.randint(0, 10, (batch,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    # fused=True: one kernel over all parameters, as runner's adam plugin (at::_fused_adam_)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, fused=True)
    model.train()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def call_bytes(event):
    """Bytes an op reads and writes at least: every tensor input once and what it allocates (its
    outputs) once. The profiler records input shapes but not dtypes: an element is taken to be as
    large as the allocation per element of the largest input (2 under bf16 autocast, 4 in fp32),
    4 bytes for an op that allocates nothing (in place: the optimizer's fp32 updates)."""
    sizes = []
    for shape in event.input_shapes or []:
        if shape and isinstance(shape, list) and all(isinstance(d, int) for d in shape):
            n = 1
            for d in shape:
                n *= d
            sizes.append(n)
    allocated = max(event.self_cpu_memory_usage or 0, 0)
    element = 4
    if sizes and max(sizes) and allocated:
        ratio = allocated / max(sizes)
        element = min((1, 2, 4, 8), key=lambda s: abs(s - ratio)) if ratio >= 0.75 else 4
    return sum(sizes) * element + allocated


VARIANTS = {"fp32": ("fp32", False, False), "fp32_cl": ("fp32 + channels_last", False, True),
            "bf16": ("bf16 autocast", True, False),
            "bf16_cl": ("bf16 autocast + channels_last", True, True)}


def profile_variant(variant, args, peaks):
    name, bf16, channels_last = VARIANTS[variant]
    step = step_fn(args.model, bf16, channels_last, args.batch, args.size)
    for _ in range(args.warmup):
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True,
                 profile_memory=True) as prof:
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        wall = (time.perf_counter() - start) / args.steps
    per_op = defaultdict(lambda: {"self_us": 0.0, "flops": 0, "bytes": 0, "calls": 0})
    for e in prof.events():
        if not e.name.startswith("aten::"):
            continue
        row = per_op[e.name]
        row["self_us"] += e.self_cpu_time_total
        row["calls"] += 1
        row["flops"] += e.flops or 0
        row["bytes"] += call_bytes(e)
    total_us = sum(r["self_us"] for r in per_op.values())
    gemm_peak = peaks["gemm_bf16" if bf16 else "gemm_fp32"]
    print(f"\n### {name}: {wall * 1e3:.0f} ms per step ({args.batch / wall:.1f} img/s, "
          f"profiled; ATen ops' self time {total_us / args.steps / 1e3:.0f} ms)\n")
    print("| op | calls/step | share | ms/step | achieved | of this core's peak |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = sorted(per_op.items(), key=lambda kv: -kv[1]["self_us"])
    shown = 0.0
    for op, r in rows[:args.top]:
        seconds = r["self_us"] / 1e6
        share = r["self_us"] / total_us
        shown += share
        if r["flops"]:
            rate = r["flops"] / seconds / 1e9
            achieved, of_peak = f"{rate:.1f} GFLOP/s", f"{rate / gemm_peak:.0%} of GEMM"
        elif r["bytes"] and seconds > 0:
            rate = r["bytes"] / seconds / 1e9
            achieved, of_peak = f"{rate:.1f} GB/s", f"{rate / peaks['copy_gbs']:.0%} of copy"
        else:
            achieved, of_peak = "", ""
        print(f"| {op} | {r['calls'] / args.steps:.0f} | {share:.1%} | "
              f"{r['self_us'] / args.steps / 1e3:.1f} | {achieved} | {of_peak} |")
    print(f"| (the {len(rows) - args.top} other ops) | | {1 - shown:.1%} | | | |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="convnext_small", help="a timm model name")
    p.add_argument("--variants", default="fp32,bf16_cl",
                   help="comma-separated: " + ", ".join(VARIANTS))
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=56)
    p.add_argument("--top", type=int, default=18)
    args = p.parse_args()
    torch.set_num_threads(1)
    peaks = probe()
    print(f"## Per-op profile of the 1-thread {args.model} step ({args.size} px, batch "
          f"{args.batch}; torch {torch.__version__}, timm {timm.__version__})\n")
    print(f"This core's 1-thread peaks (the probe): GEMM fp32 {peaks['gemm_fp32']:.1f} GFLOP/s, "
          f"GEMM bf16 {peaks['gemm_bf16']:.1f} GFLOP/s, copy {peaks['copy_gbs']:.1f} GB/s "
          f"(read + write).")
    for variant in args.variants.split(","):
        profile_variant(variant, args, peaks)


if __name__ == "__main__":
    main()
