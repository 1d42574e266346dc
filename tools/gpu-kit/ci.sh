# The GPU kit's CI (sourced by tools/gpu-kit.sh for `ci` and `root`; see
# docs/cuda.md "In CI"): the rehearsal roots, the emulator run in each, and
# the GPU-mode checks a machine without a GPU can make. Needs root.
# SPDX-License-Identifier: LGPL-2.1-or-later

# The Debian 12 minbase root the emulator run goes in (python3 and numpy,
# no GStreamer), made once and kept while its stamp matches.
# make_root ROOT SUITE: a Debian minbase root of SUITE (bookworm: Python
# 3.11, numpy 1.24; trixie: Python 3.13, numpy 2.x) with python3 and
# python3-numpy only, made once and kept while its stamp matches.
make_root () {
  local root=$1 suite=$2 mirror stamp
  stamp="$suite minbase python3 python3-numpy v1"
  if [ "$(cat "$root/.gpukit-root" 2>/dev/null)" != "$stamp" ]; then
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources \
      2>/dev/null | head -1)
    mirror=${mirror:-http://deb.debian.org/debian}
    echo "gpu-kit: making the root $root ($suite, mmdebstrap, $mirror)"
    rm -rf "$root.tmp"
    mkdir -p "$(dirname "$root")"
    mmdebstrap --variant=minbase --include=python3,python3-numpy "$suite" \
      "$root.tmp" "$mirror" > "$root.log" 2>&1 ||
      { tail -20 "$root.log"; echo "gpu-kit: mmdebstrap failed"; return 1; }
    echo "$stamp" > "$root.tmp/.gpukit-root"
    rm -rf "$root"
    mv "$root.tmp" "$root"
  fi
}

make_roots () {
  local rc=0
  make_root "${PINNEDFLOW_GPUKIT_ROOT:-$ROOT_DEFAULT}" bookworm || rc=1
  make_root "${PINNEDFLOW_GPUKIT_ROOT_TRIXIE:-$ROOT_TRIXIE_DEFAULT}" trixie ||
    rc=1
  return $rc
}

# run_in_root ROOT RESULTS: the kit's emulator run inside ROOT (no
# GStreamer there, checked), the kit mounted read-only, its results in
# RESULTS.
run_in_root () {
  local root=$1 cres=$2 kit=$default_kit t0 rc s
  if ls "$root"/usr/lib/x86_64-linux-gnu/libgst* "$root"/usr/bin/gst-* \
      > /dev/null 2>&1; then
    echo "gpu-kit: the root $root has GStreamer installed: it proves nothing"
    return 1
  fi
  rm -rf "$cres"
  mkdir -p "$cres" "$root/opt/gpu-kit" "$root/opt/gpu-kit-results"
  t0=$(date +%s)
  # a mount namespace of its own: every mount goes away with it
  unshare --mount --propagation private --fork /bin/sh -ec '
    root=$1 kit=$2 cres=$3
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    mount --bind "$kit" "$root/opt/gpu-kit"
    mount -o remount,bind,ro "$root/opt/gpu-kit"
    mount --bind "$cres" "$root/opt/gpu-kit-results"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TMPDIR=/tmp \
      /bin/bash /opt/gpu-kit/gpu-kit.sh run --emulator \
      --out /opt/gpu-kit-results' _ "$root" "$kit" "$cres" \
    > "$cres.log" 2>&1
  rc=$?
  grep '^gpu-kit: [0-9]* passed' "$cres.log"
  [ $rc -eq 0 ] || tail -30 "$cres.log"
  # issue 32's device-segment steps must have run there, not been skipped
  for s in device-segments device-frames-torch domains; do
    grep -q "^| $s | pass |" "$cres/summary.md" ||
      { echo "gpu-kit: FAILED: $s did not pass in $root: $(grep "^| $s |" "$cres/summary.md")"; rc=1; }
  done
  echo "gpu-kit: emulator run in $root ($(. "$root/etc/os-release"; echo "$VERSION_CODENAME"), python $(chroot "$root" python3 -c 'import sys, numpy; print(sys.version.split()[0] + ", numpy " + numpy.__version__)'), no GStreamer) took $(( $(date +%s) - t0 )) s, exit $rc"
  return $rc
}

