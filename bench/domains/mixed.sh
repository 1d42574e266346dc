#!/bin/sh
# The mixed bench of issue 32 (item 6) on the emulators: one device node
# producer (pf_node_producer_new_device(), device 0), two node consumers
# of device 0 and two CPU consumers, N frames of 320x240 RGBA.
# "before": the producer copies nothing, which is what a device stream
# offers CPU consumers without domains: a consumer that did not ask for
# device frames gets none (the producer counts them skipped), so each CPU
# consumer asks for device frames and downloads every frame itself
# (cuMemcpyDtoH in its process: CUDA in every CPU consumer, 2 downloads
# per frame); "after": pf_node_producer_enable_domains(): the producer
# downloads each frame once into a pinned host pool shared by the two CPU
# consumers (which load no CUDA), the two GPU consumers share the
# producer's own device frames (no device copy in either run). Prints
# copies per frame (the producer's stats and the emulator's count of
# cuMemcpyDtoH), the host memory the download pool holds, the CPU per
# frame. Counts on the emulator, not GPU timings. Each run checks every
# frame byte-exact in every consumer (tests/cuda/test-domains.c, "mixed").
#
#   bench/domains/mixed.sh BUILD_DIR [N_FRAMES]     (default 300)
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
    "$here/../../tests/cuda/emu-env.sh" "$build" "$bin" mixed "$mode" "$n" |
    grep -v '^ok '
done
