#!/usr/bin/env bash
# The 1-thread compute floor of MODEL (convnext_small; any native backbone: resnet18, resnet50,
# ...) (forward + backward + Adam on one ready batch, 56 px, batch 16, 1 input channel, 10
# classes): runner's native model (build/bench/floor_bench, the fused adam plugin) against PyTorch
# eager on timm's (fused Adam, its strongest eager form), fp32 and bf16 autocast (+ channels_last
# with BF16_CHANNELS_LAST=1, the default for convnext_small), interleaved over REPS rounds (issues
# 42 and 55).
#
#   bench/convnext_floor.sh                        STEPS=8 REPS=2 (about 3 minutes here)
#   MODEL=resnet18 STEPS=20 bench/convnext_floor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-8}
REPS=${REPS:-2}
MODEL=${MODEL:-convnext_small}
BF16_CHANNELS_LAST=${BF16_CHANNELS_LAST:-$([[ $MODEL == convnext_small ]] && echo 1 || echo 0)}
PY=${PY:-.venv/bin/python}
eager() {  # eager PRECISION CHANNELS_LAST
  "$PY" - "$1" "$2" "$STEPS" "$MODEL" <<'PY'
import json, sys, time
import timm, torch, torch.nn.functional as F
precision, channels_last, steps = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
torch.set_num_threads(1)
torch.manual_seed(0)
model = timm.create_model(sys.argv[4], in_chans=1, num_classes=10).train()
x, y = torch.randn(16, 1, 56, 56), torch.randint(0, 10, (16,))
if channels_last:
    model = model.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
for _ in range(3):
    step()
t = time.perf_counter()
for _ in range(steps):
    step()
dt = time.perf_counter() - t
print(json.dumps({"images_per_s": steps * 16 / dt}))
PY
}
ours() {  # ours PRECISION CHANNELS_LAST
  FLOOR_PRECISION=$1 FLOOR_CHANNELS_LAST=$2 build/bench/floor_bench "$MODEL" 56 16 1 "$STEPS" 3
}
rate() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["images_per_s"])'; }
declare -A got
for rep in $(seq 1 "$REPS"); do
  for v in "fp32 0" "bf16 $BF16_CHANNELS_LAST"; do
    set -- $v
    got["eager $1 $rep"]=$(eager "$1" "$2" 2>/dev/null | rate)
    got["runner $1 $rep"]=$(ours "$1" "$2" | rate)
  done
done
echo "| precision | runner native img/s (each round) | PyTorch eager img/s | runner / eager |"
echo "| --- | --- | --- | --- |"
for p in fp32 bf16; do
  r=() e=()
  for rep in $(seq 1 "$REPS"); do r+=("${got[runner $p $rep]}"); e+=("${got[eager $p $rep]}"); done
  python3 - "$p" "${r[*]}" "${e[*]}" "$BF16_CHANNELS_LAST" "$MODEL" <<'PY'
import statistics, sys
p, r, e = sys.argv[1], list(map(float, sys.argv[2].split())), list(map(float, sys.argv[3].split()))
name = "fp32" if p == "fp32" else "bf16 autocast" + (" + channels_last" if sys.argv[4] == "1" else "")
name = f"{sys.argv[5]} {name}"
print(f"| {name} | {', '.join(f'{x:.1f}' for x in r)} | {', '.join(f'{x:.1f}' for x in e)} | "
      f"{statistics.mean(r) / statistics.mean(e):.2f} |")
PY
done
