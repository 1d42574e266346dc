#!/bin/bash
# Where one transport's hop spends its CPU (issue 35): runs shm-bench on one
# transport, paced, and profiles the whole machine (perf, cpu-clock) for
# SECONDS of its steady state; hop-profile.py keeps the samples of its two
# processes and prints us per frame by thread, library and function. Root
# or perf_event_paranoid <= 0. The sampling costs a little CPU on top:
# compare transports profiled the same way.
#   bench/shm/hop-profile.sh BUILD_DIR TRANSPORT [WxH] [RATE] [SECONDS] [HZ]
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu
build=$(cd "${1:?build dir}" && pwd); transport=${2:?pinned, node, shm, ...}
size=${3:-1920x1080}; rate=${4:-30}; secs=${5:-20}; hz=${6:-10000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/hop-profile-XXXXXX)
bench=
cleanup() {
  [ -z "$bench" ] || kill "$bench" 2>/dev/null || true
  [ -z "$bench" ] || wait "$bench" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# the profile lies inside one round: 8 s more than it (start, warm-up run)
GST_PLUGIN_PATH_1_0=$build/gst/shm GST_REGISTRY_1_0=$tmp/registry.bin \
  "$build/bench/shm/shm-bench" --transport "$transport" --size "$size" \
  --rate "$rate" --rounds 1 --latency-frames $((rate * (secs + 8))) \
  >"$tmp/bench.txt" 2>&1 &
bench=$!
consumer=$bench
prod=
for _ in $(seq 100); do
  sleep 0.1
  prod=$(pgrep -P "$bench" | head -1) || true
  # the warm-up run's producer (320x240) goes first: wait for the paced one
  [ -n "$prod" ] && grep -q -- "--paced" "/proc/$prod/cmdline" 2>/dev/null &&
    grep -q -- "$transport" "/proc/$prod/cmdline" 2>/dev/null && break
  prod=
done
[ -n "$prod" ] || { echo "hop-profile: no paced producer"; exit 1; }
sleep 2
perf record -q -a -F "$hz" -e cpu-clock -o "$tmp/perf.data" -- sleep "$secs"
wait "$bench"
bench=
cat "$tmp/bench.txt"
perf script -i "$tmp/perf.data" -F pid,tid,comm,ip,sym,dso 2>/dev/null |
  /usr/bin/python3 "$here/hop-profile.py" --consumer "$consumer" --producer "$prod" --hz "$hz" --frames $((rate * secs))
