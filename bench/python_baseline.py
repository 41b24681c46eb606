#!/usr/bin/python3
"""The Python baseline of bench/run.sh: the tutorial's train.py (Accelerate + timm + albumentations)
written the way a Python user would, with Debian's packages only: torch 1.13 (DDP over Gloo under
torchrun), torchvision 0.14 models, cv2/numpy transforms with albumentations' formulas and
probabilities, Adam, DataLoader(num_workers=2, shuffle, drop_last), gathered validation, best
checkpoint, submission file. Writes <out>/summary.json with the same keys as runner's summary.json.

1 process:  /usr/bin/python3 bench/python_baseline.py --model small_cnn ...
2 processes: /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 \
             bench/python_baseline.py ...
--floor: forward+backward+Adam on one ready batch (the Python compute floor), no loader.
"""
import argparse
import gzip
import json
import os
import resource
import struct
import time

import cv2
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def read_idx(path):
    """IDX (optionally gzipped) -> numpy array, as runner's mnist dataset reads it."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class Compose:
    """albumentations' Compose for the tutorial's pipeline, on uint8 HxW images."""

    def __init__(self, image_size, train, mean, std):
        self.image_size, self.train, self.mean, self.std = image_size, train, mean, std

    def __call__(self, img):
        if self.train:
            if np.random.random() < 0.5:  # HorizontalFlip(p=0.5)
                img = cv2.flip(img, 1)
            if np.random.random() < 0.5:  # VerticalFlip(p=0.5)
                img = cv2.flip(img, 0)
            if np.random.random() < 0.2:  # RandomBrightnessContrast(p=0.2), brightness_by_max
                alpha = 1.0 + np.random.uniform(-0.2, 0.2)
                beta = np.random.uniform(-0.2, 0.2)
                lut = np.arange(256, dtype=np.float32) * np.float32(alpha) + np.float32(beta * 255)
                img = cv2.LUT(img, np.clip(lut, 0, 255).astype(np.uint8))
        if self.image_size != img.shape[0]:  # Resize(s, s, INTER_LANCZOS4)
            img = cv2.resize(img, (self.image_size, self.image_size), interpolation=cv2.INTER_LANCZOS4)
        # Normalize(mean, std, max_pixel_value=255) + ToTensorV2
        img = (img.astype(np.float32) - np.float32(self.mean * 255)) / np.float32(self.std * 255)
        return torch.from_numpy(img[None])


class MiniDataSet(Dataset):
    def __init__(self, images, labels=None, transform=None):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        ret = {"image": self.transform(self.images[idx])}
        if self.labels is not None:
            ret["label"] = int(self.labels[idx])
        return ret


class ConvBnAct(nn.Sequential):
    def __init__(self, cin, cout, stride):
        conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
        super().__init__(conv, nn.BatchNorm2d(cout), nn.ReLU())


class SmallCnn(nn.Module):
    """runner's small_cnn (plugins/models/small_cnn.cpp), layer for layer."""

    def __init__(self, in_chans=1, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(ConvBnAct(in_chans, 32, 1), ConvBnAct(32, 64, 2), ConvBnAct(64, 64, 1),
                                      ConvBnAct(64, 128, 2), ConvBnAct(128, 128, 1))
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def build_model(name):
    import torchvision.models as tvm
    if name == "small_cnn":
        return SmallCnn(1, 10)
    if name == "resnet18":
        m = tvm.resnet18(num_classes=10)
        m.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
        nn.init.kaiming_normal_(m.conv1.weight, mode="fan_out", nonlinearity="relu")
        return m
    if name in ("convnext_tiny", "convnext_atto"):
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        depths, dims = ((3, 3, 9, 3), (96, 192, 384, 768)) if name == "convnext_tiny" else \
            ((2, 2, 6, 2), (40, 80, 160, 320))
        setting = [CNBlockConfig(dims[i], dims[i + 1] if i + 1 < 4 else None, depths[i]) for i in range(4)]
        m = ConvNeXt(setting, stochastic_depth_prob=0.0, num_classes=10)
        old = m.features[0][0]
        m.features[0][0] = nn.Conv2d(1, old.out_channels, 4, 4)
        return m
    raise SystemExit(f"unknown --model {name}")


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@torch.no_grad()
def predict(model, loader, world):
    """Predictions of every rank, gathered in dataset order (DistributedSampler interleaves)."""
    model.eval()
    preds = []
    for batch in loader:
        preds.append(torch.argmax(model(batch["image"]), 1))
    local = torch.cat(preds) if preds else torch.zeros(0, dtype=torch.long)
    if world == 1:
        return local.numpy()
    n = torch.tensor([local.numel()])
    sizes = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(sizes, n)
    m = int(max(s.item() for s in sizes))
    padded = torch.cat([local, torch.zeros(m - local.numel(), dtype=torch.long)])
    parts = [torch.zeros(m, dtype=torch.long) for _ in range(world)]
    dist.all_gather(parts, padded)
    out = torch.stack(parts, 1).reshape(-1)  # sample i*world+r came from rank r
    return out[:len(loader.dataset)].numpy()


def floor(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_model(args.model)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    x = torch.randn(args.bs, 1, args.image_size, args.image_size)
    y = torch.randint(0, 10, (args.bs,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    t = time.perf_counter()
    steps = args.max_steps or 20
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t
    print(json.dumps({"backbone": args.model, "images_per_s": steps * args.bs / dt, "ms_per_step": 1000 * dt / steps}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="small_cnn")
    p.add_argument("--image_size", type=int, default=28)
    p.add_argument("--bs", type=int, default=128, help="per process")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--ep", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=0, help="stop after N optimizer steps (0: all epochs)")
    p.add_argument("--limit_train", type=int, default=0)
    p.add_argument("--limit_val", type=int, default=0)
    p.add_argument("--limit_test", type=int, default=0)
    p.add_argument("--val_split", type=int, default=50000)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process")
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--root", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--mean", type=float, default=0.2860)
    p.add_argument("--std", type=float, default=0.3530)
    p.add_argument("--out", default="python_run")
    p.add_argument("--floor", action="store_true")
    args = p.parse_args()
    if args.floor:
        return floor(args)

    t_start = time.time()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(args.threads)
    cv2.setNumThreads(1)
    if world > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(42)
    np.random.seed(42 + rank)

    images = read_idx(os.path.join(args.root, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(args.root, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    test_images = read_idx(os.path.join(args.root, "t10k-images-idx3-ubyte.gz"))
    tr_x, tr_y = images[:args.val_split], labels[:args.val_split]
    va_x, va_y = images[args.val_split:], labels[args.val_split:]
    if args.limit_train: tr_x, tr_y = tr_x[:args.limit_train], tr_y[:args.limit_train]
    if args.limit_val: va_x, va_y = va_x[:args.limit_val], va_y[:args.limit_val]
    if args.limit_test: test_images = test_images[:args.limit_test]

    train_tf = Compose(args.image_size, True, args.mean, args.std)
    eval_tf = Compose(args.image_size, False, args.mean, args.std)
    train_ds = MiniDataSet(tr_x, tr_y, train_tf)
    val_ds = MiniDataSet(va_x, va_y, eval_tf)
    test_ds = MiniDataSet(test_images, None, eval_tf)

    def loader(ds, bs, train):
        if world > 1:  # what accelerate.prepare() does to a DataLoader
            sampler = DistributedSampler(ds, world, rank, shuffle=train, drop_last=train)
            return DataLoader(ds, batch_size=bs, sampler=sampler, num_workers=args.num_workers, drop_last=train)
        return DataLoader(ds, batch_size=bs, shuffle=train, num_workers=args.num_workers, drop_last=train)

    train_dl = loader(train_ds, args.bs, True)
    val_dl = loader(val_ds, args.bs * 2, False)
    test_dl = loader(test_ds, args.bs * 2, False)

    model = build_model(args.model)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "model.bin")

    steps, first_step, best, epoch_seconds, train_seconds, ips = 0, 0.0, -1.0, [], [], 0.0
    warmup = 3  # batches excluded from the steady state, as in runner's trainer
    for ep in range(args.ep):
        if world > 1:
            train_dl.sampler.set_epoch(ep)
        model.train()
        t_epoch = time.perf_counter()
        seen, steady_t, counted = 0, None, 0
        losses = []
        for batch in train_dl:
            logits = model(batch["image"])
            optimizer.zero_grad()
            loss = loss_fn(logits, batch["label"])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            steps += 1
            seen += 1
            if first_step == 0.0:
                first_step = time.time()
            if seen == warmup:
                steady_t = time.perf_counter()
            elif seen > warmup:
                counted += args.bs * world
            if args.max_steps and steps >= args.max_steps:
                break
        if steady_t is not None and seen > warmup:
            ips = counted / (time.perf_counter() - steady_t)
        train_seconds.append(time.perf_counter() - t_epoch)  # as runner's epoch_seconds: training only
        val_pred = predict(model, val_dl, world)
        val_acc = float(np.mean(val_pred == va_y))
        if rank == 0:
            print(f"Epoch {ep + 1}, train loss {np.mean(losses):.4f}, val acc {val_acc:.4f}, {ips:.0f} img/s", flush=True)
            if val_acc > best:
                best = val_acc
                torch.save(model.state_dict(), ckpt)
        epoch_seconds.append(time.perf_counter() - t_epoch)
        if args.max_steps and steps >= args.max_steps:
            break
    if world > 1:
        dist.barrier()
    model.load_state_dict(torch.load(ckpt))
    test_pred = predict(model, test_dl, world)
    rss = torch.tensor([peak_rss_mib()], dtype=torch.float64)
    if world > 1:
        dist.all_reduce(rss)
    if rank == 0:
        with open(os.path.join(args.out, "submission.csv"), "w") as f:
            f.write("ImageId,Label\n")
            f.writelines(f"{i + 1},{int(v)}\n" for i, v in enumerate(test_pred))
        summary = {"world_size": world, "train_images_per_s": ips, "optimizer_steps": steps,
                   "first_step_unix_time": first_step, "mean_epoch_seconds": float(np.mean(train_seconds)),
                   "mean_epoch_seconds_with_eval": float(np.mean(epoch_seconds)),
                   "seconds": time.time() - t_start, "peak_rss_mib_all_ranks": float(rss.item()),
                   "best_metrics": {"accuracy": best}}
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
