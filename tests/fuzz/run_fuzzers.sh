#!/usr/bin/env bash
# Builds every libFuzzer target with clang-14 + ASan/UBSan and runs each for SECONDS seconds
# (default 60) over its corpus; inputs that once crashed (tests/fuzz/regressions/NAME/) are
# replayed first. Exits non-zero on any finding. FUZZ_SEED (the test suite sets it) makes the
# run explore the same inputs every time, so that CI's verdict on a commit does not depend on a
# random draw; `make fuzz` leaves it unset and explores afresh each time.
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
cmake --build "$build" -j "$(nproc)"
status=0
for exe in "$build"/fuzz_*; do
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  seeds="$root/tests/fuzz/corpus/$name"
  regressions="$root/tests/fuzz/regressions/$name"
  if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ]; then
    echo "== $name: replaying regressions"
    "$exe" "$regressions"/* || status=1
  fi
  echo "== $name: fuzzing for ${seconds}s"
  args=("$corpus")
  [ -n "${FUZZ_SEED:-}" ] && args=(-seed="$FUZZ_SEED" "${args[@]}")
  [ -d "$seeds" ] && args+=("$seeds")
  "$exe" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/$name-" "${args[@]}" 2>&1 | tail -n 5 || status=1
done
exit $status
