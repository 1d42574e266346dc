#!/usr/bin/env bash
# The GPU kit (issues 22, 30): everything a bare x86-64 CUDA host needs to
# run this project's GPU tests and benches, in one folder, and the run that
# checks the GPU in one go. See docs/cuda.md, "GPU kit".
#
#   tools/gpu-kit.sh pack [--kit DIR]
#       On a Debian 12 build machine, as root: builds the project in its
#       own meson build dir (build-gpukit/meson, release, relocatable:
#       $ORIGIN rpaths) and fills DIR (default build-gpukit/kit,
#       git-ignored, at most 56 MiB) with the build's libraries, plugins,
#       the cuda tests, cuda-bench, bench-dora1872, the cudart/driver
#       emulators, the Python binding, GStreamer 1.22's runtime copied from
#       the host's Debian packages (core, base, app, videotestsrc,
#       videoconvertscale, coreelements, nvcodec + libgstcuda, GLib, orc and
#       what they link, found with ldd; glibc and libstdc++ are the GPU
#       host's), and Debian 13's GStreamer 1.26 (gst126/, from the matrix's
#       trixie root, GPUKIT_GST126_ROOT). Runs in a scrubbed environment
#       (env -i: the caller's LD_LIBRARY_PATH, GST_*, meson devenv never
#       reach it) and runs the kit's emulator check on what it made before
#       it replaces the last kit.
#   tools/gpu-kit.sh run [--emulator] [--out DIR] [--kit DIR]
#   DIR/gpu-kit.sh run [--emulator] [--out DIR]     (the kit's own copy)
#       On the GPU host (NVIDIA driver, a CUDA 13 or 12 runtime, python3
#       with numpy, torch, CuPy; no GStreamer needed): every step with its
#       own bound, all within 270 s, most valuable first, one failing step
#       not stopping the others; everything written under DIR (default
#       ./gpu-kit-results/<mode>-<UTC time>): logs, summary.md (rewritten
#       as each step ends; a step killed shows TIMEOUT). The summary table
#       comes last, then the line
#         gpu-kit: N passed, N failed, N skipped (<device>|emulator|NO CUDA DEVICE: why)
#       A GPU run that finds no device fails. --emulator: the kit's cudart
#       emulator and libcuda.so.1 / libnvcuvid.so.1 stand-ins in place of
#       the driver; steps that need a real GPU (torch, CuPy, NVENC) are
#       skipped with the reason. Exit status 0 when nothing failed.
#   tools/gpu-kit.sh ci
#       What tools/test.sh runs: pack, then the emulator run inside two
#       minbase roots with no GStreamer, Debian 12 and Debian 13 (numpy 2)
#       (mmdebstrap, cached in /var/cache/pinnedflow/gpukit-root-bookworm
#       and -trixie; python3 and python3-numpy only), entered with unshare +
#       chroot, the kit mounted read-only; then a GPU-mode run here, which
#       must fail with its reason (no GPU here).
#   tools/gpu-kit.sh root
#       Only makes (or keeps) ci's roots: tools/test.sh runs it in the
#       background while the host suites run.
#
# pack, ci and root need root (chroot, mmdebstrap, mounts); run does not.
# Environment: GPUKIT_PYTHON (the interpreter of the frames and tensor-*
# steps, default python3), GPUKIT_TENSOR_BACKENDS (GPU run: the tensor-*
# steps' backends, of torch cupy cudart, default "torch cupy"; torch or
# cupy left out is a skip, one asked for and missing fails; the -1.26 row
# runs the first), GPUKIT_EMU_DRIVER=all (emulator run: the driver stand-ins under
# every step, as on a GPU host), GPUKIT_BUDGET_S (the run's budget, 270),
# GPUKIT_STEP_BOUND_S (caps every step's own bound: to rehearse timeouts),
# GPUKIT_CK_FORK (CK_FORK for the check-based tests; unset: they fork),
# GPUKIT_GST126_ROOT (pack's Debian 13 root), PINNEDFLOW_GPUKIT_ROOT and
# PINNEDFLOW_GPUKIT_ROOT_TRIXIE (ci's roots).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -f "$here/KIT-INFO" ]; then
  top=""                         # running from inside a kit
  default_kit=$here
else
  top=$(cd "$here/.." && pwd)
  default_kit=$top/build-gpukit/kit
fi
work=${top:+$top/build-gpukit}
MAX_KIT_MIB=56
RUN_BUDGET_S=${GPUKIT_BUDGET_S:-270}  # the whole run, summary included < 5 min
ROOT_DEFAULT=/var/cache/pinnedflow/gpukit-root-bookworm
# the second rehearsal root: Debian 13, numpy 2.x, Python 3.13
ROOT_TRIXIE_DEFAULT=/var/cache/pinnedflow/gpukit-root-trixie
GST126_ROOT=${GPUKIT_GST126_ROOT:-/var/cache/pinnedflow/roots/trixie}
SCRUBBED_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die () {
  echo "gpu-kit: $*" >&2
  exit 1
}

# ------------------------------------------------------------------ pack

# Host libraries every CUDA host has (and must not be shadowed): glibc.
is_system_lib () {
  case "$1" in
    linux-vdso.so.*|ld-linux-x86-64.so.*|libc.so.6|libm.so.6|libdl.so.2|\
    libpthread.so.0|librt.so.1|libresolv.so.2|libutil.so.1) return 0 ;;
  esac
  return 1
}

# Present on any host with Python and PyTorch, newer there than Debian 12's:
# packed in lib-fallback/, used only where the host lacks them.
is_fallback_lib () {
  case "$1" in
    libstdc++.so.6|libgcc_s.so.1) return 0 ;;
  esac
  return 1
}

