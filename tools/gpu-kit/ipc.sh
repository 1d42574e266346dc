# The GPU kit's ipc-compare-1.26 step (sourced by tools/gpu-kit.sh, and by
# the kit's copy from its gpu-kit/ folder; see docs/cuda.md, "GPU kit"):
# issue 32's device hop beside GStreamer's cudaipcsink/cudaipcsrc, on the
# kit's Debian 13 GStreamer 1.26, timed (bench/domains/ipc-compare.sh
# counts the same on the emulator, without timings). Uses the run's
# exported variables (kit, B, mode, out, run_tmp, have_device) and
# gpu-kit.sh's gst126_usable.
# SPDX-License-Identifier: LGPL-2.1-or-later

# The same N frames (GPU: 240 NV12 1920x1080 at 60 fps; emulator: 30 NV12
# 320x240 at 30 fps; videotestsrc pattern=ball) uploaded in one process and
# downloaded to a file in a second one, paced by the sinks (an unpaced
# cudaipcsink outruns its consumer, which then errors at the end):
#   legacy  cudaupload ! cudaipcsink ipc-mode=legacy
#           -> cudaipcsrc io-mode=import ! cudadownload
#   mmap    cudaupload ! cudaipcsink ipc-mode=mmap -> cudaipcsrc ! cudadownload
#   pinned  pinnedcudaupload ! video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink
#           -> pinnedshmsrc device-frames=on delivery=every-frame !
#           pinnedcudadownload
# Per row: frames received (cudaipcsink keeps only its latest frame: a
# consumer late at the end misses frames, counted), frames byte-exact in
# order against the same frames made on the CPU, wall time per frame from
# the producer's start to the consumer's end (start-up included: about the
# frame period), each process's CPU per frame (bash's times: the figure
# to compare). The step fails when a received frame differs, a row gets
# none, or the pinned row misses one or exits non-zero;
# no CUDA device, no GStreamer 1.26 in the kit or no cudaipcsink in it:
# skip, said.
run_ipc_compare () {
  local n w h fps caps gl ref fsize t0 t1 row prod cons rc=0 notes="" walls=""
  gst126_usable || return $?
  if [ "$mode" = emulator ]; then
    n=30 w=320 h=240 fps=30
    export PFEMU_VMM=1 PFEMU_IPC=1
  else
    n=240 w=1920 h=1080 fps=60
    if [ "$have_device" != yes ]; then
      echo "NO CUDA DEVICE: the device step found none"
      return 77
    fi
  fi
  gl=$kit/gst126/bin/gst-launch-1.0
  if [ ! -x "$gl" ]; then
    echo "SKIP: this kit's GStreamer 1.26 has no gst-launch-1.0 (packed before the step)"
    return 77
  fi
  if ! "$kit/gst126/bin/gst-inspect-1.0" cudaipcsink > /dev/null 2>&1; then
    echo "SKIP: GStreamer 1.26's nvcodec registers no cudaipcsink here"
    return 77
  fi
  "$kit/gst126/bin/gst-inspect-1.0" --version | head -1
  caps="video/x-raw,format=NV12,width=$w,height=$h,framerate=$fps/1"
  fsize=$((w * h * 3 / 2))
  ref=$run_tmp/ipc-ref.raw
  "$gl" -q videotestsrc num-buffers=$n pattern=ball ! "$caps" ! \
    filesink location="$ref" || return 1
  echo "| row | frames | byte-exact | ms/frame (wall) | CPU ms/frame prod / cons |"
  echo "|---|---|---|---|---|"
  for row in legacy mmap pinned; do
    local sock=$run_tmp/ipc.sock got=$run_tmp/ipc-$row.raw pt=$run_tmp/ipc-p.t
    local ct=$run_tmp/ipc-c.t dl="video/x-raw(memory:CUDAMemory) ! cudadownload"
    rm -f "$sock" "$got" "$pt" "$ct"
    case $row in
      legacy)
        prod="cudaupload ! video/x-raw(memory:CUDAMemory) ! cudaipcsink address=$sock ipc-mode=legacy"
        cons="cudaipcsrc address=$sock connection-timeout=30 io-mode=import ! $dl" ;;
      mmap)
        prod="cudaupload ! video/x-raw(memory:CUDAMemory) ! cudaipcsink address=$sock ipc-mode=mmap"
        cons="cudaipcsrc address=$sock connection-timeout=30 ! $dl" ;;
      pinned)
        prod="pinnedcudaupload ! video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink socket-path=$sock wait-for-connection=true"
        cons="pinnedshmsrc socket-path=$sock connect-timeout=30000 delivery=every-frame device-frames=on ! pinnedcudadownload" ;;
    esac
    t0=$(date +%s%N)
    # shellcheck disable=SC2016,SC2086
    bash -c '"$@" > "$0.log" 2>&1; r=$?; times > "$0"; exit $r' \
      "$ct" "$gl" -q $cons ! video/x-raw,format=NV12 ! \
      filesink buffer-mode=unbuffered location="$got" &
    local cpid=$!
    # shellcheck disable=SC2016,SC2086
    bash -c '"$@" > "$0.log" 2>&1; r=$?; times > "$0"; exit $r' \
      "$pt" "$gl" -q videotestsrc num-buffers=$n pattern=ball ! "$caps" ! \
      $prod
    local prc=$?
    wait $cpid
    local crc=$?
    t1=$(date +%s%N)
    if [ $prc -ne 0 ] || [ $crc -ne 0 ]; then
      echo "$row: producer exit $prc, consumer exit $crc"
      tail -n 5 "$pt.log" "$ct.log"
    fi
    # in order: each frame received is the next reference frame or a later
    # one (dropped frames skipped), byte for byte
    local size recv exact=0 k=0 j
    size=$(stat -c %s "$got" 2>/dev/null || echo 0)
    recv=$((size / fsize))
    for ((j = 0; j < recv; j++)); do
      while [ $k -lt $n ] && ! cmp -s -n $fsize -i $((j * fsize)):$((k * fsize)) \
          "$got" "$ref"; do
        k=$((k + 1))
      done
      [ $k -lt $n ] || break
      exact=$((exact + 1))
      k=$((k + 1))
    done
    printf '| %s | %d/%d | %d | %s | %s / %s |\n' "$row" "$recv" "$n" "$exact" \
      "$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / 1e6 / n }')" \
      "$(ipc_cpu_ms "$pt" "$n")" "$(ipc_cpu_ms "$ct" "$n")"
    notes="$notes $row $exact/$n"
    walls="$walls $row $(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.2f", (b - a) / 1e6 / n }')"
    if [ $exact -ne $recv ] || [ $recv -eq 0 ] ||
        { [ $row = pinned ] && { [ $exact -ne $n ] || [ $crc -ne 0 ] ||
            [ $prc -ne 0 ]; }; }; then
      rc=1
    fi
    rm -f "$got"
  done
  rm -f "$ref"
  echo "NOTE: GStreamer 1.26, $n frames ${w}x$h NV12, byte-exact/sent:$notes; ms/frame wall:$walls"
  return $rc
}

# CPU ms per frame from bash's `times`: its second line, the children's
# user and system time ("0m1.500s 0m0.200s")
ipc_cpu_ms () {
  awk -v n="$2" 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m");
      sub("s", "", a[2]); t += a[1] * 60 + a[2] } printf "%.2f", t * 1000 / n }' \
    "$1" 2>/dev/null || echo "?"
}
