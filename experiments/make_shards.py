#!/usr/bin/env python3
"""Writes part of Debian's Fashion-MNIST as WebDataset tar shards, the layout of data kept on
shared storage (what `data.dataset: {name: webdataset}` reads):

    OUT/train-000000.tar ... : TRAIN images in SHARDS shards, each sample NNNNNN.png + NNNNNN.cls
    OUT/val-000000.tar ...   : VAL images (from the test file) in 2 shards
    OUT/test-000000.tar      : TEST images (from the test file), labelled
    OUT/shards.json          : how many samples each shard holds, as a wids shard index
                               (webdataset's `widsindex create`; data.dataset.shard_index)

Usage: make_shards.py OUT [TRAIN=2000] [SHARDS=8] [VAL=400] [TEST=100]   (the standard library only)
experiments/fashion_shards.yaml trains on them.
"""
import io
import json
import os
import sys
import tarfile

from make_image_folder import SOURCE, idx, png_bytes  # this folder


def write_shards(pattern, count, first, shards, images, labels, h, w):
    """Samples first..first+count of the IDX arrays, split as evenly as they go into shards;
    returns each shard's wids index entry."""
    entries = []
    for k in range(shards):
        begin, end = first + count * k // shards, first + count * (k + 1) // shards
        with tarfile.open(pattern.format(k), "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(begin, end):
                for name, body in ((f"{i:06d}.png", png_bytes(w, h, images[i * h * w:(i + 1) * h * w])),
                                   (f"{i:06d}.cls", f"{labels[i]}\n".encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(body)
                    tar.addfile(info, io.BytesIO(body))
        entries.append({"url": os.path.basename(pattern.format(k)), "nsamples": end - begin,
                        "filesize": os.path.getsize(pattern.format(k))})
    return entries


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    train, shards, val, test = ([int(a) for a in sys.argv[2:6]] + [2000, 8, 400, 100][len(sys.argv[2:6]):])
    if not os.path.isdir(SOURCE):
        print(f"{SOURCE} is missing: apt-get install dataset-fashion-mnist")
        return 1
    os.makedirs(out, exist_ok=True)
    (n, h, w), images = idx("train-images-idx3-ubyte.gz")
    _, labels = idx("train-labels-idx1-ubyte.gz")
    index = write_shards(os.path.join(out, "train-{:06d}.tar"), min(train, n), 0, shards, images,
                         labels, h, w)
    (n, h, w), images = idx("t10k-images-idx3-ubyte.gz")
    _, labels = idx("t10k-labels-idx1-ubyte.gz")
    index += write_shards(os.path.join(out, "val-{:06d}.tar"), min(val, n), 0, 2, images, labels, h, w)
    index += write_shards(os.path.join(out, "test-{:06d}.tar"), min(test, n - val), val, 1, images,
                          labels, h, w)
    with open(os.path.join(out, "shards.json"), "w") as f:
        json.dump({"__kind__": "wids-shard-index-v1", "wids_version": 1, "shardlist": index}, f,
                  indent=1)
    print(f"wrote {train} training images in {shards} shards, {val} validation images in 2 and "
          f"{test} test images in 1 under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
