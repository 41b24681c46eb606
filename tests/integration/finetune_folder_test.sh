#!/usr/bin/env bash
# experiments/finetune_folder.yaml as its comment tells a user to run it (issue 52): images
# written by experiments/make_image_folder.py, the pretrained timm checkpoint from
# ../shared/reference/timm, lr-find, the run (frozen first epoch, then all), predict --input.
# Usage: finetune_folder_test.sh RUNNER SOURCE_DIR
set -euo pipefail
runner=$1
source_dir=$2
weights="${RUNNER_SHARED_DIR:-$source_dir/../shared}/reference/timm/convnext_atto.in3c1000.safetensors"
if [[ ! -f $weights ]]; then
  echo "SKIP: $weights is missing (the timm reference checkpoints are beside the checkout only)"
  exit 77
fi
if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: /usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
python3 "$source_dir/experiments/make_image_folder.py" "$tmp/images" 30 12
# The yaml's pretrained path is relative to a checkout with ../shared beside it; CI's clone
# finds the checkpoints through RUNNER_SHARED_DIR instead.
sets=(--set "data.dataset.root=$tmp/images/train" --set "output.root=$tmp/runs"
  --set "model.pretrained=$weights"
  --set "launch.device=cpu" --set "launch.threads_per_process=2")
"$runner" lr-find "$source_dir/experiments/finetune_folder.yaml" "${sets[@]}" --steps 20 \
  -o "$tmp/lr" >"$tmp/lr.log" 2>&1 || fail "lr-find: $(tail -5 "$tmp/lr.log")"
[[ -f $tmp/lr/lr_find.html ]] || fail "lr-find wrote no page"
"$runner" run "$source_dir/experiments/finetune_folder.yaml" "${sets[@]}" >"$tmp/run.log" 2>&1 ||
  fail "run: $(tail -5 "$tmp/run.log")"
grep -q "pretrained weights: loaded" "$tmp/run.log" || fail "no pretrained load line"
grep -q "model.freeze's part (.* parameters) trains from here on" "$tmp/run.log" ||
  fail "the backbone did not thaw at epoch 2"
run_dir=$(ls -d "$tmp"/runs/finetune_folder/*/)
head -1 "$run_dir/predictions.csv" | grep -q "^index,file,label,class,prob_0" ||
  fail "predictions.csv: $(head -1 "$run_dir/predictions.csv")"
"$runner" predict "$run_dir" --input "$tmp/images/new" --output "$tmp/new.csv" >"$tmp/p.log" 2>&1 ||
  fail "predict --input: $(tail -3 "$tmp/p.log")"
[[ $(wc -l <"$tmp/new.csv") -eq 13 ]] || fail "12 predictions and a header: $(wc -l <"$tmp/new.csv")"
grep -q "prob_ankle-boot" "$tmp/new.csv" || fail "class names in the predictions"
echo "all checks passed"
