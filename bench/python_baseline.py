#!/usr/bin/env python3
"""The Python baseline of bench/run.sh: the original tutorial's ddp_train.py
(/work/shared/seed/000_*.txt) run with its real stack from the project venv (`make deps`:
.venv with torch 2.x, timm, albumentations, Hugging Face Accelerate, opencv):
albumentations A.Compose on the float32 images of the tutorial's MiniDataSet, timm.create_model
(pretrained=False, in_chans=1, num_classes=10; runner's small_cnn, which timm lacks, in plain
torch), Adam, DataLoader(num_workers=2, shuffle, drop_last) and batch_size*2 eval loaders,
Accelerator.prepare / backward / gather_for_metrics, best checkpoint by val accuracy, submission
file. Data: Fashion-MNIST IDX files under --root instead of the Kaggle CSVs. Writes
<out>/summary.json with the same keys as runner's summary.json.

1 process:   .venv/bin/python bench/python_baseline.py --model small_cnn ...
N processes: .venv/bin/python -m torch.distributed.run --nproc_per_node N bench/python_baseline.py ...
             (Accelerate picks up torchrun's env: DDP over Gloo on CPU, NCCL on CUDA.)
--cpu: force the CPU (the default when CUDA is not available).
--floor: forward+backward+Adam on one ready batch (the Python compute floor), plain torch, no loader.
"""
import argparse
import gzip
import json
import os
import resource
import struct
import sys
import time
import warnings

import albumentations as A
import cv2
import numpy as np
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from albumentations.pytorch import ToTensorV2
from torch.optim import Adam
from torch.utils.data import DataLoader, Dataset

warnings.filterwarnings("ignore")  # as the tutorial does


def read_idx(path):
    """IDX (optionally gzipped) -> numpy array, as runner's mnist dataset reads it."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def get_transform(image_size, train, mean, std):
    """The tutorial's get_transform (its MNIST mean/std replaced by --mean/--std)."""
    if train:
        return A.Compose([
            A.HorizontalFlip(p=0.5),
            A.VerticalFlip(p=0.5),
            A.RandomBrightnessContrast(p=0.2),
            A.Resize(image_size, image_size, interpolation=cv2.INTER_LANCZOS4),
            A.Normalize(mean, std),
            ToTensorV2(),
        ])
    return A.Compose([
        A.Resize(image_size, image_size, interpolation=cv2.INTER_LANCZOS4),
        A.Normalize(mean, std),
        ToTensorV2(),
    ])


class MiniDataSet(Dataset):
    """The tutorial's MiniDataSet. Its images.astype("float32") keeps the 0..255 range, which
    albumentations treats as a float image in [0, 1]: RandomBrightnessContrast (p=0.2) then clips
    the picture to [0, 1] (almost all of it to 1), before Normalize divides by 255 as for uint8.
    That is what the original does, so it is kept here."""

    def __init__(self, images, labels=None, transform=None):
        self.images = images.astype("float32")
        self.labels = labels
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        ret = {}
        img = self.images[idx]
        if self.transform is not None:
            img = self.transform(image=img)["image"]
        ret["image"] = img
        if self.labels is not None:
            ret["label"] = self.labels[idx]
        return ret


class TimmModel(nn.Module):
    """The tutorial's wrapper around timm.create_model (no pretrained weights here)."""

    def __init__(self, backbone, num_class, pretrained=False):
        super().__init__()
        self.model = timm.create_model(backbone, pretrained=pretrained, in_chans=1, num_classes=num_class)

    def forward(self, image):
        return self.model(image)


class ConvBnAct(nn.Sequential):
    def __init__(self, cin, cout, stride):
        conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
        super().__init__(conv, nn.BatchNorm2d(cout), nn.ReLU())


