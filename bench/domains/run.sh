#!/bin/sh
# The four-consumer bench of issue 32 (item 6) on the emulators: one host
# node producer, four node consumers of device 0 and one host consumer,
# N frames of 320x240 RGBA; "before": the producer copies nothing (each
# device consumer uploads every frame itself, pf_upload / the node
# Uploader: 4 uploads and 4 device copies per frame); "after": the
# producer uploads each frame once into a device pool on device 0
# (pf_node_producer_enable_domains()) shared by the four. Prints uploads
# per frame (the producer's stats and the emulator's count of
# cuMemcpyHtoD), device memory held, the producer's CPU per frame. Counts
# on the emulator, not GPU timings. Each run checks every frame
# byte-exact in every consumer (tests/cuda/test-domains.c).
#
#   bench/domains/run.sh BUILD_DIR [N_FRAMES]     (default 300)
set -e
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [N_FRAMES]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$1
n=${2:-300}
bin="$build/tests/cuda/test-domains"
if [ ! -x "$bin" ]; then
  echo "$0: $bin missing: build it first (ninja -C $build)" >&2
  exit 2
fi
for mode in off on; do
  PFEMU_VMM=1 PFEMU_COPY_DELAY_US=${PFEMU_COPY_DELAY_US:-2000} \
    "$here/../../tests/cuda/emu-env.sh" "$build" "$bin" bench "$mode" "$n" |
    grep -v '^ok '
done
