# Shared helpers for integration test scripts: `expect_exit CODE CMD...`, `expect_output TEXT`.
set -u
failures=0
out=""
expect_exit() {
  local want=$1
  shift
  set +e
  out=$("$@" 2>&1)
  local got=$?
  set -e
  if [ "$got" != "$want" ]; then
    echo "FAIL: expected exit $want, got $got: $*"
    echo "$out" | tail -n 20
    failures=$((failures + 1))
  fi
}
expect_output() {
  if ! grep -qF -- "$1" <<<"$out"; then
    echo "FAIL: output lacks: $1"
    echo "--- output was:"
    echo "$out" | tail -n 20
    failures=$((failures + 1))
  fi
}
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}
