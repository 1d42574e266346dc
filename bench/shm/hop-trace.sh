#!/bin/bash
# The steps of a frame's hop, for one transport (issue 13): runs shm-bench
# on one transport under perf (scheduler and syscall tracepoints of
# shm-bench and its children only: another shm-bench on the machine would
# have threads of the same names; root or perf_event_paranoid <= 1) and
# splits each frame's latency with hop-trace.py. perf's own tracing slows every step: compare transports
# traced the same way, not with untraced figures.
#   bench/shm/hop-trace.sh BUILD_DIR pinned|shm|node [WxH] [ROUNDS]
# SPDX-License-Identifier: LGPL-2.1-or-later
set -eu
build=${1:?build dir}; transport=${2:?pinned or shm}
size=${3:-1920x1080}; rounds=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/hop-trace-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
perf record -q -o "$tmp/perf.data" \
  -e sched:sched_switch,sched:sched_wakeup \
  -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -- \
  env GST_PLUGIN_PATH="$build/gst/shm" "$build/bench/shm/shm-bench" \
  --transport "$transport" --size "$size" --rounds "$rounds"
perf script -i "$tmp/perf.data" -F comm,tid,cpu,time,event,trace 2>/dev/null \
  | /usr/bin/python3 "$here/hop-trace.py" \
    "$([ "$transport" = node ] && echo node || echo src:src)"
