#!/usr/bin/env bash
# A plugin section whose plugin an extending file, a --set or a sweep point switches starts from
# the new plugin's defaults (issue 70), the way a user meets it: validate, `runner config`,
# `run --dry-run`, a run, a sweep.
# - the issue's file (extends the quickstart, names webdataset) validates, says which keys of
#   mnist it dropped, and trains;
# - optimizer (sgd's momentum under adam), scheduler, loss, model (a backbone's own keys; the
#   model's channels and classes stay), a transform list element, each by extends and by --set;
# - the order of --set keys does not matter (a sweep point's come sorted by name);
# - a key the new plugin does not take is reported at the line that wrote it, or at its --set;
# - a sweep point that switches the optimizer validates and its point runs with the new one.
# Usage: plugin_switch_test.sh RUNNER SOURCE_DIR
set -euo pipefail
runner=$1
source_dir=$2
if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: /usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() {
  echo "FAIL: $*"
  exit 1
}
# expect_note FILE TEXT: `runner config` and `run --dry-run` both say TEXT (extra args: --set ...)
expect_note() {
  local file=$1 text=$2
  shift 2
  "$runner" config "$file" "$@" >config.out 2>config.err || fail "config $file $*: $(cat config.err)"
  grep -qF "note: $text" config.err || fail "config $file $*: no note '$text': $(cat config.err)"
  "$runner" run "$file" --dry-run "$@" >dry.out 2>&1 || fail "dry-run $file $*: $(tail -3 dry.out)"
  grep -qF "note: $text" dry.out || fail "dry-run $file $*: no note '$text': $(head -5 dry.out)"
}
# expect_error FILE TEXT: validate refuses with TEXT, exit 2 (extra args: --set ...)
expect_error() {
  local file=$1 text=$2 rc=0
  shift 2
  "$runner" validate "$file" "$@" >err.out 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "validate $file $*: exit $rc, not 2: $(cat err.out)"
  grep -qF -- "$text" err.out || fail "validate $file $*: not '$text': $(cat err.out)"
}
# config_value FILE KEY: the value `runner config` resolves for dotted KEY (extra args: --set ...)
config_value() {
  local file=$1 key=$2
  shift 2
  "$runner" config "$file" --json "$@" 2>/dev/null |
    python3 -c "import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split('.'): v = v[int(k)] if isinstance(v, list) else v.get(k, 'absent')
print(json.dumps(v))" "$key"
}

python3 "$source_dir/experiments/make_shards.py" shards >/dev/null
quickstart="$source_dir/experiments/quickstart.yaml"

# The issue's file: the base's mnist keys (root, val_split) go; webdataset's defaults come.
cat >shards.yaml <<EOF
extends: $quickstart
data:
  dataset: {name: webdataset, root: shards, urls: "train-{000000..000007}.tar",
            val_urls: "val-{000000..000001}.tar", test_urls: test-000000.tar, mode: grayscale}
EOF
"$runner" validate shards.yaml >v.out 2>&1 || fail "validate shards.yaml: $(cat v.out)"
expect_note shards.yaml "data.dataset: webdataset replaces the base's mnist; its keys root, val_split dropped"
[[ $(config_value shards.yaml data.dataset.shuffle_buffer) == 1000 ]] || fail "webdataset's defaults"
[[ $(config_value shards.yaml data.dataset.val_split) == '"absent"' ]] || fail "val_split stayed"
# Without mode: grayscale the shards' PNGs decode in colour: the refusal names both fixes.
sed -i 's/, mode: grayscale//' shards.yaml
expect_error shards.yaml "set model.in_chans: 3, or data.dataset.mode: grayscale"
sed -i 's/test_urls: test-000000.tar}/test_urls: test-000000.tar, mode: grayscale}/' shards.yaml
"$runner" run shards.yaml --set output.root=runs --set train.max_steps=4 >run.out 2>&1 ||
  fail "run shards.yaml: $(tail -5 run.out)"
