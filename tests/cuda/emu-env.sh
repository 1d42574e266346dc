#!/bin/sh
# Runs a command with the CUDA emulators in place of a GPU: the cudart
# emulator for pinnedflow's plugin, the driver-API stand-in libcuda.so.1
# and the decoder stand-in libnvcuvid.so.1 first on LD_LIBRARY_PATH (so
# GStreamer's libgstcuda and nvcodec find them), the build's plugins, and a
# registry of its own (one scanned without the stand-ins caches nvcodec
# with no elements).
#
#   tests/cuda/emu-env.sh BUILD_DIR COMMAND [ARGS...]
#   e.g. tests/cuda/emu-env.sh build gst-inspect-1.0 cudadownload
#
# PFEMU_GST_PREFIX=/tmp/gst-prefix runs against a GStreamer installed in
# that prefix instead of the system's (its bin first on PATH, its libraries
# and only its plugins, a registry of its own). The PFEMU_* switches of
# tests/cuda/pfemu.h pass through.
set -e
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR COMMAND [ARGS...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
emu="$build/tests/cuda/emu"
for f in "$emu/libcuda.so.1" "$emu/libnvcuvid.so.1" \
    "$build/tests/cuda/libpfemu-cudart.so"; do
  if [ ! -e "$f" ]; then
    echo "$0: $f missing: build it first (ninja -C $build)" >&2
    exit 2
  fi
done
ld="$emu"
registry="$emu/registry.bin"
if [ -n "$PFEMU_GST_PREFIX" ]; then
  libdir="$PFEMU_GST_PREFIX/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  ld="$ld:$libdir"
  PATH="$PFEMU_GST_PREFIX/bin:$PATH"
  GST_PLUGIN_SYSTEM_PATH_1_0="$libdir/gstreamer-1.0"
  GST_PLUGIN_SCANNER_1_0="$PFEMU_GST_PREFIX/libexec/gstreamer-1.0/gst-plugin-scanner"
  GI_TYPELIB_PATH="$libdir/girepository-1.0${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}"
  export PATH GST_PLUGIN_SYSTEM_PATH_1_0 GST_PLUGIN_SCANNER_1_0 GI_TYPELIB_PATH
  registry="$emu/registry-$(echo "$PFEMU_GST_PREFIX" | tr -c 'A-Za-z0-9\n' _).bin"
fi
LD_LIBRARY_PATH="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
GST_REGISTRY_1_0="$registry"
GST_PLUGIN_PATH_1_0="$build/gst/shm:$build/ext/cuda"
GST_PINNEDFLOW_CUDART="$build/tests/cuda/libpfemu-cudart.so"
PINNEDFLOW_CUDA_MODE=emulated
export LD_LIBRARY_PATH GST_REGISTRY_1_0 GST_PLUGIN_PATH_1_0 \
  GST_PINNEDFLOW_CUDART PINNEDFLOW_CUDA_MODE
exec "$@"
