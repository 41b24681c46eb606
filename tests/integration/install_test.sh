#!/usr/bin/env bash
# `cmake --install` gives a prefix from which a user builds a plugin out of tree with
# find_package(runner), and the installed `runner` loads it through RUNNER_PLUGIN_PATH.
set -eu
build=$1
root=$2
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$root/tests/integration/plugin_project" -B "$tmp/plugin-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DRUNNER_EXAMPLE_TRACKER_SOURCE="$root/plugins/examples/event_log_tracker.cpp" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/plugin-build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
RUNNER_PLUGIN_PATH="$tmp/plugin-build" expect_exit 0 "$tmp/prefix/bin/runner" plugins transforms
expect_output "posterize"
cat >"$tmp/exp.yaml" <<YAML
extends: $root/experiments/quickstart.yaml
name: user_plugin
data:
  train_transforms: [{name: posterize, bits: 3}]
YAML
RUNNER_PLUGIN_PATH="$tmp/plugin-build" expect_exit 0 "$tmp/prefix/bin/runner" run "$tmp/exp.yaml" --dry-run
expect_output "transforms      train 1"
# The example tracker, built out of tree: a short run tells it every event, in order.
RUNNER_PLUGIN_PATH="$tmp/plugin-build" expect_exit 0 "$tmp/prefix/bin/runner" plugins trackers
expect_output "event_log"
cat >"$tmp/tracked.yaml" <<YAML
name: tracked
launch: {device: cpu, threads_per_process: 1}
data:
  dataset: {name: synthetic, train_size: 64, val_size: 32, test_size: 0, height: 8, width: 8}
  eval_transforms: []
model: {backbone: small_cnn, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 1.0e-3}
train: {epochs: 1, batch_size: 16, log_every_steps: 2}
predict: {enabled: false}
output: {root: $tmp/runs, tensorboard: false, trackers: [{name: event_log, file: events.jsonl}]}
YAML
RUNNER_PLUGIN_PATH="$tmp/plugin-build" expect_exit 0 "$tmp/prefix/bin/runner" run "$tmp/tracked.yaml"
events=$(cat "$tmp"/runs/tracked/*/events.jsonl 2>/dev/null | sed -E 's/.*"event":"([a-z]+)".*/\1/' | uniq | tr '\n' ' ')
[ "$events" = "start log artifact finish " ] ||
  { echo "FAIL: the example tracker saw '$events', expected 'start log artifact finish '"; failures=$((failures + 1)); }
grep -q '"path":"summary.json"' "$tmp"/runs/tracked/*/events.jsonl &&
  grep -q '"status":"finished"' "$tmp"/runs/tracked/*/events.jsonl ||
  { echo "FAIL: the example tracker was not offered summary.json or did not finish"; failures=$((failures + 1)); }
# A user's machine has no CUDA toolkit: with /usr/local/cuda hidden (a mount namespace, where we
# may make one), the installed runner still starts and runs, its CUDA runtime found where the
# wheel's libtorch finds it.
if [ -d /usr/local/cuda ] && unshare -m true 2>/dev/null; then
  RUNNER_PLUGIN_PATH="$tmp/plugin-build" expect_exit 0 unshare -m sh -c \
    'mount -t tmpfs tmpfs /usr/local/cuda && exec "$0" run "$1" --dry-run' "$tmp/prefix/bin/runner" "$tmp/exp.yaml"
  expect_output "transforms      train 1"
  # runner env says where it found them: runner's own libraries in the prefix, the CUDA
  # runtime beside the wheel's libtorch.
  expect_exit 0 unshare -m sh -c 'mount -t tmpfs tmpfs /usr/local/cuda && exec "$0" env' "$tmp/prefix/bin/runner"
  expect_output "librunner_core.so       $tmp/prefix/lib"
  grep -qE "^  libcudart\.so\.[0-9]+ +/.*/nvidia/[^/]+/lib/libcudart" <<<"$out" ||
    { echo "FAIL: the installed runner's CUDA runtime is not the wheel's: $(grep cudart <<<"$out")"; failures=$((failures + 1)); }
else
  echo "note: no /usr/local/cuda to hide, or no mount namespace here: the installed runner ran with what this machine has"
fi
finish
