#!/usr/bin/env bash
# The suite against newer GStreamer: Debian 13 (trixie, GStreamer 1.26) and
# Debian unstable (sid, 1.28) roots made with mmdebstrap (as root).
# For each root: the tree is copied in (git ls-files), configured with
# warnings as errors, built, and every suite runs (no valgrind pass: that
# one runs on the host only); the CUDA interop tests must run on the
# driver emulator with nvcodec's elements and take the GstCudaStream path
# (not skip); the Debian packages built by the install suite are then
# installed into the root with apt and used there; a short shm-bench
# (pinnedshm, shmsink and unixfd rows) runs in the last root.
# Prints "SUITE (GStreamer X): N passed, N failed, N skipped" per root
# (counted as tools/test.sh counts) and the time of each part; exits
# non-zero when anything failed.
#
# Usage: tools/test-matrix.sh [SUITE...]      (default: trixie sid)
#        tools/test-matrix.sh --roots-only [SUITE...]   (only make the roots:
#        tools/test.sh does this in the background while the host suites run)
# Roots are cached in $PINNEDFLOW_MATRIX_CACHE (default
# /var/cache/pinnedflow/roots), one directory per suite, and made again only
# when the package list or the options below change (or
# PINNEDFLOW_MATRIX_REFRESH=1). Each run works on an overlay of the cached
# root in a private mount namespace: the cache is never written, and the
# mounts and processes go away with the namespace.
# PINNEDFLOW_MATRIX_BENCH_ROUNDS (default 1; 0 = no bench);
# PINNEDFLOW_MATRIX_KEEP=1 keeps each run's overlay (/var/tmp/pf-matrix-*);
# PINNEDFLOW_MATRIX_TESTS="NAME..." runs only those tests (for debugging:
# the checks that need the others then fail).
# PINNEDFLOW_MATRIX_IPC_COMPARE=N also runs bench/domains/ipc-compare.sh
# with N frames after the build (cudaipcsink/src beside pinnedshm on the
# emulator), its table in build/ipc-compare-SUITE.txt.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ---------------------------------------------------------------- inside
# Runs in the root (chroot), the tree in /src, the build in /src/build.
inside() {
  local rc=0 t0 gstver
  cd /src || return 1
  gstver=$(pkg-config --modversion gstreamer-1.0)
  t0=$(date +%s)
  if ! meson setup build -Dwerror=true -Dtests=enabled >build-setup.log 2>&1; then
    tail -40 build-setup.log
    echo "matrix: meson setup failed"
    return 1
  fi
  if ! ninja -C build >build.log 2>&1; then
    grep -B2 -A8 -e "error:" -e "FAILED" build.log | head -80
    echo "matrix: build failed (warnings are errors)"
    return 1
  fi
  echo "matrix-time build $(($(date +%s) - t0))"
  if [ -n "${IPC_COMPARE:-}" ]; then
    bench/domains/ipc-compare.sh build "$IPC_COMPARE" >ipc-compare.txt 2>&1 ||
      rc=1
  fi

  t0=$(date +%s)
  # PINNEDFLOW_DEBS_OUT: tests/install/test_debs.py leaves its .debs there
  mkdir -p /tmp/debs
  # shellcheck disable=SC2086
  PINNEDFLOW_DEBS_OUT=/tmp/debs meson test -C build --print-errorlogs \
    --num-processes 2 ${MATRIX_TESTS:-} || rc=1
  echo "matrix-time suite $(($(date +%s) - t0))"

  # The interop tests with nvcodec's own elements must have run (no skip)
  # and taken the 1.24+ path (GstCudaStream + NEED_SYNC).
  python3 - build/meson-logs/testlog.json "$gstver" <<'PY' || rc=1
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
tests = {}
for line in open(sys.argv[1]):
    t = json.loads(line)
    # "proj:suite / name" (meson 1.0, 1.7) or "proj:name" (1.10)
    tests[t["name"].split(":")[-1].split(" / ")[-1]] = t
    r = t.get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif r == "SKIP":
        counts["skipped"] += 1
        why = [l for l in t.get("stdout", "").splitlines()
               if l.startswith("SKIP")]
        print("matrix: skipped %s: %s" % (t["name"], why[-1] if why else
                                          "(no reason printed)"))
    else:
        counts["failed"] += 1
print("matrix-summary %(passed)d passed, %(failed)d failed, %(skipped)d skipped"
      % counts)
bad = 0
for name in ("cuda-interop", "cuda-emu-nvcodec"):
    t = tests.get(name)
    if t is None or t.get("result") != "OK":
        print("matrix: %s did not pass here (%s): nvcodec on the emulator "
              "must run in this root" % (name, t and t.get("result")))
        bad = 1
t = tests.get("cuda-interop")
if t and "the 1.24+ (stream + NEED_SYNC) path" not in t.get("stdout", ""):
    print("matrix: cuda-interop did not take the GstCudaStream path")
    bad = 1
elif t:
    print("matrix: cuda-interop ran nvcodec's cudaupload/cudadownload on "
          "the emulator, GstCudaStream path (GStreamer %s)" % sys.argv[2])
sys.exit(bad)
PY
  if ! installed_debs; then
    echo "matrix: the Debian packages did not install or work here"
    rc=1
  fi
  if [ "${BENCH_ROUNDS:-0}" -gt 0 ]; then
    t0=$(date +%s)
    GST_PLUGIN_PATH_1_0=/src/build/gst/shm GST_REGISTRY_1_0=/tmp/bench.bin \
      build/bench/shm/shm-bench --rounds "$BENCH_ROUNDS" >bench.txt 2>&1 || {
      cat bench.txt
      echo "matrix: shm-bench failed"
      rc=1
    }
    echo "matrix-time bench $(($(date +%s) - t0))"
  fi
  return $rc
}