grep -q '"train": 2000' runs/quickstart/*/summary.json || fail "not trained on the shards"

# Optimizer: sgd's momentum does not stay under adam; the model keeps its channels and classes.
cat >sgd.yaml <<EOF
extends: $quickstart
optimizer: {name: sgd, lr: 0.05, momentum: 0.9, nesterov: true}
model: {backbone: small_cnn, drop_path_rate: 0.0}
loss: {name: cross_entropy, label_smoothing: 0.1}
scheduler: {name: step, step_size: 2, gamma: 0.5}
data:
  train_transforms:
    - {name: normalize, mean: 0.2860, std: 0.3530}
    - {name: random_erasing, p: 0.3, max_area: 0.2}
EOF
cat >adam.yaml <<EOF
extends: sgd.yaml
optimizer: {name: adam, lr: 0.001}
model: {backbone: resnet10t}
scheduler: {name: onecycle}
EOF
"$runner" validate adam.yaml >v.out 2>&1 || fail "validate adam.yaml: $(cat v.out)"
expect_note adam.yaml "optimizer: adam replaces the base's sgd; its keys lr, momentum, nesterov dropped"
expect_note adam.yaml "model: resnet10t replaces the base's small_cnn; its keys drop_path_rate dropped"
expect_note adam.yaml "scheduler: onecycle replaces the base's step; its keys gamma, step_size dropped"
[[ $(config_value adam.yaml model.in_chans) == 1 && $(config_value adam.yaml model.num_classes) == 10 ]] ||
  fail "the model's channels and classes did not stay"
[[ $(config_value adam.yaml optimizer.lr) == 0.001 ]] || fail "the extending file's lr"
# A key the new plugin does not take: at the extending file's line.
cat >bad.yaml <<EOF
extends: sgd.yaml
optimizer:
  name: adamw
  momentum: 0.9
EOF
expect_error bad.yaml "bad.yaml:4:3: optimizer.momentum: unknown key"

# The same by --set, in either order; a loss, a transform list element.
expect_note sgd.yaml "optimizer: adam replaces the base's sgd; its keys lr, momentum, nesterov dropped (--set optimizer.name=adam)" \
  --set optimizer.name=adam
[[ $(config_value sgd.yaml optimizer.betas --set optimizer.betas=[0.8,0.9] --set optimizer.name=adam) == "[0.8, 0.9]" ]] ||
  fail "a --set before the plugin's switch was lost"
[[ $(config_value sgd.yaml optimizer.momentum --set optimizer.name=sgd) == 0.9 ]] ||
  fail "the same plugin named again must merge key by key"
expect_note sgd.yaml "loss: bce replaces the base's cross_entropy; its keys label_smoothing dropped" \
  --set loss.name=bce
expect_note sgd.yaml "data.train_transforms.1: horizontal_flip replaces the base's random_erasing; its keys max_area dropped" \
  --set data.train_transforms.1.name=horizontal_flip
[[ $(config_value sgd.yaml data.train_transforms.1.p --set data.train_transforms.1.name=vertical_flip) == 0.3 ]] ||
  fail "p, which both flips take alike, must stay"
expect_error sgd.yaml "--set optimizer.momentum=0.5: optimizer.momentum: unknown key" \
  --set optimizer.momentum=0.5 --set optimizer.name=adam
expect_error "$quickstart" "--set model.backbone=torchscript: model: missing required key 'path'" \
  --set model.backbone=torchscript

# A sweep point that switches the optimizer: every point validates and runs with its own.
cat >sweep.yaml <<EOF
base: sgd.yaml
grid:
  optimizer.name: [sgd, adamw]
set:
  train.max_steps: 2
  predict.enabled: false
  launch.num_processes: 1
output: $tmp/sweep_runs
EOF
"$runner" validate sweep.yaml >v.out 2>&1 || fail "validate sweep.yaml: $(cat v.out)"
grep -q "2 points" v.out || fail "sweep points: $(cat v.out)"
"$runner" sweep sweep.yaml >sweep.out 2>&1 || fail "sweep: $(tail -5 sweep.out)"
adamw_config=$(ls "$tmp"/sweep_runs/sweep/*adamw*/config.yaml 2>/dev/null | head -1)
[[ -n $adamw_config ]] || fail "no adamw point ran: $(ls -R "$tmp/sweep_runs" | head)"
grep -q "name: adamw" "$adamw_config" || fail "the adamw point's config: $(grep -A3 optimizer "$adamw_config")"
grep -q "momentum" "$adamw_config" && fail "sgd's momentum reached the adamw point"
# A point key that would move the point's run folder is refused where it is written.
printf 'base: sgd.yaml\ngrid: {optimizer.name: [sgd]}\nset:\n  output.root: elsewhere\n' >moved.yaml
expect_error moved.yaml "moved.yaml:4:3: set.output.root: the sweep puts each point's run folder"
# random_erasing before normalize: validate refuses it, whichever sample it draws to erase.
expect_error sgd.yaml "transform random_erasing: it erases normalized float images" \
  --set "data.train_transforms=[{name: random_erasing, p: 0.1}, {name: normalize, mean: 0.3, std: 0.3}]"
echo "all checks passed"