ci () {
  local kit=$default_kit t0 rc=0 r
  [ -n "$top" ] || die "ci runs from a source tree"
  [ "$(id -u)" -eq 0 ] || die "ci needs root (mmdebstrap, mounts, chroot)"
  if ! command -v mmdebstrap > /dev/null; then
    echo "gpu-kit: installing mmdebstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends mmdebstrap ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install \
      -y -q --no-install-recommends mmdebstrap; } || die "no mmdebstrap"
  fi
  t0=$(date +%s)
  pack "$kit" || return 1
  echo "gpu-kit: pack took $(( $(date +%s) - t0 )) s"

  make_roots || return 1
  run_in_root "${PINNEDFLOW_GPUKIT_ROOT:-$ROOT_DEFAULT}" \
    "$work/ci-results-bookworm" || rc=1
  run_in_root "${PINNEDFLOW_GPUKIT_ROOT_TRIXIE:-$ROOT_TRIXIE_DEFAULT}" \
    "$work/ci-results-trixie" || rc=1
  ci_gpu_mode || rc=1
  ci_python_runtime || rc=1
  return $rc
}

# A GPU run on this machine (no GPU) must fail and say why.
ci_gpu_mode () {
  local t0 r=$work/ci-results-gpu-mode s
  t0=$(date +%s)
  rm -rf "$r"
  if env -i PATH="$SCRUBBED_PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 \
      bash "$default_kit/gpu-kit.sh" run --out "$r" > "$r.log" 2>&1; then
    echo "gpu-kit: FAILED: a GPU run without a GPU exited 0"
    return 1
  fi
  if ! grep -qE '^gpu-kit: [0-9]+ passed, [1-9][0-9]* failed, .*NO CUDA DEVICE: ' \
      "$r/summary.md"; then
    echo "gpu-kit: FAILED: a GPU run without a GPU does not end with a failure and its reason:"
    tail -3 "$r.log"
    return 1
  fi
  # the device-segment steps too, with the reason
  for s in device-segments device-frames-torch domains; do
    if ! grep -q "^| $s | fail | .*NO CUDA DEVICE" "$r/summary.md"; then
      echo "gpu-kit: FAILED: a GPU run without a GPU: $s is not a failure with the NO CUDA DEVICE reason: $(grep "^| $s |" "$r/summary.md")"
      return 1
    fi
  done
  echo "gpu-kit: GPU-mode run without a GPU fails as it must ($(( $(date +%s) - t0 )) s): $(tail -1 "$r/summary.md")"
}

# The lookup's last step, as on a host whose only runtime is PyTorch's: CUDA's
# folders hidden (a mount namespace), a copy of this machine's libcudart in
# a site folder's nvidia/cu13/lib, that folder on python3's sys.path
# (PYTHONPATH): the GPU run's device step must open that copy (and fail
# with error 35: no driver). Needs a real libcudart here.
ci_python_runtime () {
  local r=$work/ci-results-python-runtime site=$work/ci-site real
  real=$(ls /usr/local/cuda/lib64/libcudart.so.1[0-9] 2>/dev/null | head -1)
  if [ -z "$real" ]; then
    echo "gpu-kit: lookup through a Python package's runtime not checked: no libcudart in /usr/local/cuda/lib64 to copy"
    return 0
  fi
  rm -rf "$r" "$site"
  mkdir -p "$site/nvidia/cu13/lib"
  cp -L "$real" "$site/nvidia/cu13/lib/"
  unshare --mount --propagation private --fork /bin/sh -c '
    for d in /usr/local/cuda /usr/local/cuda-*; do
      [ -d "$d" ] && mount -t tmpfs tmpfs "$d"
    done
    exec env -i PATH="$1" HOME="$2" LANG=C.UTF-8 PYTHONPATH="$3" \
      bash "$4/gpu-kit.sh" run --out "$5"' _ "$SCRUBBED_PATH" \
    "${HOME:-/root}" "$site" "$default_kit" "$r" > "$r.log" 2>&1
  if grep -qx "runtime: $site/nvidia/cu13/lib/${real##*/}" "$r/device.log" &&
      grep -q "^loaded_cudart: $site/nvidia/cu13/lib/" "$r/device.log" &&
      grep -q '^NO DEVICE: .*(35)' "$r/device.log"; then
    echo "gpu-kit: lookup: with CUDA's folders hidden the runtime is found on python3's sys.path: $(grep '^runtime: ' "$r/device.log")"
  else
    echo "gpu-kit: FAILED: lookup through python3's sys.path:"
    grep -E '^(lookup|runtime|loaded_cudart|NO DEVICE):' "$r/device.log"
    return 1
  fi
}