pack () {
  local kit=$1 b=$work/meson tmp gst_lib plugdir f rel name path size
  [ -n "$top" ] || die "pack runs from a source tree (tools/gpu-kit.sh)"
  command -v meson >/dev/null || die "meson missing (tools/setup.sh installs it)"
  mkdir -p "$work"
  if [ ! -f "$b/build.ninja" ]; then
    meson setup "$b" "$top" --buildtype=release -Dwerror=false \
      -Dtests=enabled -Dbench=enabled -Dcuda=enabled -Dfuzz=disabled \
      -Dintrospection=disabled || die "meson setup $b failed"
  fi
  # only what the kit carries (and what it links, ninja follows)
  local targets=(gst/shm/libgstpinnedshm.so ext/cuda/libgstpinnedcuda.so
    tests/cuda/test-cuda tests/cuda/test-cuda-interop tests/cuda/test-upload
    tests/cuda/test-emu-driver tests/cuda/libpfemu-cudart.so
    tests/cuda/emu/libcuda.so.1 tests/cuda/emu/libnvcuvid.so.1
    bench/cuda/cuda-bench bench/bridge/bench-dora1872 bridge/pf-camera-node)
  ninja -C "$b" "${targets[@]}" || die "ninja -C $b failed"

  tmp=$kit.tmp
  rm -rf "$tmp"
  mkdir -p "$tmp"/{bin,libexec,lib/gstreamer-1.0,lib-fallback,build,python,gpu-kit}
  # the project: the build tree's layout kept, so the $ORIGIN rpaths hold
  for rel in "${targets[@]}"; do
    mkdir -p "$tmp/build/$(dirname "$rel")"
    cp -L "$b/$rel" "$tmp/build/$rel"
  done
  cc -O2 -Wall -Werror -o "$tmp/bin/gpukit-device" "$here/gpu-kit/device.c" \
    -ldl || die "building gpukit-device failed"

  # GStreamer 1.22 from the host's Debian packages
  gst_lib=$(pkg-config --variable=libdir gstreamer-1.0)
  plugdir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
  cp -L /usr/bin/gst-launch-1.0 /usr/bin/gst-inspect-1.0 "$tmp/bin/"
  cp -L "$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner" \
    "$tmp/libexec/" || die "gst-plugin-scanner not found"
  for f in coreelements app videotestsrc videoconvertscale nvcodec; do
    cp -L "$plugdir/libgst$f.so" "$tmp/lib/gstreamer-1.0/" ||
      die "$plugdir/libgst$f.so missing (apt-get install gstreamer1.0-plugins-base gstreamer1.0-plugins-bad)"
  done
  # everything those link (one ldd per file gives its whole closure); the
  # project's own libraries resolve inside the build dir and are copied
  # there by their soname
  local missing=0
  while read -r name path; do
    [ -n "$name" ] || continue
    name=${name##*/}
    is_system_lib "$name" && continue
    if [ "$path" = "not" ] || [ -z "$path" ]; then
      echo "gpu-kit: pack: $name not found by ldd" >&2
      missing=1
      continue
    fi
    case "$path" in
      "$b"/*)
        rel=${path#"$b"/}
        mkdir -p "$tmp/build/$(dirname "$rel")"
        [ -e "$tmp/build/$rel" ] || cp -L "$path" "$tmp/build/$rel" ;;
      *)
        if is_fallback_lib "$name"; then
          cp -L "$path" "$tmp/lib-fallback/$name"
        else
          [ -e "$tmp/lib/$name" ] || cp -L "$path" "$tmp/lib/$name"
        fi ;;
    esac
  done < <( (cd "$b" && ldd "${targets[@]}";
      find "$tmp/bin" "$tmp/libexec" "$tmp/lib" -type f -exec ldd {} \;) |
    awk '$2 == "=>" { print $1, $3 } $2 ~ /^\(/ { print $1, "" }' | sort -u)
  [ $missing -eq 0 ] || die "pack: unresolved libraries (see above)"
  # gpu-kit/devseg.c and domains.c (with kitcu.h) against the build's
  # libpinnedflow (rpath: the kit's)
  for f in devseg domains; do
    cc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Wshadow \
      -Wformat=2 -Wmissing-prototypes -Werror -I"$b/lib/pinnedflow/include" \
      -o "$tmp/bin/gpukit-$f" "$here/gpu-kit/$f.c" \
      -L"$b/lib/pinnedflow" -lpinnedflow -ldl \
      -Wl,-rpath,'$ORIGIN/../build/lib/pinnedflow' ||
      die "building gpukit-$f failed"
  done
  # symbols only the debugger needs
  find "$tmp/build" "$tmp/bin" -type f -exec strip --strip-unneeded {} \;
  find "$tmp/lib" "$tmp/lib-fallback" "$tmp/libexec" -type f \
    -exec strip --strip-debug {} \;

  cp "$top"/bridge/python/pinnedflow/*.py "$tmp/python/" 2>/dev/null
  mkdir -p "$tmp/python/pinnedflow"
  mv "$tmp"/python/*.py "$tmp/python/pinnedflow/"
  cp "$here/gpu-kit.sh" "$tmp/gpu-kit.sh"
  cp "$here/gpu-kit/frames.py" "$here/gpu-kit/device.c" \
    "$here/gpu-kit/tensor.sh" "$here/gpu-kit/devseg.sh" \
    "$here/gpu-kit/devseg.c" "$here/gpu-kit/domains.c" "$here/gpu-kit/kitcu.h" \
    "$here/gpu-kit/devframes.py" "$here/gpu-kit/ipc.sh" "$tmp/gpu-kit/"
  # issue 33's example and its two helpers (the tensor-* steps)
  mkdir -p "$tmp/examples"
  cp "$top"/bridge/examples/{tensor_app.py,gst_ctypes.py,cudart_tensor.py} \
    "$tmp/examples/" || die "pack: bridge/examples' tensor_app.py and helpers missing"
  {
    echo "gst-pinnedflow GPU kit"
    echo "source: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
    echo "GStreamer: $(pkg-config --modversion gstreamer-1.0)"
    echo "run: ./gpu-kit.sh run [--emulator] [--out DIR]"
    echo "Debian packages the runtime was copied from:"
    # one dpkg -S for every file (the basenames, as owned paths end)
    (cd "$tmp" && find lib lib-fallback libexec bin -type f -printf '*/%f\n') |
      grep -v gpukit-device | xargs dpkg -S 2>/dev/null |
      grep -E ': (/usr)?/(lib/x86_64-linux-gnu|bin)/' | cut -d: -f1 |
      tr ',' '\n' | sed 's/^ *//' | sort -u |
      xargs dpkg-query -W -f='  ${Package} ${Version}\n' 2>/dev/null
  } > "$tmp/KIT-INFO"

  pack_gst126 "$tmp" || die "pack: copying GStreamer 1.26 from $GST126_ROOT failed"

  size=$(du -sb "$tmp" | cut -f1)
  if [ "$size" -gt $((MAX_KIT_MIB * 1024 * 1024)) ]; then
    die "pack: $((size / 1048576)) MiB, over the ${MAX_KIT_MIB} MiB limit"
  fi
  echo "gpu-kit: pack: $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB, $(find "$tmp" -type f | wc -l) files; checking it on the emulators"
  # the kit's own emulator run on what was made, in a scrubbed environment,
  # before it replaces the last kit
  rm -rf "$work/pack-check"
  if ! env -i PATH="$SCRUBBED_PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 \
      bash "$tmp/gpu-kit.sh" run --emulator --kit "$tmp" \
      --out "$work/pack-check" > "$work/pack-check.log" 2>&1; then
    tail -25 "$work/pack-check.log" >&2
    rm -rf "$kit.rejected"
    mv "$tmp" "$kit.rejected"
    die "pack: the kit's emulator run failed (kit left in $kit.rejected, log $work/pack-check.log)"
  fi
  grep '^gpu-kit: [0-9]* passed' "$work/pack-check.log"
  rm -rf "$kit"
  mv "$tmp" "$kit"
  echo "gpu-kit: packed $kit: $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB, $(find "$kit" -type f | wc -l) files"
}