# The .debs of the install suite's debian-packages test, installed with apt
# into this (throwaway) root, then used at their real paths with no path
# variable: gst-inspect-1.0, import pinnedflow, a C program through
# pkg-config, and gst-launch-1.0 pinnedshmsink -> pinnedshmsrc byte for byte.
installed_debs() {
  local debs=(/tmp/debs/*.deb) d=/tmp/debcheck lib
  if [ ! -e "${debs[0]}" ]; then
    echo "matrix: no .debs from the install suite (debian-packages)"
    return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "${debs[@]}" >/tmp/debs/apt.log 2>&1 || {
    tail -20 /tmp/debs/apt.log
    return 1
  }
  lib=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  mkdir -p $d && cd $d || return 1
  env -u GST_PLUGIN_PATH GST_REGISTRY_1_0=$d/registry.bin \
    gst-inspect-1.0 pinnedshmsink >inspect.txt 2>&1 &&
    grep -q "Filename *$lib/gstreamer-1.0/libgstpinnedshm.so" inspect.txt || {
    echo "matrix: gst-inspect-1.0 pinnedshmsink of the installed package:"
    cat inspect.txt
    return 1
  }
  python3 -c 'import pinnedflow; print(pinnedflow.__file__)' >py.txt 2>&1
  grep -q -x /usr/lib/python3/dist-packages/pinnedflow/__init__.py py.txt || {
    echo "matrix: import pinnedflow:"
    cat py.txt
    return 1
  }
  cat >pc.c <<'EOF'
#include <gst/pinnedflow/pinnedflow.h>
int main (int argc, char **argv) {
  gst_init (&argc, &argv);
  GstAllocator *a = gst_pinned_allocator_get ();
  GstMemory *m = gst_allocator_alloc (a, 4096, NULL);
  int ok = m && gst_is_pinned_memory (m);
  if (m) gst_memory_unref (m);
  gst_object_unref (a);
  return ok ? 0 : 1;
}
EOF
  # shellcheck disable=SC2046
  cc -Wall -Werror -o pc pc.c $(pkg-config --cflags --libs \
    gstreamer-pinnedflow-1.0) && ./pc || {
    echo "matrix: the pkg-config program failed"
    return 1
  }
  local caps="video/x-raw,format=GRAY8,width=64,height=48,framerate=30/1"
  export GST_REGISTRY_1_0=$d/registry.bin
  gst-launch-1.0 -q videotestsrc num-buffers=10 pattern=ball ! "$caps" ! \
    filesink location=ref.raw || {
    echo "matrix: gst-launch-1.0 videotestsrc failed"
    return 1
  }
  gst-launch-1.0 -q videotestsrc num-buffers=10 pattern=ball ! "$caps" ! \
    pinnedshmsink socket-path=$d/s.sock wait-for-connection=true &
  local prod=$!
  # unbuffered: filesink's default buffering keeps 64 KiB of buffers, more
  # frames than max-client-buffers, and the producer demotes the consumer
  timeout 60 gst-launch-1.0 -q pinnedshmsrc socket-path=$d/s.sock \
    connect-timeout=-1 delivery=every-frame ! \
    filesink buffer-mode=unbuffered location=out.raw
  local crc=$?
  wait $prod || crc=1
  if [ $crc -ne 0 ] || ! cmp ref.raw out.raw; then
    echo "matrix: installed pinnedshmsink -> pinnedshmsrc: frames differ"
    return 1
  fi
  echo "matrix: installed $(ls /tmp/debs/*.deb | wc -l) packages with apt;" \
    "gst-inspect-1.0, import pinnedflow, pkg-config + cc, and" \
    "pinnedshmsink -> pinnedshmsrc ($(stat -c %s out.raw) bytes, identical)" \
    "at the installed paths"
  cd /src
}

if [ "${1:-}" = "--inside" ]; then
  inside
  exit $?
fi

# ---------------------------------------------------------------- outside
if [ "$(id -u)" != 0 ]; then
  echo "test-matrix: needs root (mmdebstrap, mounts, chroot)" >&2
  exit 1
fi
cache=${PINNEDFLOW_MATRIX_CACHE:-/var/cache/pinnedflow/roots}
bench_rounds=${PINNEDFLOW_MATRIX_BENCH_ROUNDS:-1}
roots_only=
if [ "${1:-}" = --roots-only ]; then
  roots_only=1
  shift
fi
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(trixie sid)
mirror=${PINNEDFLOW_MATRIX_MIRROR:-$(sed -n 's/^URIs: *//p' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security |
  head -1)}
