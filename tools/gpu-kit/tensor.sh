# The GPU kit's tensor-* steps (sourced by tools/gpu-kit.sh, and by the
# kit's copy from its gpu-kit/ folder; see docs/cuda.md, "GPU kit"): issue
# 33's example run as the application it is. Uses the run's exported
# variables (kit, B, mode, out, run_tmp, have_device, orig_ld, gst_ld)
# and gpu-kit.sh's gst126_usable.
# SPDX-License-Identifier: LGPL-2.1-or-later

# issue 33's example (bridge/examples/tensor_app.py, docs/bridge.md): a
# camera process (videotestsrc pattern=ball ! pinnedshmsink) -> the
# application, pinnedshmsrc ! pinnedcudaupload ! appsink -> the frame as a
# tensor of BACKEND (torch, cupy: from_dlpack on the device; cudart: the
# specification-only consumer, numpy through the host) -> 255 - frame ->
# appsrc ! cudadownload ! filesink; every frame out byte-exact against
# 255 - the same camera's frames written straight to a file. The
# application is the interpreter's own Python (GPUKIT_PYTHON), GStreamer
# through ctypes (no PyGObject needed), the kit's GStreamer loaded from its
# lib/ (PINNEDFLOW_GST_LIBDIR) with the host's library path left as it is,
# so torch's and CuPy's libraries are the host's. GPU: 90 frames 1080p
# RGBA; emulator: 30 frames 640x480 (the emulator's copies are CPU
# copies). Copies (device copies buffer_from_tensor made, the example's
# count): 1 per frame with 1.22's libgstcuda, 0 with 1.24+ (wrapped);
# anything else fails. run_tensor BACKEND [gst126]
run_tensor () {
  local backend=$1 gen=${2:-} py=${GPUKIT_PYTHON:-python3} n w h caps sock
  local ref res emu="" app_ld libdir greg want last got cam rc why
  if [ "$mode" = emulator ]; then
    n=30 w=640 h=480 emu=$B/tests/cuda/emu
  else
    n=90 w=1920 h=1080
    if [ "$have_device" != yes ]; then
      echo "NO CUDA DEVICE: the device step found none"
      return 77
    fi
  fi
  if ! command -v "$py" > /dev/null; then
    echo "SKIP: no $py on this host (GPUKIT_PYTHON)"
    return 77
  fi
  libdir=$kit/lib
  greg=""
  if [ "$gen" = gst126 ]; then
    gst126_usable || return $?
    libdir=$kit/gst126/lib
  fi
  # the interpreter's own libraries (numpy, torch, CuPy): the host's path;
  # in an emulator run the driver stand-in (libcuda.so.1) before it, for
  # libgstcuda's dlopen
  app_ld=$emu${emu:+${orig_ld:+:}}$orig_ld
  local app_env=(env LD_LIBRARY_PATH="$app_ld")
  [ -n "$app_ld" ] || app_env=(env -u LD_LIBRARY_PATH)
  # torch and CuPy: the interpreter must have them (a failure, the reason)
  if [ "$backend" != cudart ]; then
    why=$("${app_env[@]}" "$py" -c 'import sys
try:
    m = __import__(sys.argv[1])
except Exception as e:
    sys.exit("%s not importable: %s" % (sys.argv[1], e))
try:
    ok = (m.cuda.is_available() if sys.argv[1] == "torch"
          else m.cuda.runtime.getDeviceCount() > 0)
except Exception as e:
    sys.exit("%s %s sees no CUDA device: %s" % (sys.argv[1], m.__version__, e))
if not ok:
    sys.exit("%s %s sees no CUDA device" % (sys.argv[1], m.__version__))' \
      "$backend" 2>&1) ||
      { echo "FAIL: $py: $(echo "$why" | tail -1)"; return 1; }
  fi
  caps=video/x-raw,format=RGBA,width=$w,height=$h,framerate=30/1
  sock=$run_tmp/tensor-$backend$gen.sock
  ref=$run_tmp/tensor-$backend$gen-ref.raw
  res=$run_tmp/tensor-$backend$gen-out.raw
  rm -f "$sock" "$ref" "$res"
  # the camera and the reference: the kit's 1.22 gst-launch-1.0 (the 1.22
  # driver-configuration registry of the other steps)
  if [ "$mode" = emulator ]; then
    greg=$out/registry-emulator-driver.bin
  else
    greg=$out/registry-gpu.bin
  fi
  cam=(env LD_LIBRARY_PATH="$emu${emu:+:}$gst_ld"
    GST_PLUGIN_SYSTEM_PATH_1_0="$kit/lib/gstreamer-1.0"
    GST_PLUGIN_SCANNER_1_0="$kit/libexec/gst-plugin-scanner"
    GST_REGISTRY_1_0="$greg" "$kit/bin/gst-launch-1.0" -q
    videotestsrc num-buffers=$n pattern=ball)
  "${cam[@]}" ! "$caps" ! filesink location="$ref" ||
    { echo "FAIL: the reference pipeline failed"; return 1; }
  timeout 60 "${cam[@]}" ! "$caps" ! pinnedshmsink socket-path="$sock" \
    wait-for-connection=true &
  local cam_pid=$!
  "${app_env[@]}" PINNEDFLOW_GST_LIBDIR="$libdir" \
    GST_REGISTRY_FORK=no PYTHONPATH="$kit/python" PYTHONUNBUFFERED=1 \
    PINNEDFLOW_LIBRARY="$B/lib/pinnedflow/libpinnedflow.so.0" \
    PINNEDFLOW_GSTCUDA_LIBRARY="$B/gst-libs/gst/pinnedcuda/libgstpinnedflowcuda-1.0.so.0" \
    "$py" "$kit/examples/tensor_app.py" "$sock" "$res" --backend "$backend" \
    --gst ctypes > "$run_tmp/tensor-app.txt" 2>&1
  rc=$?
  # the per-frame lines: the first three and the last five
  if [ "$(wc -l < "$run_tmp/tensor-app.txt")" -gt 12 ]; then
    head -3 "$run_tmp/tensor-app.txt"; echo "..."
    tail -5 "$run_tmp/tensor-app.txt"
  else
    cat "$run_tmp/tensor-app.txt"
  fi
  if [ $rc -ne 0 ]; then
    kill "$cam_pid" 2> /dev/null
    wait "$cam_pid"
    rm -f "$ref" "$res"
    echo "FAIL: tensor_app.py exit $rc: $(grep -v '^[[:space:]]*$' "$run_tmp/tensor-app.txt" | tail -1)"
    return 1
  fi
  wait "$cam_pid" || { echo "FAIL: the camera process failed"; rm -f "$ref" "$res"; return 1; }
  last=$(grep '^tensor_app: ' "$run_tmp/tensor-app.txt" | tail -1)
  got=$(echo "$last" | sed -n 's/^tensor_app: \([0-9]*\) frames, .*, copies \([0-9]*\)$/\1 \2/p')
  # byte-exact: every frame out = 255 - the camera's, frame by frame
  "${app_env[@]}" "$py" -c 'import numpy, os, sys
ref, res, n, fs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if os.path.getsize(ref) != n * fs or os.path.getsize(res) != n * fs:
    print("byte-exact: NO: %d bytes out, %d in, want %d" % (
        os.path.getsize(res), os.path.getsize(ref), n * fs))
    sys.exit(1)
a = numpy.memmap(res, numpy.uint8, "r")
b = numpy.memmap(ref, numpy.uint8, "r")
bad = [i for i in range(n)
       if not numpy.array_equal(a[i * fs:(i + 1) * fs], 255 - b[i * fs:(i + 1) * fs])]
distinct = len(set(hash(b[i * fs:(i + 1) * fs].tobytes()) for i in range(n)))
if bad:
    print("byte-exact: NO: %d of %d frames differ, first %d" % (len(bad), n, bad[0]))
    sys.exit(1)
print("byte-exact: yes, %d of %d frames (%d distinct)" % (n, n, distinct))' \
    "$ref" "$res" "$n" $((w * h * 4)) > "$run_tmp/tensor-cmp.txt" 2>&1
  rc=$?
  cat "$run_tmp/tensor-cmp.txt"
  rm -f "$ref" "$res"
  local exact
  exact=$(sed -n 's/^byte-exact: \(yes\|NO\).*/\1/p' "$run_tmp/tensor-cmp.txt")
  [ -n "$got" ] || { echo "FAIL: no 'tensor_app: N frames, ..., copies C' line; byte-exact ${exact:-NO}"; return 1; }
  set -- $got
  if [ "$gen" = gst126 ]; then want=0; else want=$n; fi
  local ver=1.22
  [ "$gen" = gst126 ] && ver=1.26
  local what="backend $backend, GStreamer $ver, $1 frames ${w}x$h RGBA, copies $2 (want $want), byte-exact ${exact:-NO}"
  if [ "$1" -ne "$n" ] || [ "$2" -ne "$want" ] || [ $rc -ne 0 ]; then
    echo "FAIL: $what"
    return 1
  fi
  echo "NOTE: $what"
}
