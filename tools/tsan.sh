#!/usr/bin/env bash
# ThreadSanitizer pass (issue 31): a second build with clang and
# -fsanitize=thread, then the transport, shm and bridge suites in it.
# Usage: tools/tsan.sh [BUILD_DIR]   (default: build-tsan beside build)
# Run by tools/test.sh (PINNEDFLOW_TSAN=0 leaves it out). Prints
# "tsan: N passed, N failed, N skipped" and exits non-zero on a failure or
# a race report (TSan's exitcode, 66, fails the test that raced).
#
# What is instrumented: our code (libpinnedflow, libgstpinnedflow, the
# plugins, the tests). GLib, GStreamer and Python are Debian's, not built
# with TSan: what they do inside is not checked, and their locks are seen
# only where they go through an intercepted call (pthread_*; GLib's GMutex
# is a futex of its own on Linux, so the synchronisation it gives is not
# seen: tests/tsan.supp says what that makes TSan report, and why each
# line is not a race of ours). The Python tests load the instrumented
# library into Debian's interpreter with the TSan runtime preloaded.
# Left out: the fuzz targets (libFuzzer + ASan), the benchmarks, the CUDA
# plugin and GObject introspection (none run in these suites).
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$top/build-tsan}
cc=${PINNEDFLOW_TSAN_CC:-clang}

if ! command -v "$cc" > /dev/null; then
  echo "tsan: $cc not found (apt-get install clang)"
  exit 1
fi
# Two warnings clang has and gcc 12 (the project's compiler) has not are
# off here: -Wformat-nonliteral on printf-like helpers without a format
# attribute, -Wstring-concatenation on deliberately split literals.
if [ ! -f "$build/build.ninja" ]; then
  CC=$cc meson setup "$build" "$top" -Dwerror=true -Dtests=enabled \
    -Dc_args="['-Wno-format-nonliteral','-Wno-string-concatenation']" \
    -Db_sanitize=thread -Db_lundef=false -Dfuzz=disabled -Dbench=disabled \
    -Dcuda=disabled -Dintrospection=disabled > /dev/null ||
    { echo "tsan: meson setup failed"; exit 1; }
fi
ninja -C "$build" > /dev/null || { ninja -C "$build" | tail -30; exit 1; }

# second_deadlock_stack: both stacks of a lock-order report;
# die_after_fork=0: the harnesses fork children from threaded processes
# (each child only runs a test case or execs); halt_on_error=0 with
# exitcode 66: every report printed, the test failed.
export TSAN_OPTIONS="suppressions=$top/tests/tsan.supp second_deadlock_stack=1 die_after_fork=0 exitcode=66 ${TSAN_OPTIONS:-}"
runtime=$("$cc" -print-file-name=libclang_rt.tsan-x86_64.so)

# GStreamer scans plugins in a helper process, Debian's gst-plugin-scanner:
# not instrumented, it cannot load our plugins (they need the TSan
# runtime), and the registry would lack them. It runs with the runtime
# preloaded, its reports off (it loads every system plugin; none is ours
# to check: our plugins' code runs, and is checked, in the tests).
scanner="$(pkg-config --variable=pluginscannerdir gstreamer-1.0)/gst-plugin-scanner"
printf '#!/bin/sh\nLD_PRELOAD=%s TSAN_OPTIONS=report_bugs=0 exec %s "$@"\n' \
  "$runtime" "$scanner" > "$build/tsan-plugin-scanner"
chmod +x "$build/tsan-plugin-scanner"
export GST_PLUGIN_SCANNER_1_0="$build/tsan-plugin-scanner"
rm -f "$build/tests/registry.bin"

# The suites' tests, split: Python ones need the runtime preloaded (the
# interpreter is not instrumented), the rest are instrumented executables.
mapfile -t all < <(meson test -C "$build" --list --suite transport \
  --suite shm --suite bridge 2> /dev/null | sed 's/^.* \/ //')
c_tests=()
py_tests=()
for t in "${all[@]}"; do
  case "$t" in
    python-* | doc-consumer-* | export-* | interop-*) py_tests+=("$t") ;;
    # counts malloc calls by defining malloc () over glibc's: under TSan it
    # would count TSan's own allocator, and it crashes there
    test-shm-alloc-*) ;;
    *) c_tests+=("$t") ;;
  esac
done

rc=0
logdir="$build/meson-logs"
meson test -C "$build" --print-errorlogs --num-processes 2 \
  --logbase tsan-c "${c_tests[@]}" || rc=1
if [ ${#py_tests[@]} -gt 0 ]; then
  meson test -C "$build" --print-errorlogs --num-processes 2 \
    --wrapper "env LD_PRELOAD=$runtime" --logbase tsan-py "${py_tests[@]}" ||
    rc=1
fi

/usr/bin/python3 - "$logdir" <<'PY'
import json, os, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
races = 0
for name in ("tsan-c.json", "tsan-py.json"):
    path = os.path.join(sys.argv[1], name)
    if not os.path.exists(path):
        continue
    for line in open(path):
        t = json.loads(line)
        r = t.get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
        for f in ("stdout", "stderr"):
            races += (t.get(f) or "").count("WARNING: ThreadSanitizer")
print("tsan: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" %
      counts + ", %d reports" % races)
# a report from a process whose exit status no test checks (a child
# killed at the end of a case) fails the pass too
sys.exit(1 if races else 0)
PY
[ $? -eq 0 ] || rc=1
exit $rc