mirror=${mirror:-http://deb.debian.org/debian}

# What the roots hold: tools/packages.txt's build and test packages, less
# valgrind (no valgrind pass in the roots), python3-matplotlib (plots for the
# docs only), python3-torch (a large download for one test, export-torch,
# which skips without it) and iceoryx (Debian 12's 2.0, for the bench's
# iceoryx rows only, which skip without it; not in every suite); plus
# build-essential (dpkg-buildpackage), iproute2 (multihost-netem) and ccache.
mapfile -t pkgs < <(grep -v -e '^#' -e '^$' "$top/tools/packages.txt" |
  grep -v -x -e valgrind -e python3-matplotlib -e python3-torch \
    -e iceoryx -e libiceoryx-binding-c-dev)
pkgs+=(build-essential iproute2 ccache)
# sid's Release file in a dated mirror snapshot is past its Valid-Until
mmopts=(--variant=minbase --dpkgopt=force-unsafe-io
  '--aptopt=Acquire::Check-Valid-Until "false"')

if ! command -v mmdebstrap >/dev/null; then
  echo "test-matrix: installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends mmdebstrap || exit 1
fi

make_root() {
  local suite=$1 root=$cache/$1 key t0
  key=$(printf '%s\n' "$suite" "$mirror" "${mmopts[@]}" "${pkgs[@]}" |
    sha256sum | cut -d' ' -f1)
  if [ -z "${PINNEDFLOW_MATRIX_REFRESH:-}" ] &&
    [ "$(cat "$root/.pinnedflow-key" 2>/dev/null)" = "$key" ]; then
    echo "matrix-time root-$suite 0 (cached: $root)"
    return 0
  fi
  t0=$(date +%s)
  rm -rf "$root.new"
  mkdir -p "$cache"
  if ! mmdebstrap "${mmopts[@]}" --include="$(
    IFS=,
    echo "${pkgs[*]}"
  )" "$suite" "$root.new" "$mirror" >"$cache/$suite.log" 2>&1; then
    tail -20 "$cache/$suite.log"
    rm -rf "$root.new"
    return 1
  fi
  echo "$key" >"$root.new/.pinnedflow-key"
  rm -rf "$root" && mv "$root.new" "$root"
  echo "matrix-time root-$suite $(($(date +%s) - t0)) (made: $root)"
}

