#!/usr/bin/env bash
# The input pipeline alone (issue 54, item 5): `runner bench-data` against torch's DataLoader
# on the same 2,000 JPEGs of 256 px (bench/data_pipeline.py makes them): torchvision
# ImageFolder + RandomResizedCrop(224) + flip + ToTensor + Normalize with 2 workers, against
# runner's image_folder + random_resized_crop 224 + horizontal_flip + normalize on 2 loader
# threads; then the same files as 8 WebDataset shards, the webdataset package (2 workers,
# shuffle 1000) against data.dataset webdataset (shuffle_buffer 1000). Batches of 64, a whole
# epoch a measure, the sides interleaved REPS times; prints each figure and the median ratio.
# The same shards over http from a local nginx (issue 72; Debian's nginx-light, started here on
# a free port, stopped after): runner streaming them (data.dataset.shard_index, no cache: each
# shard fetched when first read) against the same shards read locally and against the webdataset
# package reading the same URLs (curl, 2 workers); and runner reading them from a filled
# cache_dir (a later epoch's figure).
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
[ -f "$OUT/shards/shards.json" ] || "$PYTHON" bench/data_pipeline.py make "$OUT" "$N"
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

# nginx serving the shards, on a free port, for the http rows.
NGINX=/usr/sbin/nginx
port=""
if [ -x "$NGINX" ]; then
  port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
  web="$PWD/$OUT/nginx"
  rm -rf "$web" && mkdir -p "$web/tmp"
  chmod o+rx "$PWD/$OUT" "$PWD/$OUT/shards" 2>/dev/null || true
  cat >"$web/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $web/nginx.pid;
error_log $web/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $web/tmp;
  proxy_temp_path $web/tmp;
  fastcgi_temp_path $web/tmp;
  uwsgi_temp_path $web/tmp;
  scgi_temp_path $web/tmp;
  server { listen 127.0.0.1:$port; root $PWD/$OUT/shards; }
}
CONF
  "$NGINX" -p "$web" -c nginx.conf &
  nginx_pid=$!
  trap 'kill $nginx_pid 2>/dev/null || true' EXIT
  sleep 0.5
  base="http://127.0.0.1:$port"
  experiment "$OUT/http.yaml" "{name: webdataset, urls: '$base/train-{000000..000007}.tar', \
shard_index: $base/shards.json, classes: 10, shuffle_buffer: 1000}"
  experiment "$OUT/cached.yaml" "{name: webdataset, urls: '$base/train-{000000..000007}.tar', \
shard_index: $base/shards.json, classes: 10, shuffle_buffer: 1000, cache_dir: $PWD/$OUT/cache}"
  rm -rf "$OUT/cache"
  "$RUNNER" bench-data "$OUT/cached.yaml" --batches 1000 --epoch 1 >/dev/null  # fills the cache
fi

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
  if [ -n "$port" ]; then
    echo "rep $rep http runner $(runner_rate "$OUT/http.yaml" 2)"
    echo "rep $rep http local $(runner_rate "$OUT/shards.yaml" 2)"
    echo "rep $rep cached runner $(runner_rate "$OUT/cached.yaml" 2)"
    echo "rep $rep cached local $(runner_rate "$OUT/shards.yaml" 2)"
    if [ "$has_wds" = 1 ]; then
      echo "rep $rep http torch $("$PYTHON" bench/data_pipeline.py wds "$OUT" 64 1 "$base" | awk '{print $2}')"
    fi
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
for layout, what in (("http", "streamed over http (no cache)"), ("cached", "from the filled cache")):
    if (layout, "runner") not in rates:
        continue
    r, l = statistics.median(rates[layout, "runner"]), statistics.median(rates[layout, "local"])
    print(f"{layout:7} runner {what} {r:7.1f} images/s, the same shards local {l:7.1f} images/s: "
          f"{r / l:.2f}x")
    if (layout, "torch") in rates:
        t = statistics.median(rates[layout, "torch"])
        print(f"{layout:7} runner {r:7.1f} images/s, webdataset + WebLoader over the same URLs "
              f"{t:7.1f} images/s: {r / t:.2f}x")
if ("large", "whole") in rates:
    r, w = statistics.median(rates["large", "runner"]), statistics.median(rates["large", "whole"])
    print(f"large   data.reduced_decode: {r:.1f} images/s against {w:.1f} decoding whole: {r / w:.2f}x")
PY
