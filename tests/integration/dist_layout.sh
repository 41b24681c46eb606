#!/bin/bash
# Every shipped backbone, contiguous and channels_last, under DataParallel on 2 Gloo ranks: each
# gradient reaches the reducer with its bucket view's strides (no per-step copy) and libtorch
# prints no "Grad strides do not match bucket view strides" warning.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1
"$WORKER" spawn 2 layout > "$TMP/layout.log" 2>&1 || { cat "$TMP/layout.log"; fail "layout"; }
expect_count "LAYOUT_OK" 2 "$TMP/layout.log"
if grep -q "LAYOUT_MISMATCH\|LIBTORCH_WARNING\|Grad strides" "$TMP/layout.log"; then
  cat "$TMP/layout.log"; fail "a gradient arrived with other strides than its bucket view"
fi
echo "PASS"