# Copies the tree into UPPER/src and runs this script --inside the overlay
# of ROOT and UPPER, in a private mount and pid namespace.
run_root() {
  local suite=$1 work=$2 root=$cache/$1
  mkdir -p "$work/upper/src" "$work/ovl" "$work/merged" \
    "$cache/ccache-$suite"
  (cd "$top" && git ls-files -z -co --exclude-standard |
    tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$work/upper/src" ||
    return 1
  unshare --mount --pid --fork --kill-child --propagation private \
    /bin/sh -ec '
    root=$1 work=$2 ccache=$3 m=$2/merged
    mount -t overlay overlay -o lowerdir=$root,upperdir=$work/upper,workdir=$work/ovl $m
    mount -t proc proc $m/proc
    mount -t sysfs sysfs $m/sys
    mount --rbind /dev $m/dev
    mount -t tmpfs tmpfs $m/dev/shm
    mount -t tmpfs -o size=4g tmpfs $m/tmp
    mkdir -p $m/root/.ccache
    mount --bind $ccache $m/root/.ccache
    cp /etc/resolv.conf $m/etc/resolv.conf 2>/dev/null || true
    exec chroot $m /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb BENCH_ROUNDS=$4 MATRIX_TESTS="$5" \
      IPC_COMPARE="$6" bash /src/tools/test-matrix.sh --inside' \
    sh "$root" "$work" "$cache/ccache-$suite" "$3" \
    "${PINNEDFLOW_MATRIX_TESTS:-}" "${PINNEDFLOW_MATRIX_IPC_COMPARE:-}"
}

rc=0
summaries=()
for suite in "${suites[@]}"; do
  make_root "$suite" || {
    echo "test-matrix: mmdebstrap $suite failed"
    rc=1
    summaries+=("$suite: no root")
    continue
  }
done
[ -z "$roots_only" ] || exit $rc
last=${suites[$((${#suites[@]} - 1))]}
rm -f "$top"/build/shm-bench-*.txt
for suite in "${suites[@]}"; do
  [ -d "$cache/$suite/usr" ] || continue
  work=$(mktemp -d /var/tmp/pf-matrix-"$suite".XXXXXX)
  [ -n "${PINNEDFLOW_MATRIX_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
  gstver=$(chroot "$cache/$suite" dpkg-query -W -f '${Version}' \
    libgstreamer1.0-0 2>/dev/null)
  echo "=== test-matrix: $suite (GStreamer $gstver) ==="
  t0=$(date +%s)
  rounds=0
  [ "$suite" = "$last" ] && rounds=$bench_rounds
  run_root "$suite" "$work" "$rounds" 2>&1 | tee "$work/log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  echo "matrix-time total-$suite $(($(date +%s) - t0))"
  line=$(sed -n 's/^matrix-summary //p' "$work/log" | tail -1)
  summaries+=("$suite (GStreamer $gstver): ${line:-no summary (build failed)}")
  if [ -f "$work/upper/src/ipc-compare.txt" ]; then
    mkdir -p "$top/build"
    cp "$work/upper/src/ipc-compare.txt" "$top/build/ipc-compare-$suite.txt"
    echo "--- ipc-compare in $suite (GStreamer $gstver) ---"
    cat "$work/upper/src/ipc-compare.txt"
  fi
  if [ -f "$work/upper/src/bench.txt" ]; then
    mkdir -p "$top/build"
    cp "$work/upper/src/bench.txt" "$top/build/shm-bench-$suite.txt"
    echo "--- shm-bench in $suite (GStreamer $gstver), --rounds $rounds ---"
    cat "$work/upper/src/bench.txt"
  fi
  [ -n "${PINNEDFLOW_MATRIX_KEEP:-}" ] || rm -rf "$work"
  trap - EXIT
done
# The host's bench (Debian 12, GStreamer 1.22) beside the last root's.
hostbench=${PINNEDFLOW_BUILD_DIR:-$top/build}/bench/shm/shm-bench
if [ -f "$top/build/shm-bench-$last.txt" ] && [ -x "$hostbench" ]; then
  hb=$(dirname "$(dirname "$(dirname "$hostbench")")")
  t0=$(date +%s)
  GST_PLUGIN_PATH_1_0=$hb/gst/shm:$hb/ext/cuda \
    GST_REGISTRY_1_0=$hb/tests/registry.bin \
    "$hostbench" --rounds "$bench_rounds" >"$top/build/shm-bench-host.txt" 2>&1 ||
    { cat "$top/build/shm-bench-host.txt"; rc=1; }
  echo "matrix-time bench-host $(($(date +%s) - t0))"
  /usr/bin/python3 "$top/tools/bench-side-by-side.py" \
    "host $(pkg-config --modversion gstreamer-1.0)=$top/build/shm-bench-host.txt" \
    "$last $(chroot "$cache/$last" dpkg-query -W -f '${Version}' libgstreamer1.0-0 2>/dev/null)=$top/build/shm-bench-$last.txt" || rc=1
fi
echo "=== test-matrix summaries ==="
printf '%s\n' "${summaries[@]}"
exit $rc