# Debian 13's GStreamer 1.26 (core, base, app, check, libgstcuda, the
# plugins the interop test uses, gst-inspect-1.0, the scanner and what they
# link), copied from a Debian 13 root (the test matrix's) into KIT/gst126
# for the interop step on the 1.24+ API. gst126/GLIBC: the newest glibc
# symbol version those files need (the run skips the step on an older
# glibc, e.g. in the bookworm rehearsal root). No root: no gst126, said.
pack_gst126 () {
  local tmp=$1 r=$GST126_ROOT d=/usr/lib/x86_64-linux-gnu name path f
  local g=$tmp/gst126
  if [ ! -x "$r/usr/bin/gst-inspect-1.0" ] ||
      [ ! -e "$r$d/gstreamer-1.0/libgstnvcodec.so" ]; then
    echo "gpu-kit: pack: no GStreamer with nvcodec in $GST126_ROOT: the kit carries only 1.22 (its cuda-interop-1.26 step will skip)"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "gpu-kit: pack: not root: no GStreamer 1.26 (reading $r's libraries needs chroot ldd); its step will skip"
    return 0
  fi
  mkdir -p "$g"/{bin,libexec,lib/gstreamer-1.0}
  cp -L "$r/usr/bin/gst-inspect-1.0" "$r/usr/bin/gst-launch-1.0" "$g/bin/" ||
    return 1
  cp -L "$r$d/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner" "$g/libexec/" ||
    return 1
  for f in coreelements app videotestsrc videoconvertscale nvcodec; do
    cp -L "$r$d/gstreamer-1.0/libgst$f.so" "$g/lib/gstreamer-1.0/" || return 1
  done
  # the interop test's GStreamer libraries and libgstcuda (dlopened), and
  # everything those link, resolved inside the root
  while read -r name path; do
    [ -n "$name" ] || continue
    name=${name##*/}
    is_system_lib "$name" && continue
    [ -n "$path" ] && [ "$path" != not ] || { echo "gpu-kit: pack: gst126: $name not found" >&2; return 1; }
    [ -e "$g/lib/$name" ] || cp -L "$r$path" "$g/lib/$name" || return 1
  done < <(chroot "$r" /bin/sh -c "cd $d && ldd /usr/bin/gst-inspect-1.0 \
      /usr/bin/gst-launch-1.0 \
      gstreamer1.0/gstreamer-1.0/gst-plugin-scanner gstreamer-1.0/libgstcoreelements.so \
      gstreamer-1.0/libgstapp.so gstreamer-1.0/libgstvideotestsrc.so \
      gstreamer-1.0/libgstvideoconvertscale.so gstreamer-1.0/libgstnvcodec.so \
      libgstcuda-1.0.so.0 libgstcheck-1.0.so.0 libgstallocators-1.0.so.0 \
      libgstapp-1.0.so.0 libgstvideo-1.0.so.0" |
    awk '$2 == "=>" { print $1, $3 } $2 ~ /^\(/ { print $1, "" }' | sort -u)
  for f in libgstcuda-1.0.so.0 libgstcheck-1.0.so.0 libgstallocators-1.0.so.0 \
      libgstapp-1.0.so.0 libgstvideo-1.0.so.0; do
    [ -e "$g/lib/$f" ] || cp -L "$r$d/$f" "$g/lib/$f" || return 1
  done
  find "$g" -type f -exec strip --strip-debug {} \;
  find "$g" -type f -exec objdump -T {} \; 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1 > "$g/GLIBC"
  echo "GStreamer $(chroot "$r" gst-inspect-1.0 --version | sed -n 's/^GStreamer //p'), from $r, needs glibc $(cat "$g/GLIBC")" > "$g/VERSION"
  echo "gpu-kit: pack: gst126: $(cat "$g/VERSION"), $(du -sh "$g" | cut -f1)"
}

# ------------------------------------------------------------------- run

declare -a R_NAME R_STATE R_SECS R_NOTE
deadline=0
out=""
run_done=no

# The summary is written again after every step, so a run killed from
# outside (its lease ended) leaves the rows of every step that ended.
record () {   # record NAME pass|fail|skip|TIMEOUT SECONDS NOTE
  R_NAME+=("$1"); R_STATE+=("$2"); R_SECS+=("$3"); R_NOTE+=("$4")
  printf 'gpu-kit: %-16s %-7s %6s s  %s\n' "$1" "$2" "$3" "$4"
  summary > /dev/null
}

# The reason a log gives for a skip, else its last line ("SKIP (part of
# TEST)": a test that passed with a part skipped, not the step's reason).
log_reason () {
  local r
  r=$(grep -v '^SKIP (part of' "$1" 2>/dev/null |
    grep -m1 -E '^(SKIP|NO DEVICE|NO CUDA DEVICE|BROKEN)|no usable (real )?CUDA (runtime|device)')
  [ -n "$r" ] || r=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -1)
  echo "$r" | tr -d '|' | cut -c1-240
}

