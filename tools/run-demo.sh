#!/usr/bin/env bash
# The two-process demo on a built tree: a producer process publishes a camera
# (v4l2src when /dev/video0 exists, else videotestsrc) through pinnedshmsink;
# a consumer process receives it with pinnedshmsrc. Both print, once a second,
# frames/s, latency and copies per frame. After DEMO_SECONDS (default 6) the
# producer sends EOS, the consumer sees it and both exit; exit code 0 when the
# frames and the EOS crossed.
# Usage: tools/run-demo.sh BUILD_DIR
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:?usage: tools/run-demo.sh BUILD_DIR}" && pwd)
seconds=${DEMO_SECONDS:-6}

export GST_PLUGIN_PATH_1_0="$build/gst/shm:$build/ext/cuda${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"
export GST_REGISTRY_1_0="$build/demo-registry.bin"
export LD_LIBRARY_PATH="$build/lib/pinnedflow${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

demo="$build/tools/demo/pf-demo"
if [ ! -x "$demo" ]; then
  echo "run-demo: $demo not built (run ninja -C $build)" >&2
  exit 1
fi

if ! gst-inspect-1.0 pinnedshmsink >/dev/null 2>&1; then
  echo "run-demo: pinnedshmsink not found in $build/gst/shm (build first)" >&2
  exit 1
fi

if [ -e /dev/video0 ] && gst-inspect-1.0 v4l2src >/dev/null 2>&1; then
  camera="v4l2src device=/dev/video0"
else
  camera="videotestsrc is-live=true pattern=ball"
fi

# With a usable CUDA device the consumer uploads every frame straight from the
# producer's read-only pinned segments (registered once per segment, async DMA)
# and downloads it again; without one it says so and runs without the upload.
middle=""
if probe=$(gst-launch-1.0 -q videotestsrc num-buffers=1 \
    ! video/x-raw,format=RGBA,width=64,height=64 \
    ! pinnedcudaupload ! fakesink 2>&1); then
  middle="pinnedcudaupload max-inflight=3 ! pinnedcudadownload"
  echo "run-demo: CUDA device usable: the consumer runs $middle"
else
  reason=$(printf '%s\n' "$probe" | grep -m1 -o 'No usable CUDA.*\|CUDA runtime.*' || true)
  echo "run-demo: no usable CUDA device, the consumer runs without pinnedcudaupload${reason:+ ($reason)}"
fi

dir=$(mktemp -d /tmp/pinnedflow-demo-XXXXXX)
sock="$dir/demo.sock"
producer_pid=""
cleanup() {
  if [ -n "$producer_pid" ] && kill -0 "$producer_pid" 2>/dev/null; then
    kill "$producer_pid" 2>/dev/null || true
    wait "$producer_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

echo "run-demo: camera: $camera; socket: $sock; ${seconds} s"
"$demo" produce "$sock" "$seconds" "$camera" &
producer_pid=$!

consumer_status=0
"$demo" consume "$sock" "$middle" || consumer_status=$?
producer_status=0
wait "$producer_pid" || producer_status=$?
producer_pid=""

if [ "$consumer_status" -ne 0 ] || [ "$producer_status" -ne 0 ]; then
  echo "run-demo: FAILED (producer $producer_status, consumer $consumer_status)" >&2
  exit 1
fi
echo "run-demo: OK (frames and EOS crossed between the two processes)"
