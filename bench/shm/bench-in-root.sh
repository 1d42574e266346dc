#!/usr/bin/env bash
# shm-bench in one of tools/test-matrix.sh's cached roots (GStreamer 1.26
# in trixie, 1.28 in sid, where unixfdsink/unixfdsrc exist), without the
# test suites: the tree is copied in (git ls-files), configured as the
# matrix does (-Dwerror=true), only shm-bench and the plugin are built, and
# shm-bench runs with the given arguments. As root.
#   bench/shm/bench-in-root.sh [SUITE] [SHM-BENCH ARGS...]   (default: sid)
#   e.g. bench/shm/bench-in-root.sh sid --rounds 5 --csv-file /src/out.csv
# Prints shm-bench's output; the files it writes under /src (the tree's
# copy) are copied to $PINNEDFLOW_BENCH_OUT (default: build/) when given
# as /src/NAME. The root is never written: the run works on an overlay of
# it in a private mount and pid namespace, removed at the end (as the
# matrix's run_root()). The root must exist: tools/test-matrix.sh
# --roots-only makes it.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

if [ "${1:-}" = "--inside" ]; then
  shift
  cd /src || exit 1
  meson setup build -Dwerror=true -Dtests=enabled >build-setup.log 2>&1 || {
    tail -30 build-setup.log
    exit 1
  }
  ninja -C build bench/shm/shm-bench gst/shm/libgstpinnedshm.so \
    >build.log 2>&1 || {
    grep -B2 -A8 -e "error:" -e FAILED build.log | head -60
    exit 1
  }
  echo "bench-in-root: GStreamer $(pkg-config --modversion gstreamer-1.0)," \
    "$(gcc --version | head -1)"
  GST_PLUGIN_PATH_1_0=/src/build/gst/shm GST_REGISTRY_1_0=/tmp/bench.bin \
    build/bench/shm/shm-bench "$@"
  exit $?
fi

if [ "$(id -u)" != 0 ]; then
  echo "bench-in-root: needs root (mounts, chroot)" >&2
  exit 1
fi
suite=sid
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  suite=$1
  shift
fi
cache=${PINNEDFLOW_MATRIX_CACHE:-/var/cache/pinnedflow/roots}
root=$cache/$suite
out=${PINNEDFLOW_BENCH_OUT:-$top/build}
if [ ! -d "$root/usr" ]; then
  echo "bench-in-root: no root $root (tools/test-matrix.sh --roots-only)" >&2
  exit 1
fi
work=$(mktemp -d /var/tmp/pf-bench-"$suite".XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper/src" "$work/ovl" "$work/merged" "$cache/ccache-$suite"
(cd "$top" && git ls-files -z -co --exclude-standard |
  tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$work/upper/src" ||
  exit 1
# shellcheck disable=SC2016 # the inner shell expands its own arguments
unshare --mount --pid --fork --kill-child --propagation private \
  /bin/sh -ec '
  root=$1 work=$2 ccache=$3 m=$2/merged
  shift 3
  mount -t overlay overlay -o lowerdir=$root,upperdir=$work/upper,workdir=$work/ovl $m
  mount -t proc proc $m/proc
  mount -t sysfs sysfs $m/sys
  mount --rbind /dev $m/dev
  mount -t tmpfs tmpfs $m/dev/shm
  mount -t tmpfs -o size=4g tmpfs $m/tmp
  mkdir -p $m/root/.ccache
  mount --bind $ccache $m/root/.ccache
  exec chroot $m /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb \
    bash /src/bench/shm/bench-in-root.sh --inside "$@"' \
  sh "$root" "$work" "$cache/ccache-$suite" "$@"
rc=$?
# the files shm-bench was told to write under /src
for a in "$@"; do
  case $a in
  /src/*)
    f=$work/upper/src/${a#/src/}
    [ -f "$f" ] && mkdir -p "$out" && cp "$f" "$out/" ;;
  esac
done
exit $rc