# A GPU run that finds no device has failed: the reason is the row's note.
no_device_note () {
  echo "$1" | grep -qiE 'no (usable )?(real )?CUDA (device|runtime)|NO DEVICE|cudaErrorInsufficientDriver|cudaErrorNoDevice|sees no CUDA device'
}

# step NAME TIMEOUT CMD...: runs CMD (log in $out/NAME.log) within its own
# timeout and what is left of the run's budget; 0 passed, 77 skipped; a
# step ended by its timeout is TIMEOUT (a failure).
step () {
  local name=$1 t=$2 left t0 t1 rc secs state note
  shift 2
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 10 ]; then
    record "$name" fail 0 "not run: the run's ${RUN_BUDGET_S} s budget is spent"
    return 1
  fi
  [ "$t" -le "$left" ] || t=$left
  if [ -n "${GPUKIT_STEP_BOUND_S:-}" ] && [ "$t" -gt "$GPUKIT_STEP_BOUND_S" ]; then
    t=$GPUKIT_STEP_BOUND_S
  fi
  t0=$(date +%s.%N)
  # in the background and waited for, so that a run killed from outside
  # (run_killed) still writes this step's row
  if [ "$(type -t "$1")" = function ]; then
    timeout -k 5 "$t" bash -c '"$@"' _ "$@" > "$out/$name.log" 2>&1 &
  else
    timeout -k 5 "$t" "$@" > "$out/$name.log" 2>&1 &
  fi
  cur_pid=$! cur_name=$name cur_t0=$t0
  wait "$cur_pid"
  rc=$?
  cur_pid=""
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  case $rc in
    0) state=pass
       note=${STEP_NOTE:-$(sed -n 's/^NOTE: //p' "$out/$name.log" | head -1 | tr -d '|' | cut -c1-240)} ;;
    77) state=skip; note=$(log_reason "$out/$name.log") ;;
    124|137) state=TIMEOUT; note="killed at its ${t} s bound: $(log_reason "$out/$name.log")" ;;
    *) state=fail; note="exit $rc: $(log_reason "$out/$name.log")" ;;
  esac
  if [ "$mode" = gpu ] && [ "$state" = skip ] && no_device_note "$note"; then
    state=fail
  fi
  STEP_SECS=$secs
  [ -n "${STEP_QUIET:-}" ] || record "$name" "$state" "$secs" "$note"
  return $rc
}

# Emulator runs: each step in the environment its meson test uses. "cudart"
# = the cudart emulator alone (cuda-emulated, upload-*, the benches' meson
# env): libgstcuda finds no libcuda.so.1 and binds no GstCudaContext;
# "driver" = the libcuda.so.1 / libnvcuvid.so.1 stand-ins first on the
# library path too (cuda-interop, cuda-emu-*), as a GPU host has the driver.
# Each has its registry (one scanned without the stand-ins caches nvcodec
# with no elements). GPUKIT_EMU_DRIVER=all runs every step with the
# stand-ins, the configuration of a GPU host. "gst126" = Debian 13's
# GStreamer 1.26 (core, base, libgstcuda, nvcodec) in place of the kit's
# 1.22, for the interop step of the second API generation.
env_for () {
  local g=$gst_ld plugins=$kit/lib/gstreamer-1.0 scanner=$kit/libexec
  local reg=$mode
  if [ "${2:-}" = gst126 ]; then
    g="$B/lib/pinnedflow:$kit/gst126/lib:$kit/lib${orig_ld:+:$orig_ld}"
    plugins=$kit/gst126/lib/gstreamer-1.0
    scanner=$kit/gst126/libexec
    reg=$mode-gst126
  fi
  export GST_PLUGIN_SYSTEM_PATH_1_0=$plugins
  export GST_PLUGIN_SCANNER_1_0=$scanner/gst-plugin-scanner
  if [ "$mode" != emulator ]; then
    export LD_LIBRARY_PATH=$g
    export GST_REGISTRY_1_0="$out/registry-$reg.bin"
  elif [ "$1" = driver ] || [ "${GPUKIT_EMU_DRIVER:-}" = all ]; then
    export LD_LIBRARY_PATH="$B/tests/cuda/emu:$g"
    export GST_REGISTRY_1_0="$out/registry-$reg-driver.bin"
  else
    export LD_LIBRARY_PATH="$g"
    export GST_REGISTRY_1_0="$out/registry-$reg-cudart.bin"
  fi
}

# Commands run by step (functions: step runs "$@" in this shell's env).
run_device () {
  local rc
  echo "kernel: $(uname -r)"
  echo "proc_version: $(cat /proc/version 2>/dev/null)"
  echo "ck_fork: ${CK_FORK:-yes, the default}"
  "$kit/bin/gpukit-device" "$B/lib/pinnedflow/libpinnedflow.so.0" \
    > "$out/device.txt" 2>&1
  rc=$?
  cat "$out/device.txt"
  [ $rc -eq 0 ] && echo "NOTE: $(sed -n 's/^name: //p' "$out/device.txt"), $(sed -n 's/^driver_version: //p' "$out/device.txt"), runtime $(sed -n 's/^runtime: //p' "$out/device.txt"), compute mode $(sed -n 's/^compute_mode: //p' "$out/device.txt"), attr 113 $(sed -n 's/^host_register_read_only: //p' "$out/device.txt" | cut -d' ' -f1), copies $(sed -n 's/^copies: //p' "$out/device.txt" | cut -d' ' -f1)"
  rm -f "$out/device.txt"
  if [ "$mode" = gpu ]; then
    if command -v nvidia-smi > /dev/null; then
      echo "nvidia-smi: $(nvidia-smi --query-gpu=name,uuid,driver_version,compute_mode,memory.total --format=csv,noheader 2>&1 | head -1)"
    else
      echo "nvidia-smi: not installed"
    fi
  fi
  return $rc
}

