#!/usr/bin/env bash
# The input pipeline alone (issue 54, item 5): `runner bench-data` against torch's DataLoader
# on the same 2,000 JPEGs of 256 px (bench/data_pipeline.py makes them): torchvision
# ImageFolder + RandomResizedCrop(224) + flip + ToTensor + Normalize with 2 workers, against
# runner's image_folder + random_resized_crop 224 + horizontal_flip + normalize on 2 loader
# threads; then the same files as 8 WebDataset shards, the webdataset package (2 workers,
# shuffle 1000) against data.dataset webdataset (shuffle_buffer 1000). Batches of 64, a whole
# epoch a measure, the sides interleaved REPS times; prints each figure and the median ratio.
# Last, 500 photo-sized JPEGs (1200x900), where data.reduced_decode decodes large crops at 1/2
# or 1/4: runner with and without it against torchvision.
#
#   bench/data_pipeline.sh            (REPS=3; BUILD_DIR=build; N=2000 images)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPS=${REPS:-3}
N=${N:-2000}
OUT=${OUT:-bench/out/data_pipeline}
PYTHON=${PYTHON:-.venv/bin/python}
RUNNER=${RUNNER:-$BUILD_DIR/runner/runner}
mkdir -p "$OUT"
[ -f "$OUT/shards/train-000007.tar" ] || "$PYTHON" bench/data_pipeline.py make "$OUT" "$N"
[ -d "$OUT/large/c9" ] || "$PYTHON" bench/data_pipeline.py make-large "$OUT" 500

experiment() {  # FILE DATASET_YAML
  cat >"$1" <<YAML
name: data_pipeline
seed: 1
launch: {num_processes: 1, device: cpu, threads_per_process: 1}
data:
  dataset: $2
  train_transforms:
    - {name: random_resized_crop, height: 224, width: 224}
    - {name: horizontal_flip, p: 0.5}
    - {name: normalize}
  eval_transforms: [{name: normalize}]
  num_workers: 2
  check: none
model: {backbone: small_cnn, in_chans: 3, num_classes: 10}
optimizer: {name: adam, lr: 1.0e-3}
train: {epochs: 1, batch_size: 64}
predict: {enabled: false}
YAML
}
experiment "$OUT/folder.yaml" "{name: image_folder, root: $PWD/$OUT/folder}"
experiment "$OUT/large.yaml" "{name: image_folder, root: $PWD/$OUT/large}"
experiment "$OUT/shards.yaml" \
  "{name: webdataset, root: $PWD/$OUT/shards, urls: 'train-{000000..000007}.tar', shuffle_buffer: 1000}"

runner_rate() {  # EXPERIMENT EPOCH [--set ...]
  "$RUNNER" bench-data "$1" --batches 1000 --epoch "$2" "${@:3}" | awk '$1 == "pipeline" {print $2}'
}
has_wds=$("$PYTHON" -c 'import webdataset' 2>/dev/null && echo 1 || echo 0)
for rep in $(seq 1 "$REPS"); do
  echo "rep $rep folder runner $(runner_rate "$OUT/folder.yaml" 2)"
  echo "rep $rep folder torch $("$PYTHON" bench/data_pipeline.py torch "$OUT" 64 1 | awk '{print $2}')"
  echo "rep $rep shards runner $(runner_rate "$OUT/shards.yaml" 2)"
  if [ "$has_wds" = 1 ]; then
    echo "rep $rep shards torch $("$PYTHON" bench/data_pipeline.py wds "$OUT" 64 1 | awk '{print $2}')"
  fi
  echo "rep $rep large runner $(runner_rate "$OUT/large.yaml" 2)"
  echo "rep $rep large whole $(runner_rate "$OUT/large.yaml" 2 --set data.reduced_decode=false)"
  echo "rep $rep large torch $("$PYTHON" bench/data_pipeline.py torch "$OUT" 64 1 large | awk '{print $2}')"
done | tee "$OUT/figures.txt"
"$PYTHON" - "$OUT/figures.txt" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    _, _, layout, side, value = line.split()
    rates.setdefault((layout, side), []).append(float(value))
for layout, baseline in (("folder", "torchvision ImageFolder + DataLoader"),
                         ("shards", "webdataset + WebLoader"),
                         ("large", "torchvision ImageFolder + DataLoader (1200x900)")):
    if (layout, "torch") not in rates:
        continue
    r, t = statistics.median(rates[layout, "runner"]), statistics.median(rates[layout, "torch"])
    print(f"{layout:7} runner {r:7.1f} images/s, {baseline} {t:7.1f} images/s: {r / t:.2f}x")
if ("large", "whole") in rates:
    r, w = statistics.median(rates["large", "runner"]), statistics.median(rates["large", "whole"])
    print(f"large   data.reduced_decode: {r:.1f} images/s against {w:.1f} decoding whole: {r / w:.2f}x")
PY
