#!/usr/bin/env python3
"""Writes part of Debian's Fashion-MNIST as a folder of PNG files, the layout of your own images:

    OUT/train/<class>/<n>.png   PER_CLASS images of each of the 10 classes (the training file)
    OUT/new/<n>.png             NEW unlabelled images (the test file): for runner predict --input

Usage: make_image_folder.py OUT [PER_CLASS=200] [NEW=100]   (the standard library only)
experiments/finetune_folder.yaml fine-tunes a pretrained model on OUT/train.
"""
import gzip
import os
import struct
import sys
import zlib

SOURCE = "/usr/share/datasets/fashion-mnist"
CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
           "ankle-boot"]


def idx(name):
    with gzip.open(os.path.join(SOURCE, name)) as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def png_bytes(width, height, pixels):
    """An 8-bit grayscale PNG file's bytes."""
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + pixels[r * width:(r + 1) * width] for r in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def png(path, width, height, pixels):
    with open(path, "wb") as f:
        f.write(png_bytes(width, height, pixels))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    per_class = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    new = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if not os.path.isdir(SOURCE):
        print(f"{SOURCE} is missing: apt-get install dataset-fashion-mnist")
        return 1
    (n, h, w), images = idx("train-images-idx3-ubyte.gz")
    _, labels = idx("train-labels-idx1-ubyte.gz")
    written = [0] * len(CLASSES)
    for i in range(n):
        c = labels[i]
        if written[c] >= per_class:
            continue
        folder = os.path.join(out, "train", CLASSES[c])
        os.makedirs(folder, exist_ok=True)
        png(os.path.join(folder, f"{i:05d}.png"), w, h, images[i * h * w:(i + 1) * h * w])
        written[c] += 1
        if min(written) >= per_class:
            break
    (n, h, w), images = idx("t10k-images-idx3-ubyte.gz")
    os.makedirs(os.path.join(out, "new"), exist_ok=True)
    for i in range(min(new, n)):
        png(os.path.join(out, "new", f"{i:05d}.png"), w, h, images[i * h * w:(i + 1) * h * w])
    print(f"wrote {sum(written)} training images in {len(CLASSES)} class folders under "
          f"{out}/train and {min(new, n)} new images in {out}/new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