# test-upload's cases (the meson suite's upload-*), each a process; the
# note counts those that printed "CASE: ok".
run_upload_emulated () {
  local c n=0 ok=0 failed=""
  for c in bytes late pool inflight staged shared sticky node errors reuse \
      readers defaults reuse-hostfunc readers-hostfunc defaults-hostfunc; do
    echo "== upload $c"
    n=$((n + 1))
    if "$B/tests/cuda/test-upload" "$c" && grep -qx "$c: ok" "$out/upload.log"
    then
      ok=$((ok + 1))
    else
      echo "upload $c FAILED"
      failed="$failed $c"
    fi
  done
  if [ -n "$failed" ]; then
    echo "upload: $ok of $n cases ok; failed:$failed"
    return 1
  fi
  echo "NOTE: $ok of $n cases ok (the *-hostfunc ones with the reader a GPU runs)"
}

# test-upload's real case: every case it selects on the device, each
# printing "real: CASE ok" (counted: the note names them, and the summary).
run_upload_real () {
  local rc cases n
  "$B/tests/cuda/test-upload" real
  rc=$?
  cases=$(sed -n 's/^real: \([^ ]*\) ok.*/\1/p' "$out/upload.log" | tr '\n' ' ')
  n=$(echo "$cases" | wc -w)
  if [ $rc -ne 0 ]; then
    echo "upload real: exit $rc after $n case(s) ok on the device: ${cases:-none}"
    return $rc
  fi
  # without a device the case checks the error and exits 0: not a GPU pass
  if grep -q "no usable real CUDA runtime/device" "$out/upload.log"; then
    echo "SKIP: no usable CUDA device: the real upload cases did not run"
    return 77
  fi
  [ "$n" -gt 0 ] || { echo "upload real: no 'real: CASE ok' line"; return 1; }
  echo "NOTE: $n cases ok on the device: ${cases% }"
}

# test-cuda; the note says which path test_readonly_segment_registered's
# copies took (attribute 113: DMA from the read-only segment, or staged)
# and how many parts of passing tests were skipped, and why (the summary
# lists those lines).
run_cuda () {
  local rc paths skips
  "$B/tests/cuda/test-cuda"
  rc=$?
  [ $rc -eq 0 ] || return $rc
  paths=$(sed -n 's/^test_readonly_segment_registered: attribute 113 ([^)]*) = \([0-9-]*\): \([0-9]*\) of \([0-9]*\) copies DMA .*, \([0-9]*\) staged$/attribute 113 = \1: \2 of \3 copies DMA, \4 staged/p' \
    "$out/cuda.log" | paste -sd ';' | sed 's/;/; /g')
  skips=$(grep -c '^SKIP (part of' "$out/cuda.log")
  echo "NOTE: read-only segment: ${paths:-no attribute 113 line}; $skips part(s) of passing tests skipped (reasons in the summary)"
}

run_gst_runtime () {
  local e rc=0
  gst-inspect-1.0 --version || return 1
  for e in fakesink queue appsrc appsink videotestsrc videoconvert \
      pinnedshmsink pinnedshmsrc pinnedcudaupload pinnedcudadownload; do
    if gst-inspect-1.0 "$e" > /dev/null 2>&1; then
      echo "$e: ok"
    else
      echo "$e: NOT FOUND"; rc=1
    fi
  done
  return $rc
}

run_nvcodec () {
  local e rc=0
  "$kit/bin/gst-inspect-1.0" nvcodec || true
  for e in cudaupload cudadownload; do
    "$kit/bin/gst-inspect-1.0" "$e" > /dev/null 2>&1 ||
      { echo "$e: NOT FOUND"; rc=1; }
  done
  if [ $rc -ne 0 ] && [ "$have_device" != yes ]; then
    echo "SKIP: no CUDA device: nvcodec registers no elements"
    return 77
  fi
  return $rc
}

# The interop test on Debian 13's GStreamer 1.26 (the 1.24+ API: the
# download that waits on the device, no host spin), where the host's glibc
# runs it.
# Whether the kit's Debian 13 GStreamer (gst126/) can run here: 0, or 77
# with the reason on stdout (not packed; the host's glibc older than the
# one it was built against). Used by run_interop_126 and run_tensor
# (gpu-kit/tensor.sh).
gst126_usable () {
  local need have
  if [ ! -d "$kit/gst126/lib" ]; then
    echo "SKIP: this kit carries no GStreamer 1.26 (packed without the Debian 13 root)"
    return 77
  fi
  need=$(cat "$kit/gst126/GLIBC" 2>/dev/null || echo 0)
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "SKIP: Debian 13's GStreamer needs glibc $need, this host has $have"
    return 77
  fi
}

run_interop_126 () {
  gst126_usable || return $?
  "$kit/gst126/bin/gst-inspect-1.0" --version | head -2
  "$B/tests/cuda/test-cuda-interop"
}

run_nvh264enc () {
  gst-inspect-1.0 --version || return 1
  if ! gst-inspect-1.0 nvh264enc > /dev/null 2>&1; then
    if [ "$mode" = emulator ]; then
      echo "SKIP: nvh264enc not registered: the emulators have no NVENC"
    else
      echo "SKIP: nvh264enc not registered: NVENC did not load" \
        "(libnvidia-encode.so.1 missing, or a GPU without NVENC such as H100/H200)"
    fi
    return 77
  fi
  gst-launch-1.0 -e videotestsrc num-buffers=90 ! \
    video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1 ! \
    pinnedcudaupload ! nvh264enc ! fakesink
}

