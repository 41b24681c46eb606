#!/usr/bin/env bash
# The CLI as a user meets it: exit codes, one-line errors with positions and suggestions,
# validate/config/plugins/env/schema, and a shared-library plugin used by an experiment.
set -eu
runner=$1
root=$2
plugin=$3
. "$root/tests/integration/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

expect_exit 0 "$runner" validate --schema-only experiments/*.yaml experiments/sweeps/*.yaml
expect_output "ok: experiments/mnist_ddp_fp16.yaml"
expect_output "ok: experiments/sweeps/bs_sweep.yaml (sweep, 6 points)"

# A misspelled key: one line with file:line:col, key path and a suggestion; exit code 2.
sed 's/lr: 2.0e-3/lrr: 2.0e-3/' experiments/quickstart.yaml >"$tmp/typo.yaml"
expect_exit 2 "$runner" validate "$tmp/typo.yaml"
expect_output "$tmp/typo.yaml:27:25: optimizer.lrr: unknown key (did you mean 'lr'?)"
sed 's/backbone: small_cnn/backbone: convnext_smal/' experiments/quickstart.yaml >"$tmp/backbone.yaml"
expect_exit 2 "$runner" run "$tmp/backbone.yaml" --dry-run
expect_output "model.backbone: unknown backbone 'convnext_smal' (did you mean 'convnext_small'?; see 'runner plugins models')"
# A name runner has no native form of points at timm's.
sed 's/backbone: small_cnn/backbone: efficientnet_b0/' experiments/quickstart.yaml >"$tmp/timm.yaml"
expect_exit 2 "$runner" run "$tmp/timm.yaml" --dry-run
expect_output "model.backbone: unknown backbone 'efficientnet_b0' (timm/efficientnet_b0 builds timm's model of that name; see 'runner plugins models')"

# Without `extends`, the required sections are still required.
printf 'name: x\ndata: {dataset: {name: mnist}}\noptimizer: {name: adam}\n' >"$tmp/nomodel.yaml"
expect_exit 2 "$runner" validate "$tmp/nomodel.yaml"
expect_output "model"

# One mistake, one line.
sed 's/batch_size: 64 /batch_size: -4 /' experiments/quickstart.yaml >"$tmp/negative.yaml"
expect_exit 2 "$runner" validate "$tmp/negative.yaml"
expect_output "train.batch_size"
[ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: one mistake should be one line, got: $out"; failures=$((failures + 1)); }

# A path the system refuses (a symlink loop) is one line naming it, exit 2, not an internal error.
ln -s loop.yaml "$tmp/loop.yaml"
expect_exit 2 "$runner" run "$tmp/loop.yaml"
expect_output "$tmp/loop.yaml: Too many levels of symbolic links"
[ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: a refused path should be one line, got: $out"; failures=$((failures + 1)); }

# Overrides are typed and shown by `config`; a bad override path is an error.
expect_exit 0 "$runner" config experiments/mnist_ddp_fp16.yaml --set optimizer.lr=1e-4
expect_output "lr: 0.0001"
expect_output "batch_size: 128"
# The resolved config has no float noise, names each plugin first, and reads back to itself.
expect_exit 0 "$runner" config experiments/mnist_ddp_fp16.yaml
expect_output "mean: 0.131"
expect_output "lr: 5.0e-05"
expect_output "betas: [0.9, 0.999]"
expect_output "    - name: normalize"
printed=$out
printf '%s\n' "$printed" >"$tmp/printed.yaml"
expect_exit 0 "$runner" config "$tmp/printed.yaml"
[ "$out" = "$printed" ] || { echo "FAIL: runner config of its own output differs"; diff <(echo "$printed") <(echo "$out") | head; failures=$((failures + 1)); }
expect_exit 2 "$runner" config experiments/mnist_ddp_fp16.yaml --set optimizer.lrr=1e-4
expect_output "--set optimizer.lrr=1e-4: optimizer.lrr: unknown key (did you mean 'lr'?)"

# runner help [COMMAND].
expect_exit 0 "$runner" help
expect_output "  sweep "
expect_output "runner help COMMAND"
expect_exit 0 "$runner" help run
expect_output "--resume"
expect_exit 2 "$runner" help runn
expect_output "unknown command 'runn' (did you mean 'run'?)"

# A missing '}' is reported where the '{' opened (yaml-cpp notices it lines later).
line=$(grep -n "{name: horizontal_flip, p: 0.5}" experiments/quickstart.yaml | cut -d: -f1)
sed 's/{name: horizontal_flip, p: 0.5}/{name: horizontal_flip, p: 0.5/' experiments/quickstart.yaml >"$tmp/unclosed.yaml"
expect_exit 2 "$runner" validate "$tmp/unclosed.yaml"
expect_output "unclosed.yaml:$line:7: YAML syntax error: this '{' is not closed (add '}' where it ends"

# A key in the wrong section points at its home.
expect_exit 2 "$runner" validate experiments/quickstart.yaml --set train.lr=0.1
expect_output "train.lr: unknown key (did you mean 'optimizer.lr'?)"
expect_exit 2 "$runner" validate experiments/quickstart.yaml --set optimizer.epochs=3
expect_output "optimizer.epochs: unknown key (did you mean 'train.epochs'?)"

# Usage errors: unknown command and option, with suggestions.
expect_exit 2 "$runner" valdate x.yaml
expect_output "unknown command 'valdate' (did you mean 'validate'?)"
expect_exit 2 "$runner" run experiments/quickstart.yaml --dry-rn
expect_output "unknown option '--dry-rn' (did you mean '--dry-run'?)"
expect_exit 2 "$runner" validate does-not-exist.yaml
expect_output "does-not-exist.yaml: no such experiment file"

# plugins, env, schema.
expect_exit 0 "$runner" plugins models
expect_output "convnext_small"
expect_output "in_chans: integer = 3"
# A parameter most models share is described once, and each model names it.
[ "$(grep -c "pretrained: boolean|string = false  Start from timm weights" <<<"$out")" = 1 ] ||
  { echo "FAIL: runner plugins models should describe the shared pretrained once"; failures=$((failures + 1)); }
expect_output "+ shared: drop_path_rate, drop_rate, freeze, grad_checkpointing, in_chans, init_from, init_from_weights, num_classes, pretrained"
expect_exit 0 "$runner" plugins --json
/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert set(d)=={"datasets","transforms","models","optimizers","schedulers","losses","metrics","trackers"}, d.keys()' <<<"$out" || { echo "FAIL: plugins --json"; failures=$((failures+1)); }
expect_exit 0 "$runner" env
expect_output "libtorch"
expect_output "BLAS"
# The CUDA the binary was built with shows without a GPU too: the linked torch's (a CPU-only
# torch says so).
torch_cuda=$("$RUNNER_PYTHON" -c 'import torch; print(torch.version.cuda or "")')
if [ -n "$torch_cuda" ]; then
  expect_output "CUDA            built with $torch_cuda; "
else
  expect_output "CUDA            not built in"
fi
expect_exit 0 "$runner" schema

# The dry run builds everything and states the global batch.
expect_exit 0 "$runner" run experiments/quickstart.yaml --dry-run
expect_output "batch           64 per process x 2 processes x 1 accumulation step = 128 global"
expect_output "dry run: everything resolved; no training done"

# A shared-library plugin named in `plugins:` registers a transform the experiment uses.
cat >"$tmp/plugin.yaml" <<YAML
extends: $root/experiments/quickstart.yaml
name: with_plugin
plugins: [$plugin]
data:
  train_transforms: [{name: invert}, {name: normalize, mean: 0.5, std: 0.5}]
YAML
expect_exit 0 "$runner" run "$tmp/plugin.yaml" --dry-run
expect_output "transforms      train 2"
sed 's#plugins: \[.*\]#plugins: [/nonexistent/libnothing.so]#' "$tmp/plugin.yaml" >"$tmp/noplugin.yaml"
expect_exit 2 "$runner" validate "$tmp/noplugin.yaml"
expect_output "plugins.0: plugin library '/nonexistent/libnothing.so' does not exist"
RUNNER_PLUGIN_PATH=$plugin expect_exit 0 "$runner" plugins transforms
expect_output "invert"
# A plugin built against plugin ABI 1 (optimizer factories returned torch::optim::Optimizer;
# ABI 2 returns runner::optim::Optimizer) is refused in one line saying what changed.
cat >"$tmp/old_abi.cpp" <<'CPP'
extern "C" int runner_plugin_abi_version() { return 1; }
extern "C" void runner_plugin_register(void*) {}
CPP
c++ -shared -fPIC -o "$tmp/libold_abi.so" "$tmp/old_abi.cpp"
sed "s#plugins: \[.*\]#plugins: [$tmp/libold_abi.so]#" "$tmp/plugin.yaml" >"$tmp/oldabi.yaml"
expect_exit 2 "$runner" validate "$tmp/oldabi.yaml"
expect_output "was built for plugin ABI 1, this runner has ABI 3: rebuild the plugin against this runner's headers (ABI 2: an optimizer factory returns runner::optim::Optimizer"
# ABI 3 only appended the trackers registry: a plugin built for ABI 2 still loads.
sed 's/return 1;/return 2;/' "$tmp/old_abi.cpp" >"$tmp/abi2.cpp"
c++ -shared -fPIC -o "$tmp/libabi2.so" "$tmp/abi2.cpp"
sed "s#plugins: \[.*\]#plugins: [$tmp/libabi2.so]#" "$tmp/plugin.yaml" >"$tmp/abi2.yaml"
"$runner" validate "$tmp/abi2.yaml" >"$tmp/abi2.out" 2>&1 || true
if grep -q "plugin ABI" "$tmp/abi2.out" || ! grep -q "unknown transform 'invert'" "$tmp/abi2.out"; then
  echo "FAIL: an ABI 2 plugin should load (only its transform is missing): $(cat "$tmp/abi2.out")"; failures=$((failures+1))
fi

# A shortened quickstart (5 optimizer steps) clips the cosine schedule's 50 warm-up steps.
expect_exit 0 "$runner" run experiments/quickstart.yaml --set data.limit.train=640 \
  --set data.limit.val=128 --set data.limit.test=64 --set "output.root=$tmp/runs" \
  --set launch.master_port=0
expect_output "scheduler.warmup_steps 50 is not shorter than this run's 5 optimizer steps: clipped to 4"

# A CUDA experiment on a machine without a GPU: one line before any rank starts, exit 2.
if ! command -v nvidia-smi >/dev/null; then
  expect_exit 2 "$runner" run experiments/mnist_ddp_fp16.yaml
  expect_output "experiments/mnist_ddp_fp16.yaml:"
  expect_output "launch.device is cuda but no CUDA device is available"
  [ "$(grep -c . <<<"$out")" = 1 ] || { echo "FAIL: expected one line, got: $out"; failures=$((failures + 1)); }
fi

# Two ranks on one GPU: NCCL refuses them, so only Gloo may share a GPU (said before any rank).
expect_exit 2 "$runner" run experiments/mnist_ddp_fp16.yaml --set launch.backend=nccl --set "launch.gpu_ids=[0,0]"
expect_output "launch.gpu_ids gives local ranks 0 and 1 the same GPU 0: NCCL refuses two ranks on one GPU"
expect_output "set launch.backend=gloo to share a GPU"

# Under SLURM, a node name that does not resolve is one line naming where it came from, at once
# (c10d alone retries until the timeout, warning once a second).
SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_ID=0 SLURM_NODELIST=no-such-node-r7 \
  expect_exit 2 timeout 60 "$runner" run experiments/quickstart.yaml
expect_output "rank 0: MASTER_ADDR 'no-such-node-r7' (from SLURM_NODELIST) does not resolve"

# --config-dir: a resolved copy saved elsewhere (RUN/config.yaml, a sweep's SLURM point file)
# finds its relative paths against the folder named; without it, against its own folder.
if [ -d /usr/share/datasets/fashion-mnist ]; then
  mkdir -p "$tmp/exp" "$tmp/copies"
  ln -sfn /usr/share/datasets/fashion-mnist "$tmp/exp/fm"
  sed 's|root: .*|root: fm|' experiments/quickstart.yaml >"$tmp/copies/relative.yaml"
  expect_exit 2 "$runner" run "$tmp/copies/relative.yaml" --dry-run
  expect_output "relative.yaml:15:11: data.dataset.root: no such folder: $tmp/copies/fm"
  expect_exit 0 "$runner" run "$tmp/copies/relative.yaml" --config-dir "$tmp/exp" --dry-run
  expect_exit 2 "$runner" run "$tmp/copies/relative.yaml" --config-dir "$tmp/no_such_dir" --dry-run
  expect_output "--config-dir $tmp/no_such_dir: no such folder"
fi

finish
