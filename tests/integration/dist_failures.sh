#!/bin/bash
# Failures never hang and are reported: a rank killed with SIGKILL mid-run, a rank exiting
# non-zero, Ctrl-C on the launcher, a rank late for a collective past the timeout. In each case every rank is gone afterwards and the report
# names the failed rank and how it ended.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1 DIST_TIMEOUT_S=30

ready_pids() { sed -n 's/.*HOLD_READY rank=[0-9]* pid=\([0-9]*\).*/\1/p' "$1"; }
wait_ready() {  # wait_ready LOG N: until N ranks printed HOLD_READY (max 60 s)
  local i; for i in $(seq 600); do
    [ "$(ready_pids "$1" | wc -l)" -ge "$2" ] && return 0; sleep 0.1
  done; cat "$1" >&2; fail "ranks did not start"
}

# 1. SIGKILL one rank of three.
"$WORKER" --grace 3 spawn 3 hold 120 > "$TMP/kill.log" 2>&1 &
launcher=$!
wait_ready "$TMP/kill.log" 3
victim=$(sed -n 's/.*HOLD_READY rank=1 pid=\([0-9]*\).*/\1/p' "$TMP/kill.log")
all=$(ready_pids "$TMP/kill.log")
kill -KILL "$victim"
timeout 30 tail --pid=$launcher -f /dev/null || fail "launcher still running 30 s after a rank died"
wait $launcher; code=$?
[ $code -eq 1 ] || fail "launcher exit code $code after a rank was killed, expected 1 (a failed run)"
expect_in "rank 1 (pid $victim) was killed by signal SIGKILL (9)" "$TMP/kill.log"
expect_in "last .* lines of rank 1" "$TMP/kill.log"
pids_gone $all

# 2. A rank exits with code 7: the launcher reports it and exits 7.
"$WORKER" spawn 2 crash 1 1 7 > "$TMP/crash.log" 2>&1
code=$?
[ $code -eq 7 ] || { cat "$TMP/crash.log"; fail "launcher exit code $code, expected 7"; }
expect_in "rank 1 (pid [0-9]*) exited with code 7" "$TMP/crash.log"
expect_in "| rank 1 failing on purpose with code 7" "$TMP/crash.log"

# 3. SIGINT (Ctrl-C) to the launcher stops every rank.
"$WORKER" spawn 2 hold 120 > "$TMP/int.log" 2>&1 &
launcher=$!
wait_ready "$TMP/int.log" 2
all=$(ready_pids "$TMP/int.log")
kill -INT $launcher
timeout 30 tail --pid=$launcher -f /dev/null || fail "launcher still running 30 s after SIGINT"
wait $launcher; code=$?
[ $code -eq 130 ] || { cat "$TMP/int.log"; fail "launcher exit code $code after SIGINT, expected 130"; }
expect_in "received SIGINT: every rank stops after its current step" "$TMP/int.log"
pids_gone $all

# 4. Rank 1 reaches an all_reduce 10 s late with a 3 s timeout: rank 0's error names rank 1 as
# the one that did not arrive, and the run ends non-zero instead of waiting for it.
DIST_TIMEOUT_S=3 timeout 60 "$WORKER" --grace 3 spawn 2 late 1 10 > "$TMP/late.log" 2>&1
code=$?
[ $code -ne 0 ] && [ $code -ne 124 ] || { cat "$TMP/late.log"; fail "late rank: launcher exit code $code"; }
expect_in "rank 0: all_reduce (collective #[0-9]*) timed out after [0-9.]* s: rank 1 did not arrive" "$TMP/late.log"
# With three ranks and rank 2 late, ranks 0 and 1 time out together: neither blames the other.
DIST_TIMEOUT_S=3 timeout 60 "$WORKER" --grace 3 spawn 3 late 2 10 > "$TMP/late3.log" 2>&1
code=$?
[ $code -ne 0 ] && [ $code -ne 124 ] || { cat "$TMP/late3.log"; fail "late rank of 3: launcher exit code $code"; }
expect_in "rank [01]: all_reduce (collective #[0-9]*) timed out after [0-9.]* s: rank 2 did not arrive" "$TMP/late3.log"
echo "PASS"