run_frames () {
  local py=${GPUKIT_PYTHON:-python3}
  if ! command -v "$py" > /dev/null; then
    for n in py-upload torch-dlpack cupy cudart; do
      echo "RESULT $n skip no $py on this host"
    done
    return 0
  fi
  # the interpreter's own numpy/torch/cupy: the host's library path, not
  # the kit's (its GLib/zlib must not shadow what torch loads)
  if [ -n "$orig_ld" ]; then
    export LD_LIBRARY_PATH=$orig_ld
  else
    unset LD_LIBRARY_PATH
  fi
  env PYTHONPATH="$kit/python" PYTHONDONTWRITEBYTECODE=1 GPUKIT_MODE="$mode" \
    PINNEDFLOW_LIBRARY="$B/lib/pinnedflow/libpinnedflow.so.0" \
    "$py" "$kit/gpu-kit/frames.py"
}

# A bench's rows reach its log as they are printed, so a bench ended by its
# timeout leaves what it measured.
line_buffered () {
  if command -v stdbuf > /dev/null; then
    stdbuf -oL "$@"
  else
    "$@"
  fi
}

run_dora () {
  local frames=90
  [ "$mode" = emulator ] && frames=30
  line_buffered "$B/bench/bridge/bench-dora1872" "$frames" || return $?
  if grep -q "^NO CUDA DEVICE" "$out/dora1872.log"; then
    echo "SKIP: no CUDA device: host side only, no device figures"
    return 77
  fi
}

run_cuda_bench () {
  line_buffered "$B/bench/cuda/cuda-bench" || return $?
  if grep -q "no usable CUDA device" "$out/cuda-bench.log"; then
    echo "SKIP: no usable CUDA device: nothing measured"
    return 77
  fi
}

# summary.md from what has ended so far (each step calls it); the last
# call, after every step, also prints it.
summary () {
  local i n_pass=0 n_fail=0 n_skip=0 label
  for i in "${!R_STATE[@]}"; do
    case ${R_STATE[$i]} in
      pass) n_pass=$((n_pass + 1)) ;;
      skip) n_skip=$((n_skip + 1)) ;;
      *) n_fail=$((n_fail + 1)) ;;
    esac
  done
  if [ "$mode" = emulator ]; then
    label=emulator
  else
    label=$(sed -n 's/^name: //p' "$out/device.log" 2>/dev/null | head -1)
    [ -n "$label" ] || label="NO CUDA DEVICE: $(sed -n 's/^NO DEVICE: //p' "$out/device.log" 2>/dev/null | head -1 | cut -c1-200)"
  fi
  {
    echo
    echo "## GPU kit run: $label, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    [ "$run_done" = yes ] ||
      echo "**Run not finished: the rows below are the steps that ended.**"
    echo
    echo "Device and environment (device.log):"
    echo
    grep -E '^(kernel|proc_version|ck_fork|lookup|runtime|runtime_version|driver_version|devices|name|uuid|memory_mib|compute_capability|compute_mode|host_register_supported|host_register_read_only|copies|loaded_cudart|loaded_cuda|emulator|NO DEVICE|BROKEN|nvidia-smi):' \
      "$out/device.log" 2>/dev/null | sed 's/^/    /'
    grep -E "^pinnedflow's runtime|^uploader:" "$out/frames.log" 2>/dev/null |
      sed 's/^/    frames: /'
    echo
    echo "H2D copies (cuda-bench: GB/s, median latency ms, vs raw pinned, the path the copies took; per frame size)${tag}:"
    echo
    awk 'BEGIN { print "| frame size | path | GB/s | latency ms | vs raw pinned | copies |"
           print "|---|---|---|---|---|---|" }
         /^(1080p|4K) RGBA/ { size = $1 " " $2; sub(/,$/, "", size) }
         /^  [a-z]/ && !/^  path/ && !/ \/ / {
           name = substr($0, 3, 27); sub(/ +$/, "", name)
           rest = substr($0, 30); split(rest, f, " "); copies = ""
           if (f[1] == "-") { f[3] = substr(rest, index(rest, "(")) }
           else if (match(rest, /^ *[^ ]+ +[^ ]+ +[^ ]+ +/)) {
             copies = substr(rest, RLENGTH + 1) }
           gsub(/\|/, "/", copies)
           print "| " size " | " name " | " f[1] " | " f[2] " | " f[3] " | " copies " |" }' \
      "$out/cuda-bench.log" 2>/dev/null
    echo
    echo "Copy paths: DMA from registered pages or staged (device probe, test-cuda's read-only segment, parts of passing tests skipped, the upload cases run):"
    echo
    {
      sed -n 's/^copies: /device: /p' "$out/device.log"
      sed -n 's/^test_readonly_segment_registered: /test-cuda: /p' "$out/cuda.log"
      grep '^SKIP (part of' "$out/cuda.log" "$out/cuda-interop.log" \
        "$out/cuda-interop-1.26.log" | sed 's/^[^:]*\/\([^/:]*\)\.log:/\1: /'
      # the step's count; where it failed or was killed, the cases that
      # passed on the device before
      grep -q '^NOTE: .* cases ok' "$out/upload.log" &&
        sed -n 's/^NOTE: \(.* cases ok.*\)/upload: \1/p' "$out/upload.log" ||
        sed -n 's/^\(real: [^ ]* ok.*\)/upload: \1/p' "$out/upload.log"
    } 2>/dev/null | sed 's/^/    /'
    echo
    devseg_summary
    echo "dora #1872, 1080p30 RGBA camera process -> device frame (bench-dora1872)${tag}:"
    echo
    grep -E '^(baseline|\| mode|\|---|\| \([abc]\)|latency p50|\(c\) engine)' \
      "$out/dora1872.log" 2>/dev/null
    echo
    echo "| step | result | seconds | note |"
    echo "|---|---|---|---|"
    for i in "${!R_NAME[@]}"; do
      echo "| ${R_NAME[$i]} | ${R_STATE[$i]} | ${R_SECS[$i]} | ${R_NOTE[$i]//|//} |"
    done
    echo
    echo "gpu-kit: $n_pass passed, $n_fail failed, $n_skip skipped ($label)"
  } > "$out/summary.md.tmp" && mv "$out/summary.md.tmp" "$out/summary.md"
  [ "$n_fail" -eq 0 ]
}

