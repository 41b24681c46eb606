# Helpers sourced by the dist_*.sh integration tests. WORKER must be set by the caller.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
# A TCP port free a moment ago.
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
# expect_count PATTERN N FILE: FILE has exactly N lines matching PATTERN.
expect_count() {
  local n; n=$(grep -c -- "$1" "$3" || true)
  [ "$n" = "$2" ] || { cat "$3" >&2; fail "expected $2 lines matching '$1' in $3, found $n"; }
}
expect_in() { grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }
# pids_gone PID...: none of them is still running.
pids_gone() {
  local p; for p in "$@"; do
    if kill -0 "$p" 2>/dev/null; then fail "rank process $p is still running"; fi
  done
}
TMP=$(mktemp -d /tmp/runner_dist_XXXXXX)
cleanup_tmp() { rm -rf "$TMP"; }
trap cleanup_tmp EXIT
