#!/usr/bin/env bash
# Bad images are found before the training they would spoil (issue 39), by validate, --dry-run
# and run alike, each as one line naming the file, exit 2, no run folder: a corrupt or cut
# image in any split (data.check: header reads headers and ends, full decodes), an image of
# another size that the transforms do not make the first one's, a class without images
# (data.allow_empty_classes). Then a plain folder of images predicted by a run.
set -eu
runner=$1
root=$2
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one_line() {
  [ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: expected one line, got: $out"; failures=$((failures + 1)); }
}
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# An image folder of 28x28 grayscale PNGs: 3 classes x 12 for training, 2 x 3 each to test.
/usr/bin/python3 - "$tmp" <<'PY'
import os, sys
import cv2, numpy as np
root = sys.argv[1]
rng = np.random.default_rng(0)
for split, count in (("train", 12), ("test", 2)):
    for c, name in enumerate(("circle", "square", "cross")):
        os.makedirs(f"{root}/{split}/{name}", exist_ok=True)
        for i in range(count):
            image = (rng.random((28, 28)) * 60).astype(np.uint8) + 40 * c
            cv2.imwrite(f"{root}/{split}/{name}/{i:03d}.png", image)
os.makedirs(f"{root}/plain", exist_ok=True)
for i in range(5):
    cv2.imwrite(f"{root}/plain/img{i}.png", (rng.random((28, 28)) * 200).astype(np.uint8))
PY
cat >"$tmp/folder.yaml" <<YAML
name: folder
seed: 1
launch: {num_processes: 1, device: cpu, threads_per_process: 1}
data:
  dataset: {name: image_folder, root: train, test_root: test, mode: grayscale, val_split: 0.25}
  train_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  eval_transforms: [{name: normalize, mean: 0.5, std: 0.25}]
  num_workers: 0
model: {backbone: small_cnn, in_chans: 1, num_classes: 3}
optimizer: {name: adam, lr: 2.0e-3}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: 4}
predict: {enabled: true, format: csv}
output: {tensorboard: false}
YAML
expect_exit 0 "$runner" validate "$tmp/folder.yaml"

# refused CASE_TEXT CMD_ARGS...: validate, --dry-run and run all refuse in one line, exit 2,
# and run makes no folder.
refused() {
  local text=$1
  shift
  expect_exit 2 "$runner" validate "$tmp/folder.yaml" "$@"
  expect_output "$text"
  one_line
  expect_exit 2 "$runner" run "$tmp/folder.yaml" --dry-run "$@"
  expect_output "$text"
  one_line
  expect_exit 2 "$runner" run "$tmp/folder.yaml" --set output.root="$tmp/runs" "$@"
  expect_output "$text"
  one_line
  [ ! -e "$tmp/runs" ] || { fail "a refused run made $tmp/runs"; rm -rf "$tmp/runs"; }
}

# A test image cut short: its PNG end chunk is missing.
good=$tmp/test/cross/000.png  # neither the first nor the last test image
cp "$good" "$tmp/keep.png"
head -c 200 "$tmp/keep.png" >"$good"
refused "data.check: $good: a PNG cut short (its IEND end chunk is missing); replace or remove the file"
# Not an image at all, under a .png name: decoded (the header is no PNG's), and named.
echo "not an image" >"$good"
refused "data.check: $good: cannot read the image"
cp "$tmp/keep.png" "$good"

# A corrupt middle with a whole header and end: header finds nothing, full decodes and does.
/usr/bin/python3 - "$good" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for i in range(60, len(data) - 20):
    data[i] ^= 0x5A
open(sys.argv[1], "wb").write(bytes(data))
PY
expect_exit 0 "$runner" validate "$tmp/folder.yaml"
expect_exit 2 "$runner" validate "$tmp/folder.yaml" --set data.check=full
expect_output "$good"
one_line
expect_exit 0 "$runner" validate "$tmp/folder.yaml" --set data.check=none
cp "$tmp/keep.png" "$good"

# One 32x32 image among 28x28 ones: named, with both sizes and the fix; a resize makes it fine.
cp "$tmp/train/circle/005.png" "$tmp/keep.png"
/usr/bin/python3 -c "import cv2, numpy as np; cv2.imwrite('$tmp/train/circle/005.png', np.zeros((32, 32), np.uint8))"
refused "$tmp/train/circle/005.png is 32x32 and comes out of data.train_transforms as 32x32x1, but $tmp/train/circle/000.png as 28x28x1: the training batches cannot stack them"
expect_exit 0 "$runner" validate "$tmp/folder.yaml" \
  --set 'data.train_transforms=[{name: resize, height: 28, width: 28}, {name: normalize, mean: 0.5, std: 0.25}]'
cp "$tmp/keep.png" "$tmp/train/circle/005.png"

# A class folder without images.
mkdir -p "$tmp/train/triangle"
refused "data.dataset: the data has no sample of class 'triangle' (label 3) (of 4 classes)" \
  --set model.num_classes=4
expect_exit 0 "$runner" validate "$tmp/folder.yaml" --set model.num_classes=4 \
  --set data.allow_empty_classes=true
rmdir "$tmp/train/triangle"

# Trained, then a plain folder of images predicted with the run's weights: a row per file.
expect_exit 0 "$runner" run "$tmp/folder.yaml" --set output.run_dir="$tmp/run"
expect_exit 0 "$runner" predict "$tmp/run" --input "$tmp/plain"
expect_output "wrote 5 predictions of the images in $tmp/plain"
/usr/bin/python3 - "$tmp/run/predictions/plain.csv" "$tmp/plain" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == ["path", "class", "prob_circle", "prob_cross", "prob_square"], rows[0]
assert [r[0] for r in rows[1:]] == [f"{sys.argv[2]}/img{i}.png" for i in range(5)], rows
assert all(r[1] in ("circle", "square", "cross") for r in rows[1:]), rows
assert all(abs(sum(map(float, r[2:])) - 1) < 1e-4 for r in rows[1:]), rows
PY
finish