# The run itself killed (SIGTERM, SIGINT, SIGHUP: a lease ending): the step
# under way ends as TIMEOUT, the summary is written, exit 124.
run_killed () {
  local secs
  trap - TERM INT HUP
  if [ -n "${cur_pid:-}" ]; then
    kill -TERM "$cur_pid" 2> /dev/null
    secs=$(awk -v a="$cur_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    record "$cur_name" TIMEOUT "$secs" "the run was killed during this step: $(log_reason "$out/$cur_name.log")"
  fi
  rm -rf "$run_tmp"
  echo "gpu-kit: the run was killed; summary in $out/summary.md" >&2
  exit 124
}

run () {
  local t_start rc
  kit=$default_kit
  mode=gpu
  have_device=no
  while [ $# -gt 0 ]; do
    case $1 in
      --emulator) mode=emulator ;;
      --out) [ $# -ge 2 ] || die "run: --out needs a folder"; out=$2; shift ;;
      --kit) [ $# -ge 2 ] || die "run: --kit needs a folder"; kit=$2; shift ;;
      *) die "run: unknown argument $1" ;;
    esac
    shift
  done
  [ -f "$kit/KIT-INFO" ] || die "no kit in $kit (tools/gpu-kit.sh pack first)"
  kit=$(cd "$kit" && pwd)
  [ -n "$out" ] || out=$PWD/gpu-kit-results/$mode-$(date -u +%Y%m%dT%H%M%SZ)
  mkdir -p "$out" || die "cannot create $out"
  out=$(cd "$out" && pwd)
  rm -rf "$out"/*.log "$out"/summary.md "$out"/registry*.bin "$out/tmp"
  # everything a step writes stays under $out: temporary files, caches;
  # where $out is too long for the tests' socket paths (108 bytes), the
  # temporary files go to a folder of /tmp instead, removed at the end
  run_tmp=$out/tmp
  if [ ${#run_tmp} -gt 60 ]; then
    run_tmp=$(mktemp -d /tmp/gpukit.XXXXXX) || die "mktemp failed"
  fi
  mkdir -p "$run_tmp"
  export TMPDIR="$run_tmp" XDG_CACHE_HOME="$out/cache" \
    CUPY_CACHE_DIR="$out/cache/cupy" PYTHONDONTWRITEBYTECODE=1
  t_start=$(date +%s)
  deadline=$((t_start + RUN_BUDGET_S))
  B=$kit/build
  orig_ld=${LD_LIBRARY_PATH:-}
  export kit B mode out have_device orig_ld
  export -f line_buffered run_device run_upload_emulated run_upload_real \
    run_cuda run_gst_runtime run_nvcodec run_interop_126 run_nvh264enc run_frames \
    run_dora run_cuda_bench run_tensor gst126_usable run_devseg devseg_note \
    run_devframes devseg_summary run_ipc_compare ipc_cpu_ms run_domains \
    domains_note

  # GStreamer and the project from the kit only; registry in the results
  local ld="$B/lib/pinnedflow:$kit/lib"
  if ! { ldconfig -p 2>/dev/null | grep -q 'libstdc++.so.6 '; } &&
      ! [ -e /usr/lib/x86_64-linux-gnu/libstdc++.so.6 ]; then
    ld="$ld:$kit/lib-fallback"
  fi
  export GST_PLUGIN_PATH_1_0="$B/gst/shm:$B/ext/cuda"
  export GST_REGISTRY_UPDATE=yes
  export CK_DEFAULT_TIMEOUT=60
  # a hung check ends in 60 s (not 120) and its suite goes on
  export CK_TIMEOUT_MULTIPLIER=0.5
  # check forks a child per test (each test initialises CUDA itself, which
  # the emulators' fork rule checks); GPUKIT_CK_FORK=no runs them in one
  # process instead
  if [ -n "${GPUKIT_CK_FORK:-}" ]; then
    export CK_FORK=$GPUKIT_CK_FORK
  else
    unset CK_FORK
  fi
  export PATH="$kit/bin:$PATH"
  unset GST_PLUGIN_PATH GST_PLUGIN_SYSTEM_PATH GST_PLUGIN_SCANNER GST_REGISTRY
  gst_ld="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export gst_ld run_tmp
  if [ "$mode" = emulator ]; then
    export GST_PINNEDFLOW_CUDART="$B/tests/cuda/libpfemu-cudart.so"
    export PINNEDFLOW_CUDA_MODE=emulated
    export PFEMU_COPY_DELAY_US=2000
    export PFEMU_LEAK_REPORT="$out/pfemu-leaks.txt"
    export PFBENCH_ALLOW_EMULATOR=1
    export PFBENCH_FRAMES=20
    tag=" [EMULATOR: CPU timings, not GPU performance]"
  else
    # GST_PINNEDFLOW_CUDART, when the caller set it, is honoured (the
    # library's lookup, which the device step prints)
    unset PFBENCH_ALLOW_EMULATOR PFBENCH_FRAMES
    export PINNEDFLOW_CUDA_MODE=real
    tag=""
    # the runtime a Python CUDA package installed (PyTorch's): the
    # interpreter's site folders, last in the library's lookup
    if [ -z "${GST_PINNEDFLOW_CUDART_PATH:-}" ] &&
        command -v "${GPUKIT_PYTHON:-python3}" > /dev/null; then
      GST_PINNEDFLOW_CUDART_PATH=$(env -u LD_LIBRARY_PATH \
        "${GPUKIT_PYTHON:-python3}" -c 'import os, sys
print(":".join(p for p in sys.path if p and os.path.isdir(p)))' 2>/dev/null)
      export GST_PINNEDFLOW_CUDART_PATH
    fi
  fi
  echo "gpu-kit: $mode run, kit $kit, results in $out, budget ${RUN_BUDGET_S} s"
  cur_pid=""
  trap run_killed TERM INT HUP

  # Steps most valuable first (a lease may end the run early): the device,
  # H2D per frame size, camera -> device frame (#1872), device frames into
  # torch/CuPy, device segments between processes, the tensor example,
  # the GPU tests, the 1.26 interop, NVENC, the kit's GStreamer.
  env_for driver
  step device 30 run_device
  rc=$?
  [ $rc -eq 0 ] && have_device=yes
  export have_device
  env_for cudart
  STEP_NOTE="GB/s per frame size: table above" step cuda-bench 90 run_cuda_bench
  STEP_NOTE="latency p50/p99, CPU per frame: table above" step dora1872 60 run_dora
  # device frames into torch / CuPy (one process, four results)
  local line n s why
  STEP_SECS=0
  STEP_QUIET=1 step frames 90 run_frames
  rc=$?
  for n in py-upload torch-dlpack cupy cudart; do
    line=$(grep -m1 "^RESULT $n " "$out/frames.log")
    if [ -z "$line" ]; then
      if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        record "$n" TIMEOUT "$STEP_SECS" "frames killed at its bound: $(log_reason "$out/frames.log")"
      else
        record "$n" fail "$STEP_SECS" "no result: $(log_reason "$out/frames.log")"
      fi
      continue
    fi
    s=$(echo "$line" | cut -d' ' -f3)
    why=$(echo "$line" | cut -d' ' -f4- | tr -d '|' | cut -c1-240)
    record "$n" "$s" "$STEP_SECS" "$why"
  done
  # issue 32's device segments between processes, C then Python with
  # torch, then one copy per domain (a few seconds; no GPU has run them yet)
  env_for driver
  step device-segments 30 run_devseg
  step device-frames-torch 60 run_devframes
  step domains 30 run_domains
  # issue 33's example, camera process -> appsink -> tensor -> appsrc
  # (one row per backend and GStreamer)
  if [ "$mode" = emulator ]; then
    step tensor-cudart 45 run_tensor cudart
    env_for driver gst126
    step tensor-cudart-1.26 45 run_tensor cudart gst126
  else
    # torch and CuPy unless the caller says the host lacks one (a skip,
    # said); cudart (no framework) only when asked for
    local want=" ${GPUKIT_TENSOR_BACKENDS:-torch cupy} " first=""
    for n in torch cupy cudart; do
      case $want in
        *" $n "*) step "tensor-$n" 90 run_tensor "$n"
          [ -n "$first" ] || first=$n ;;
        *) [ $n = cudart ] ||
          record "tensor-$n" skip 0 "not asked for: GPUKIT_TENSOR_BACKENDS=${GPUKIT_TENSOR_BACKENDS}" ;;
      esac
    done
    # the 1.24+ wrapped path (no copy) with the first of them
    env_for driver gst126
    [ -z "$first" ] || step "tensor-$first-1.26" 90 run_tensor "$first" gst126
  fi
  env_for cudart
  if [ "$mode" = emulator ]; then
    step upload 60 run_upload_emulated
  else
    step upload 60 run_upload_real
  fi
  step cuda 90 run_cuda
  env_for driver
  step cuda-interop 60 "$B/tests/cuda/test-cuda-interop"
  env_for driver gst126
  step cuda-interop-1.26 60 run_interop_126
  step ipc-compare-1.26 60 run_ipc_compare
  env_for driver
  if [ "$mode" = emulator ]; then
    step emu-driver 45 "$B/tests/cuda/test-emu-driver"
    step emu-nvcodec 45 "$B/tests/cuda/test-emu-driver" nvcodec
  fi
  step nvh264enc 45 run_nvh264enc
  env_for cudart
  step gst-runtime 45 run_gst_runtime
  env_for driver
  step nvcodec 30 run_nvcodec

  echo "gpu-kit: run took $(( $(date +%s) - t_start )) s"
  run_done=yes
  rm -rf "$run_tmp" "$out/cache"
  summary
  rc=$?
  cat "$out/summary.md"
  return $rc
}

# run_tensor (the tensor-* steps): gpu-kit/tensor.sh, here and in the kit
. "$here/gpu-kit/tensor.sh" || die "$here/gpu-kit/tensor.sh missing"
# run_devseg, run_devframes: gpu-kit/devseg.sh, here and in the kit
. "$here/gpu-kit/devseg.sh" || die "$here/gpu-kit/devseg.sh missing"
# run_ipc_compare: gpu-kit/ipc.sh, here and in the kit
. "$here/gpu-kit/ipc.sh" || die "$here/gpu-kit/ipc.sh missing"

# -------------------------------------------------------------------- ci
# make_root, make_roots, ci: tools/gpu-kit/ci.sh (a source tree only)

cmd=${1:-}
[ $# -gt 0 ] && shift

# pack and ci make the same kit whatever the caller's shell (inside `meson
# devenv`, LD_LIBRARY_PATH or GST_* pointing at another build): they run
# again in an environment of only these variables.
if [ -n "$top" ] && { [ "$cmd" = pack ] || [ "$cmd" = ci ]; } &&
    [ -z "${GPUKIT_SCRUBBED:-}" ]; then
  keep=()
  for v in HOME TERM CCACHE_DIR CCACHE_BASEDIR GPUKIT_GST126_ROOT \
      PINNEDFLOW_GPUKIT_ROOT PINNEDFLOW_GPUKIT_ROOT_TRIXIE; do
    [ -n "${!v:-}" ] && keep+=("$v=${!v}")
  done
  exec env -i GPUKIT_SCRUBBED=1 PATH="$SCRUBBED_PATH" LANG=C.UTF-8 \
    "${keep[@]}" bash "$here/gpu-kit.sh" "$cmd" "$@"
fi
case $cmd in
  pack)
    kit=$default_kit
    [ "${1:-}" = --kit ] && kit=$2
    pack "$kit" ;;
  run) run "$@" ;;
  ci)
    . "$here/gpu-kit/ci.sh"
    ci ;;
  root)
    [ "$(id -u)" -eq 0 ] || die "root needs root (mmdebstrap)"
    . "$here/gpu-kit/ci.sh"
    make_roots ;;
  *) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
