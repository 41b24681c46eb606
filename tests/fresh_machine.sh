#!/usr/bin/env bash
# The README's two commands on a fresh Debian 12 without a CUDA toolkit, timed part by part.
#
#   sudo tests/fresh_machine.sh [ROOT]      (default ROOT: /var/tmp/runner-fresh; ~1 hour on 2 cores)
#   sudo FRESH_SKIP_TEST=1 tests/fresh_machine.sh   (make run and make install only, ~15 minutes)
#   sudo FRESH_STOP_AFTER=run tests/fresh_machine.sh   (make run alone, ~10 minutes)
#   sudo FRESH_STOP_AFTER=deps [FRESH_SEQUENTIAL_DEPS=1] tests/fresh_machine.sh
#                                    (the dependencies only: side by side, or apt-get then pip)
#
# Builds a minimal bookworm root with debootstrap (nothing but `git make ca-certificates` added),
# clones this repository's committed HEAD into it and runs `make run`, then `make test`, printing
# the wall time of each part: apt-get, pip, configure, build, the quickstart, then the test
# build and suite. Too slow for every CI run: run it whenever the dependencies change and put its
# figures in the README. The root reaches the registries as this machine does: its extra CA
# certificates (a company proxy's) and its pip/apt proxy settings are copied in, nothing else.
# Needs root (debootstrap, chroot, mounts) and the debootstrap package.
set -euo pipefail

root=$(realpath -m "${1:-/var/tmp/runner-fresh}")
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then
  echo "fresh_machine.sh: needs root (debootstrap, chroot, mounts): run it with sudo" >&2
  exit 2
fi
command -v debootstrap > /dev/null || {
  echo "fresh_machine.sh: debootstrap is missing: apt-get install debootstrap" >&2
  exit 2
}

mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2> /dev/null || true; done
}
trap cleanup EXIT
mount_into() {  # mount_into TARGET ARGS...: mounts and remembers it for the cleanup
  local target=$root$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}

declare -A seconds
timed() {  # timed NAME COMMAND...: runs COMMAND, records its wall time under NAME
  local name=$1 start
  shift
  start=$(date +%s.%N)
  echo "=== $name: $*"
  "$@"
  seconds[$name]=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  printf '=== %s: %.0f s\n' "$name" "${seconds[$name]}"
}

if [ -e "$root" ]; then
  echo "fresh_machine.sh: $root exists; remove it first (rm -rf $root) for a fresh root" >&2
  exit 2
fi
timed debootstrap bash -c "debootstrap --variant=minbase bookworm '$root' '$mirror' > '$root.debootstrap.log'"

# What a machine behind a company proxy carries: its CA certificates and proxy settings.
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2> /dev/null || true
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
{ grep -ls -i 'proxy' /etc/apt/apt.conf.d/* || true; } | xargs -r cp -t "$root/etc/apt/apt.conf.d/"
# A machine resolves its own name (Debian's installer writes it into /etc/hosts; SLURM needs it).
cp /etc/resolv.conf /etc/hosts /etc/hostname "$root/etc/"

mount_into /proc -t proc proc
mount_into /sys --rbind /sys  # with /sys/fs/cgroup, which slurmd needs
mount_into /dev --bind /dev
mount_into /dev/pts --bind /dev/pts
mount_into /dev/shm -t tmpfs tmpfs
mount_into /run -t tmpfs tmpfs
mount_into /mnt/repo --bind "$repo"
mount -o remount,bind,ro "$root/mnt/repo"

# The user's shell: a clean environment (no CUDA_HOME, no PATH entry for a toolkit), as root.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}

timed base-packages in_root 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git make ca-certificates > /dev/null && update-ca-certificates > /dev/null'
in_root 'git config --global --add safe.directory /mnt/repo/.git && git config --global --add safe.directory /mnt/repo && git clone -q /mnt/repo /root/runner'
in_root 'test ! -e /usr/local/cuda && ! command -v nvcc' || {
  echo "fresh_machine.sh: the fresh root has a CUDA toolkit; it must not" >&2
  exit 1
}

# `make run`, part by part (the same make targets it depends on, in its order), then `make test`.
cd_runner='cd /root/runner &&'
# apt-get's build packages and pip's wheels run side by side (after python3-venv alone): the
# phase is their longer one; each one's own time comes from its stamp file.
if [ -n "${FRESH_SEQUENTIAL_DEPS:-}" ]; then  # the A/B of running them side by side
  timed deps in_root "$cd_runner make build/.deps-installed && make .venv/.build-requirements-installed"
else
  timed deps in_root "$cd_runner make build-deps"
fi
stamp_time() { in_root "stat -c %Y /root/runner/$1"; }
python_done=$(stamp_time build/.python-installed)
apt_alone=$(( $(stamp_time build/.deps-installed) - python_done ))
pip_alone=$(( $(stamp_time .venv/.build-requirements-installed) - python_done ))
echo "=== of which: python3-venv first, then apt-get ${apt_alone} s and pip ${pip_alone} s"
[ "${FRESH_STOP_AFTER:-}" = deps ] && exit 0
timed configure in_root "$cd_runner make build/build.ninja"
timed build in_root "$cd_runner make build-runner"
timed quickstart in_root "$cd_runner make run"
[ "${FRESH_STOP_AFTER:-}" = run ] && FRESH_SKIP_TEST=1
if [ -z "${FRESH_SKIP_TEST:-}" ]; then
  timed test in_root "$cd_runner make test"
else
  seconds[test]=0
fi
if [ "${FRESH_STOP_AFTER:-}" = run ]; then
  seconds[install]=0
else
# `make install` and the installed runner, which must start and train without a CUDA toolkit:
# its RUNPATH names the wheel's libtorch and CUDA libraries (runner env says where each came from).
timed install in_root "$cd_runner make install PREFIX=/opt/runner > /dev/null && \
  /opt/runner/bin/runner env | grep -E 'libtorch|CUDA' && \
  /opt/runner/bin/runner run experiments/quickstart.yaml --set data.limit.train=2048 \
    --set data.limit.val=512 --set data.limit.test=128 --set output.run_dir=/tmp/installed_run \
    --log-level warn && test -s /tmp/installed_run/summary.json"
fi

run_total=0
for part in deps configure build quickstart; do
  run_total=$(awk -v a="$run_total" -v b="${seconds[$part]}" 'BEGIN { print a + b }')
done
echo
echo "fresh Debian 12 root, $(nproc) cores, commit $(git -C "$repo" rev-parse --short HEAD):"
for part in deps configure build quickstart; do
  printf '  make run  %-11s %5.0f s\n' "$part" "${seconds[$part]}"
done
printf '  (deps: apt-get %s s and pip %s s side by side, after python3-venv)\n' "$apt_alone" "$pip_alone"
printf '  make run  %-11s %5.0f s (%.1f min)\n' total "$run_total" "$(awk -v a="$run_total" 'BEGIN { print a / 60 }')"
[ -z "${FRESH_SKIP_TEST:-}" ] &&
  printf '  make test %-11s %5.0f s (%.1f min; builds the tests, then runs the suite)\n' total \
    "${seconds[test]}" "$(awk -v a="${seconds[test]}" 'BEGIN { print a / 60 }')"
printf '  make install + the installed runner training a short quickstart %5.0f s\n' "${seconds[install]}"
