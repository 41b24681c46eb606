#!/usr/bin/env bash
# Bad images are found before the training they would spoil (issue 39), by validate, --dry-run
# and run alike, each as one line naming the file, exit 2, no run folder: a corrupt or cut
# image in any split (data.check: header reads headers and ends, full decodes), an image of
# another size that the transforms do not make the first one's, a class without images
# (data.allow_empty_classes). Then a plain folder of images predicted by a run (an unreadable
# file gets its row with the reason). Then images damaged past their header (issue 51): the run
# stops where it meets one on every rank with last.pt saved and the right failed_stage, or
# leaves it out with data.on_bad_image: skip, counted per epoch.
set -eu
runner=$1
root=$2
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# damage FILE: flips the bytes between the PNG's header and its end chunk (both stay whole).
damage() {
  /usr/bin/python3 - "$1" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for i in range(60, len(data) - 20):
    data[i] ^= 0x5A
open(sys.argv[1], "wb").write(bytes(data))
PY
}
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
assert rows[0] == ["path", "class", "prob_circle", "prob_cross", "prob_square", "error"], rows[0]
assert [r[0] for r in rows[1:]] == [f"{sys.argv[2]}/img{i}.png" for i in range(5)], rows
assert all(r[1] in ("circle", "square", "cross") for r in rows[1:]), rows
assert all(abs(sum(map(float, r[2:5])) - 1) < 1e-4 and r[5] == "" for r in rows[1:]), rows
PY

# An unreadable image, a file that is no image and a subfolder in the predicted folder: every
# image still gets its row, the unreadable one with the reason, and each is said.
cp "$tmp/plain/img2.png" "$tmp/keep.png"
damage "$tmp/plain/img2.png"
echo notes >"$tmp/plain/notes.txt"
mkdir -p "$tmp/plain/more"
expect_exit 0 "$runner" predict "$tmp/run" --input "$tmp/plain"
expect_output "wrote 4 predictions of the images in $tmp/plain"
expect_output "1 of the 5 image files could not be read"
expect_output "ignored 1 file(s) that are not images by their extension: notes.txt"
expect_output "subfolders are not read: more"
/usr/bin/python3 - "$tmp/run/predictions/plain.csv" "$tmp/plain" <<'PY' || failures=$((failures + 1))
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert [r[0] for r in rows[1:]] == [f"{sys.argv[2]}/img{i}.png" for i in range(5)], rows
bad = rows[3]
assert bad[1:5] == ["", "", "", ""] and "cannot read the image" in bad[5], bad
assert all(r[5] == "" and r[1] for r in rows[1:] if r is not bad), rows
PY
cp "$tmp/keep.png" "$tmp/plain/img2.png"

# A training image damaged past its header (data.check header lets it through): the run stops
# when it meets the file, naming it, with last.pt saved; fixed, --resume finishes the run.
# Validation holds the last quarter in file order (square/003..011): square/006 is one.
damaged_train=$tmp/train/circle/005.png
damaged_val=$tmp/train/square/006.png
cp "$damaged_train" "$tmp/keep_train.png"
cp "$damaged_val" "$tmp/keep_val.png"
damage "$damaged_train"
expect_exit 0 "$runner" validate "$tmp/folder.yaml"
expect_exit 1 "$runner" run "$tmp/folder.yaml" --set output.run_dir="$tmp/bad_train" --set train.epochs=2
expect_output "$damaged_train: cannot read the image"
expect_output "in a training batch; saved checkpoints/last.pt at epoch 1, batch"
expect_output "runner run --resume $tmp/bad_train continues from there"
[ -s "$tmp/bad_train/checkpoints/last.pt" ] || fail "a run stopped by an unreadable image keeps last.pt"
grep -q '"failed_stage": *"train"' "$tmp/bad_train/summary.json" || fail "failed_stage train: $(cat "$tmp/bad_train/summary.json")"
cp "$tmp/keep_train.png" "$damaged_train"
expect_exit 0 "$runner" run --resume "$tmp/bad_train"
grep -q '"status": *"finished"' "$tmp/bad_train/summary.json" || fail "fixed and resumed, the run finishes"

# A validation image so damaged, on 2 ranks: every rank stops after the same epoch with the
# failing rank's line; failed_stage validate.
damage "$damaged_val"
expect_exit 1 "$runner" run "$tmp/folder.yaml" --set output.run_dir="$tmp/bad_val" \
  --set launch.num_processes=2 --set launch.master_port=0 --set train.batch_size=2
expect_output "$damaged_val: cannot read the image"
expect_output "in a validation batch; saved checkpoints/last.pt after epoch 1"
grep -q '"failed_stage": *"validate"' "$tmp/bad_val/summary.json" || fail "failed_stage validate: $(cat "$tmp/bad_val/summary.json")"
grep -q "$damaged_val" "$tmp/bad_val/summary.json" || fail "the main process's summary names the file another rank could not read"
[ -s "$tmp/bad_val/checkpoints/last.pt" ] || fail "a run stopped in validation keeps last.pt"

# data.check full finds it before anything runs; data.on_bad_image skip warns and leaves it out.
expect_exit 2 "$runner" validate "$tmp/folder.yaml" --set data.check=full
expect_output "data.check: $damaged_val: cannot read the image"
expect_exit 0 "$runner" validate "$tmp/folder.yaml" --set data.check=full --set data.on_bad_image=skip
expect_output "1 sample(s) of the validation split cannot be used and will be left out: $damaged_val"
expect_exit 2 "$runner" validate "$tmp/folder.yaml" --set data.on_bad_image=skip --set data.device=cpu
expect_output "data.on_bad_image skip leaves samples out as the loader makes batches"
damage "$damaged_train"
expect_exit 0 "$runner" run "$tmp/folder.yaml" --set output.run_dir="$tmp/skipped" \
  --set data.on_bad_image=skip --set train.epochs=2 --set launch.num_processes=2 \
  --set launch.master_port=0 --set train.batch_size=2
# Once per process that meets it (the shuffle may hand it to the other rank in epoch 2).
met=$(grep -c "left out $damaged_train" <<<"$out" || true)
met_by_rank0=$(grep -v '^\[rank 1\]' <<<"$out" | grep -c "left out $damaged_train" || true)
{ [ "$met" -ge 1 ] && [ "$met" -le 2 ] && [ "$met_by_rank0" -le 1 ]; } ||
  fail "the skipped training file is warned about once per rank over 2 epochs ($met, rank 0 $met_by_rank0): $out"
/usr/bin/python3 - "$tmp/skipped" <<'PY' || failures=$((failures + 1))
import csv, json, sys
run = sys.argv[1]
summary = json.load(open(f"{run}/summary.json"))
assert summary["status"] == "finished", summary["status"]
# 2 epochs x 1 training file (over both ranks; the last batch may drop it) and 1 validation file.
assert summary["skipped_images"]["val"] == 1, summary["skipped_images"]
assert 1 <= summary["skipped_images"]["train"] <= 2, summary["skipped_images"]
epochs = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"kind":"epoch"' in l]
assert [e["skipped_val"] for e in epochs] == [1, 1], epochs
rows = [r for r in csv.DictReader(open(f"{run}/metrics.csv")) if r["kind"] == "epoch"]
assert [r["skipped_val"] for r in rows] == ["1", "1"], rows
assert sum(int(r["skipped_train"]) for r in rows) == summary["skipped_images"]["train"], rows
PY
cp "$tmp/keep_train.png" "$damaged_train"
cp "$tmp/keep_val.png" "$damaged_val"
finish
