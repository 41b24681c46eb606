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
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
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
