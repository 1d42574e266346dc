#!/bin/sh
# The device hop beside GStreamer's cudaipcsink/cudaipcsrc (issue 32, item
# 6), on the CUDA emulators: the same N frames (NV12 320x240, 30 fps,
# videotestsrc pattern=ball) uploaded by nvcodec's cudaupload (or our
# pinnedcudaupload) in one process, carried as device memory to a second
# process, downloaded there (cudadownload / pinnedcudadownload) into a file:
#
#   legacy/copy    cudaipcsink ipc-mode=legacy -> cudaipcsrc io-mode=copy
#   legacy/import  cudaipcsink ipc-mode=legacy -> cudaipcsrc io-mode=import
#   mmap           cudaipcsink ipc-mode=mmap   -> cudaipcsrc (copies always)
#   pinnedshm/pf   pinnedcudaupload ! memory:PinnedflowCUDA ! pinnedshmsink
#                  -> pinnedshmsrc device-frames=on ! pinnedcudadownload
#   pinnedshm/cuda cudaupload ! memory:CUDAMemory ! pinnedshmsink
#                  -> pinnedshmsrc device-frames=on ! pinnedcudadownload
#
# Prints one row per path: frames received and byte-exact against the same
# videotestsrc frames made on the CPU (in order; a frame dropped on the way
# is not counted as exact), per frame: device-to-device, host-to-device and
# device-to-host copies of both processes (the emulator's counters: each
# plane copied is a copy, NV12 has two; a pitched 2D copy of both planes
# at once is one) and, in brackets, the frames' worth of bytes they moved
# (bytes / frame size: a copy of the pitch padding counts), the producer's exports (cuIpcGetMemHandle,
# cuMemExportToShareableHandle) and the consumer's opens
# (cuIpcOpenMemHandle, cuMemImportFromShareableHandle: each one an fd
# received where it is an import), the device memory each process held at
# most, and the CPU time of each process per frame (getrusage, the whole
# process: start-up included). Counts on the emulator, not GPU timings.
# The cudaipc rows are left out where GStreamer has no cudaipcsink (1.22).
#
#   bench/domains/ipc-compare.sh BUILD_DIR [N_FRAMES]   (default 150)
#
# What each row must show (checked; the table is printed either way, a
# row that fails says why on stderr):
#   cudaipc rows   every frame received byte-exact, at least one received
#                  (cudaipcsink keeps only its latest frame: a consumer late
#                  at the end may miss the last one)
#   pinnedshm/pf   all N frames byte-exact, 0 device-to-device copies (the
#                  upload writes into the sink's device slots)
#   pinnedshm/cuda all N frames byte-exact; 0 device-to-device copies on
#                  GStreamer 1.24+ (cudaupload writes into the sink's
#                  virtual-memory GstCudaBufferPool, exported as is), one
#                  copy per plane and frame before 1.24 (into the sink's
#                  device segment: 2 for NV12), of the rows' visible bytes
#                  only (1.00 frame's worth)
# Exit status: 0 when every row that ran shows that, 1 otherwise.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [N_FRAMES]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
n=${2:-150}
emu="$here/../../tests/cuda/emu-env.sh"
tmp=$(mktemp -d /tmp/pf-ipc-compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
w=320
h=240
fsize=$((w * h * 3 / 2))
caps="video/x-raw,format=NV12,width=$w,height=$h,framerate=30/1"
src="videotestsrc num-buffers=$n pattern=ball ! $caps"
# legacy IPC and virtual memory on in the emulated driver; one stats line
# per process
export PFEMU_IPC=1 PFEMU_VMM=1
rc=0

# shellcheck disable=SC2086
"$emu" "$build" gst-launch-1.0 -q $src ! filesink location="$tmp/ref.raw" ||
  exit 1
gstver=$("$emu" "$build" gst-launch-1.0 --version | sed -n 's/.*GStreamer //p' |
  head -1)
has_ipc=0
"$emu" "$build" gst-inspect-1.0 cudaipcsink >/dev/null 2>&1 && has_ipc=1

# run NAME PRODUCER_TAIL CONSUMER_HEAD [COPIES:BYTES]: the consumer starts
# first (both wait for the other), its output in $tmp/NAME.raw, stats in
# $tmp/NAME.stats (producer line tagged prod, consumer cons). With
# COPIES:BYTES (a pinnedshm row): all N frames must arrive byte-exact, with
# COPIES device-to-device copies per frame (both processes) moving BYTES
# frames' worth of bytes per frame; without: every frame received must be
# byte-exact.
run() {
  name=$1 prod=$2 cons=$3 dtod=${4:-}
  f=$tmp/$(echo "$name" | tr / -)
  rm -f "$tmp/sock" "$f".*
  # shellcheck disable=SC2086
  PFEMU_STATS="$f.cons" timeout 120 "$emu" "$build" \
    gst-launch-1.0 -q $cons ! filesink buffer-mode=unbuffered \
    location="$f.raw" >"$f.cons.log" 2>&1 &
  cpid=$!
  # shellcheck disable=SC2086
  PFEMU_STATS="$f.prod" timeout 120 "$emu" "$build" \
    gst-launch-1.0 -q $src ! $prod >"$f.prod.log" 2>&1 &
  ppid_=$!
  wait $cpid
  crc=$?
  # a consumer that failed leaves a producer waiting for it: 5 s more
  i=0
  while [ $crc -ne 0 ] && [ $i -lt 50 ] && kill -0 $ppid_ 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
  done
  [ $i -lt 50 ] || kill $ppid_ 2>/dev/null
  wait $ppid_
  prc=$?
  if [ $prc -ne 0 ] || [ $crc -ne 0 ]; then
    echo "ipc-compare: $name: producer exit $prc, consumer exit $crc" >&2
    tail -n 5 "$f.prod.log" "$f.cons.log" >&2
  fi
  /usr/bin/env python3 - "$tmp" "$f" "$name" "$n" "$fsize" "$dtod" <<'PY' || rc=1
import sys
tmp, f, name = sys.argv[1], sys.argv[2], sys.argv[3]
n, fsize = int(sys.argv[4]), int(sys.argv[5])
want_dtod = sys.argv[6]
ref = open(f"{tmp}/ref.raw", "rb").read()
try:
    out = open(f"{f}.raw", "rb").read()
except OSError:
    out = b""
refs = [ref[i * fsize:(i + 1) * fsize] for i in range(n)]
got = [out[i:i + fsize] for i in range(0, len(out), fsize)]
# in order: each received frame must be the next reference frame or a
# later one (a frame dropped on the way), byte for byte
exact, j = 0, 0
for frame in got:
    k = j
    while k < n and refs[k] != frame:
        k += 1
    if k < n:
        exact += 1
        j = k + 1
def stats(side):
    try:
        line = open(f"{f}.{side}").read().split("\n")[0]
    except OSError:
        return {}
    return {k: int(v) for k, v in (t.split("=", 1) for t in line.split()[1:])
            if v.lstrip("-").isdigit()}
p, c = stats("prod"), stats("cons")
g = lambda d, k: d.get(k, 0)
def per(d):
    # copies (each plane a copy) per frame, and frames' worth of bytes
    return "%.2f (%.2fx)" % ((g(p, "copies." + d) + g(c, "copies." + d)) / n,
                             (g(p, "bytes." + d) + g(c, "bytes." + d)) / (n * fsize))
exports = g(p, "calls.cuIpcGetMemHandle") + g(p, "calls.cuMemExportToShareableHandle")
opens = g(c, "calls.cuIpcOpenMemHandle") + g(c, "calls.cuMemImportFromShareableHandle")
print("| %s | %d/%d | %d | %s | %s | %s | %d | %d | %.1f / %.1f | %.2f / %.2f |"
      % (name, len(got), n, exact, per("dtod"), per("htod"),
         per("dtoh"), exports, opens,
         g(p, "device.bytes.peak") / 2**20, g(c, "device.bytes.peak") / 2**20,
         g(p, "cpu.ms") / n, g(c, "cpu.ms") / n))
with open(f"{tmp}/details", "a") as d:
    for side, st in (("producer", p), ("consumer", c)):
        d.write("%s %s: %s\n" % (name, side, " ".join(
            "%s=%d" % kv for kv in sorted(st.items()) if kv[1])))
dtod = (g(p, "copies.dtod") + g(c, "copies.dtod")) / n
dtod_bytes = (g(p, "bytes.dtod") + g(c, "bytes.dtod")) / (n * fsize)
bad = []
if want_dtod == "":
    if not got or exact != len(got):
        bad.append("%d of %d frames received byte-exact" % (exact, len(got)))
else:
    if exact != n or len(got) != n:
        bad.append("%d/%d frames, %d byte-exact" % (len(got), n, exact))
    want_c, want_b = (float(v) for v in want_dtod.split(":"))
    if abs(dtod - want_c) > 1e-9 or abs(dtod_bytes - want_b) > 1e-9:
        bad.append("%.2f device-to-device copies per frame (%.2f frames' "
                   "worth of bytes), want %s" % (dtod, dtod_bytes,
                                                 want_dtod.replace(":", " (") + ")"))
for b in bad:
    print("ipc-compare: %s: %s" % (name, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

echo "GStreamer $gstver, $n frames NV12 ${w}x$h, emulated device (counts, not GPU timings)"
echo
echo "| path | frames | byte-exact | DtoD copies/frame (bytes) | HtoD | DtoH | exports | opens | device MiB prod / cons | CPU ms/frame prod / cons |"
echo "|---|---|---|---|---|---|---|---|---|---|"
dl="video/x-raw(memory:CUDAMemory) ! cudadownload ! video/x-raw,format=NV12"
up="cudaupload ! video/x-raw(memory:CUDAMemory)"
if [ $has_ipc = 1 ]; then
  run legacy/copy "$up ! cudaipcsink address=$tmp/sock ipc-mode=legacy" \
    "cudaipcsrc address=$tmp/sock connection-timeout=60 io-mode=copy ! $dl"
  run legacy/import "$up ! cudaipcsink address=$tmp/sock ipc-mode=legacy" \
    "cudaipcsrc address=$tmp/sock connection-timeout=60 io-mode=import ! $dl"
  run mmap "$up ! cudaipcsink address=$tmp/sock ipc-mode=mmap" \
    "cudaipcsrc address=$tmp/sock connection-timeout=60 ! $dl"
fi
pdl="pinnedshmsrc socket-path=$tmp/sock connect-timeout=60000 delivery=every-frame device-frames=on ! pinnedcudadownload ! video/x-raw,format=NV12"
run pinnedshm/pf "pinnedcudaupload ! video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink socket-path=$tmp/sock wait-for-connection=true" \
  "$pdl" 0:0
# GStreamer 1.24+: the sink's virtual-memory pool, no copy; before: one
# copy per plane, the visible bytes
cuda_dtod=2:1
case $gstver in 1.2[4-9].* | 1.[3-9]*.* | [2-9].*) cuda_dtod=0:0 ;; esac
if [ $has_ipc = 1 ] || "$emu" "$build" gst-inspect-1.0 cudaupload >/dev/null 2>&1; then
  run pinnedshm/cuda "$up ! pinnedshmsink socket-path=$tmp/sock wait-for-connection=true" \
    "$pdl" $cuda_dtod
fi
echo
echo "Per process (the emulator's counters, PFEMU_STATS; calls.* counted per call, copies.* per plane):"
cat "$tmp/details"
exit $rc
