#!/usr/bin/env python3
"""The torch side of bench/data_pipeline.sh, and the images both sides read.

  data_pipeline.py make OUT N        N JPEGs of 256x256 (10 classes, image_folder layout in
                                     OUT/folder/<class>/, the same files as 8 WebDataset
                                     shards in OUT/shards/train-00000{0..7}.tar, their
                                     counts in OUT/shards/shards.json, a wids shard index)
  data_pipeline.py make-large OUT N  N photo-sized JPEGs of 1200x900 in OUT/large/<class>/ (where
                                     data.reduced_decode has something to reduce)
  data_pipeline.py torch OUT BATCH EPOCHS [FOLDER]   torchvision ImageFolder (OUT/FOLDER, default
                                     folder), 2 DataLoader workers
  data_pipeline.py wds OUT BATCH EPOCHS [BASE]   the webdataset package over the shards, 2
                                     workers (BASE: where the shards are, e.g. an http URL;
                                     default OUT/shards)

The torch sides print one line a timed epoch: `images/s N`. The transforms are timm's and
torchvision's training standard: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor +
Normalize(ImageNet), collated into batches of BATCH; the first epoch (worker start, page cache)
is not timed.
"""
import io
import json
import os
import sys
import tarfile
import time


def photo(rng, width, height):
    """A photo-like image: a smooth colour field, shapes and some noise, as JPEG bytes."""
    import numpy as np
    from PIL import Image, ImageDraw
    y, x = np.mgrid[0:height, 0:width].astype(np.float32) / 255
    base = np.stack([np.sin(x * rng.uniform(1, 6) + rng.uniform(0, 6)),
                     np.cos(y * rng.uniform(1, 6) + rng.uniform(0, 6)),
                     np.sin((x + y) * rng.uniform(1, 6))], -1)
    pixels = ((base * 0.5 + 0.5) * 200 + rng.normal(0, 12, (height, width, 3))).clip(0, 255)
    image = Image.fromarray(pixels.astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = rng.integers(0, width - 56), rng.integers(0, height - 56)
        size = rng.integers(20, max(21, width // 3), 2)
        draw.ellipse([x0, y0, x0 + size[0], y0 + size[1]],
                     fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def make_large(out, n):
    import numpy as np
    rng = np.random.default_rng(1)
    for i in range(n):
        folder = os.path.join(out, "large", f"c{i % 10}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{i:05d}.jpg"), "wb") as f:
            f.write(photo(rng, 1200, 900))


def make(out, n):
    import numpy as np
    rng = np.random.default_rng(0)
    folder, shards = os.path.join(out, "folder"), os.path.join(out, "shards")
    os.makedirs(shards, exist_ok=True)
    samples = []
    for i in range(n):
        label = i % 10
        data = photo(rng, 256, 256)
        os.makedirs(os.path.join(folder, f"c{label}"), exist_ok=True)
        with open(os.path.join(folder, f"c{label}", f"{i:05d}.jpg"), "wb") as f:
            f.write(data)
        samples.append((f"{i:05d}", data, label))
    per = (n + 7) // 8
    index = []
    for k in range(8):
        with tarfile.open(os.path.join(shards, f"train-{k:06d}.tar"), "w") as tar:
            for key, data, label in samples[k * per:(k + 1) * per]:
                for name, body in ((key + ".jpg", data), (key + ".cls", f"{label}".encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(body)
                    tar.addfile(info, io.BytesIO(body))
        index.append({"url": f"train-{k:06d}.tar", "nsamples": len(samples[k * per:(k + 1) * per])})
    with open(os.path.join(shards, "shards.json"), "w") as f:
        json.dump({"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": index}, f)


def transform():
    from torchvision import transforms
    return transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])


def timed(loader, epochs):
    for epoch in range(epochs + 1):
        start, count = time.perf_counter(), 0
        for images, _ in loader:
            count += images.shape[0]
        if epoch > 0:
            print(f"images/s {count / (time.perf_counter() - start):.1f}", flush=True)


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "make":
        make(out, int(sys.argv[3]))
        return 0
    if mode == "make-large":
        make_large(out, int(sys.argv[3]))
        return 0
    import torch
    torch.set_num_threads(1)
    batch, epochs = int(sys.argv[3]), int(sys.argv[4])
    if mode == "torch":
        from torchvision.datasets import ImageFolder
        folder = sys.argv[5] if len(sys.argv) > 5 else "folder"
        dataset = ImageFolder(os.path.join(out, folder), transform=transform())
        loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=2,
                                             drop_last=True, persistent_workers=True)
    else:
        import webdataset as wds
        base = sys.argv[5] if len(sys.argv) > 5 else os.path.join(out, "shards")
        urls = base + "/train-{000000..000007}.tar"  # http URLs: the package fetches with curl
        dataset = (wds.WebDataset(urls, shardshuffle=8, nodesplitter=wds.single_node_only)
                   .shuffle(1000).decode("pil").to_tuple("jpg", "cls").map_tuple(transform(), int)
                   .batched(batch, partial=False))
        loader = wds.WebLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
    timed(loader, epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