class SmallCnn(nn.Module):
    """runner's small_cnn (plugins/models/small_cnn.cpp), layer for layer; not a timm model."""

    def __init__(self, in_chans=1, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(ConvBnAct(in_chans, 32, 1), ConvBnAct(32, 64, 2), ConvBnAct(64, 64, 1),
                                      ConvBnAct(64, 128, 2), ConvBnAct(128, 128, 1))
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def build_model(name):
    if name == "small_cnn":
        return SmallCnn(1, 10)
    if not timm.is_model(name):
        raise SystemExit(f"unknown --model {name} (small_cnn or a timm model name)")
    return TimmModel(name, 10, pretrained=False)


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@torch.no_grad()
def predict_fn(accelerator, model, dataloader):
    """The tutorial's predict_fn: gather_for_metrics drops the padding of the last batches."""
    model.eval()
    predictions = []
    for batch in dataloader:
        output = model(batch["image"])
        prediction = torch.argmax(output, 1)
        prediction = accelerator.gather_for_metrics(prediction)
        predictions.append(prediction.cpu().numpy())
    return np.concatenate(predictions, axis=0)


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
    p.add_argument("--model", default="small_cnn", help="small_cnn or a timm model name")
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
    p.add_argument("--cpu", action="store_true", help="run on the CPU even when CUDA is available")
    p.add_argument("--floor", action="store_true")
    p.add_argument("--mixed_precision", default="no", help="no, fp16 or bf16 (Accelerate's; bf16 on CPU too)")
    args = p.parse_args()
    if args.floor:
        return floor(args)

    t_start = time.time()
    accelerator = Accelerator(cpu=args.cpu or not torch.cuda.is_available(), mixed_precision=args.mixed_precision)
    # After Accelerator(): on MULTI_CPU it sets its own thread count (cores / local processes).
    torch.set_num_threads(args.threads)
    cv2.setNumThreads(1)
    world = accelerator.num_processes
    torch.manual_seed(42)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)

    images = read_idx(os.path.join(args.root, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(args.root, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    test_images = read_idx(os.path.join(args.root, "t10k-images-idx3-ubyte.gz"))
    tr_x, tr_y = images[:args.val_split], labels[:args.val_split]
    va_x, va_y = images[args.val_split:], labels[args.val_split:]
    if args.limit_train: tr_x, tr_y = tr_x[:args.limit_train], tr_y[:args.limit_train]
    if args.limit_val: va_x, va_y = va_x[:args.limit_val], va_y[:args.limit_val]
    if args.limit_test: test_images = test_images[:args.limit_test]

    train_transform = get_transform(args.image_size, True, args.mean, args.std)
    valid_transform = get_transform(args.image_size, False, args.mean, args.std)
    train_ds = MiniDataSet(tr_x, tr_y, train_transform)
    val_ds = MiniDataSet(va_x, va_y, valid_transform)
    test_ds = MiniDataSet(test_images, transform=valid_transform)
    train_dl = DataLoader(train_ds, batch_size=args.bs, num_workers=args.num_workers, shuffle=True, drop_last=True)
    val_dl = DataLoader(val_ds, batch_size=args.bs * 2, num_workers=args.num_workers, shuffle=False, drop_last=False)
    test_dl = DataLoader(test_ds, batch_size=args.bs * 2, num_workers=args.num_workers, shuffle=False, drop_last=False)

    model = build_model(args.model)
    optimizer = Adam(model.parameters(), lr=args.lr)
    model, optimizer, train_dl, val_dl, test_dl = accelerator.prepare(model, optimizer, train_dl, val_dl, test_dl)
    loss_fn = torch.nn.CrossEntropyLoss()
    os.makedirs(args.out, exist_ok=True)
    ckpt = os.path.join(args.out, "model.bin")

    steps, first_step, best, epoch_seconds, train_seconds, ips = 0, 0.0, -1.0, [], [], 0.0
    warmup = 3  # batches excluded from the steady state, as in runner's trainer
    for ep in range(args.ep):
        model.train()
        t_epoch = time.perf_counter()
        seen, steady_t, counted = 0, None, 0
        train_loss = []
        for batch in train_dl:  # the tutorial's train_fn
            logits = model(batch["image"])
            optimizer.zero_grad()
            loss = loss_fn(logits, batch["label"])
            accelerator.backward(loss)
            optimizer.step()
            train_loss.append(loss.item())
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
        val_pred = predict_fn(accelerator, model, val_dl)
        val_acc = float(np.mean(val_pred == val_dl.dataset.labels))
        if accelerator.is_main_process:
            print(f"Epoch {ep + 1}, train loss {np.mean(train_loss):.4f}, val acc {val_acc:.4f}, {ips:.0f} img/s",
                  flush=True)
        if val_acc > best:  # the same on every rank: val_pred is gathered
            best = val_acc
            accelerator.wait_for_everyone()
            accelerator.save(accelerator.unwrap_model(model).state_dict(), ckpt)  # main process only
        epoch_seconds.append(time.perf_counter() - t_epoch)
        if args.max_steps and steps >= args.max_steps:
            break
    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).load_state_dict(torch.load(ckpt, map_location="cpu"))
    test_pred = predict_fn(accelerator, model, test_dl)
    rss = accelerator.reduce(torch.tensor([peak_rss_mib()], dtype=torch.float64, device=accelerator.device), "sum")
    if accelerator.is_main_process:
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
    accelerator.end_training()
    # Leave without Python's teardown: there PyTorch 2.11 can deadlock (the DDP reducer's Gloo
    # group freed under the GIL while a Gloo thread, holding the group's lock, waits for the
    # GIL to free a finished work's tensors), leaving one rank hung after the run is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
