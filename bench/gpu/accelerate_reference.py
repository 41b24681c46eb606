#!/usr/bin/env python3
"""The reference workload in Python, for the runner/Python ratio of bench/gpu_check.sh.

timm convnext_small (1 input channel, 10 classes, no pretrained weights) at 56x56, Adam 5e-5,
batch 256, a fixed number of steps through Hugging Face Accelerate (fp16: autocast + GradScaler,
as `accelerate launch --mixed_precision=fp16`), cuDNN benchmark on as in runner's default.
Data: `synthetic` (random 56x56 images) or `fashion` (Fashion-MNIST IDX files, resized to 56 in
the loader workers with a random horizontal flip, as the runner config does).
Prints one tab-separated line: python, data, precision, images/s (after 3 warm-up steps),
peak GPU MiB (torch.cuda.max_memory_allocated), steps, loss scales.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import timm
import torch
import torch.nn.functional as F
from accelerate import Accelerator

WARMUP = 3  # steps excluded from images/s, as runner's trainer does


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class Fashion(torch.utils.data.Dataset):
    def __init__(self, root, size):
        self.images = read_idx(os.path.join(root, "train-images-idx3-ubyte.gz"))
        self.labels = read_idx(os.path.join(root, "train-labels-idx1-ubyte.gz")).astype(np.int64)
        self.size = size

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        x = torch.from_numpy(self.images[i].astype(np.float32) / 255.0)[None, None]
        if torch.rand(()) < 0.5:
            x = x.flip(-1)
        x = F.interpolate(x, size=(self.size, self.size), mode="bicubic", align_corners=False)
        return ((x[0] - 0.2860) / 0.3530), self.labels[i]


class Synthetic(torch.utils.data.Dataset):
    def __init__(self, n, size):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randn(n, 1, size, size, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["synthetic", "fashion"], default="synthetic")
    ap.add_argument("--precision", choices=["fp16", "fp32"], default="fp16")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=56)
    ap.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    accelerator = Accelerator(mixed_precision="fp16" if args.precision == "fp16" else "no")
    if args.data == "fashion":
        dataset = Fashion(args.root, args.size)
    else:
        dataset = Synthetic(args.batch * min(args.steps, 40), args.size)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True,
                                         drop_last=True, num_workers=args.workers,
                                         pin_memory=True, persistent_workers=True)
    model = timm.create_model("convnext_small", pretrained=False, in_chans=1, num_classes=10)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-5)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    torch.cuda.reset_peak_memory_stats()

    model.train()
    step, start, scales = 0, None, []
    while step < args.steps:
        for x, y in loader:
            if step == WARMUP:
                torch.cuda.synchronize()
                start = time.perf_counter()
            loss = F.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % 5 == 0 and accelerator.scaler is not None:
                scales.append(accelerator.scaler.get_scale())
            if step >= args.steps:
                break
    torch.cuda.synchronize()
    images_per_s = (args.steps - WARMUP) * args.batch / (time.perf_counter() - start)
    peak_mib = torch.cuda.max_memory_allocated() / 2**20
    print(f"python\t{args.data}\t{args.precision}\t{images_per_s:.0f}\t{peak_mib:.0f}\t{args.steps}"
          f"\t{scales}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
