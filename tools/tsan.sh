#!/usr/bin/env bash
# ThreadSanitizer pass (issue 31): a second build with clang and
# -fsanitize=thread, then the transport, shm and bridge suites in it.
# Usage: tools/tsan.sh [BUILD_DIR]   (default: build-tsan beside build)
# Run by tools/test.sh (PINNEDFLOW_TSAN=0 leaves it out). Prints
# "tsan: N passed, N failed, N skipped, N reports" and exits non-zero on a
# failed test or on any report (TSan's exit code, 66, fails the process
# that raced; a report from a process whose status no test checks, a child
# killed at the end of a case, is counted from the logs).
#
# What is instrumented: our code (libpinnedflow, libgstpinnedflow, the
# plugins, the tests). GLib, GStreamer and their plugins are Debian's, not
# built with TSan: what they do inside is not checked, and their
# synchronisation is seen only where it goes through an intercepted call
# (GRecMutex and GRWLock are pthread locks, seen; GMutex and GCond are
# GLib's own futexes, and GStreamer hands buffers and messages over with
# its own atomics: tests/tsan-glib.c tells TSan about those). What is left
# unseen, and why no suppression is needed: tests/tsan.supp.
#
# Left out, each for a reason:
# - the Python tests of the bridge suite: the interpreter is not
#   instrumented, and the TSan runtime cannot be preloaded into it (clang
#   14's libclang_rt.tsan-x86_64.so preloaded into any uninstrumented
#   program, /bin/true included, dies of SIGSEGV here); their C side is the
#   same libpinnedflow the bridge's C tests (node-*, hostile-raw-*) run;
# - test-shm-alloc-*: it counts malloc () calls by defining malloc () over
#   glibc's, which under TSan replaces TSan's own interceptor (it crashes);
# - test-shm-delivery-memlock: the sanitizers' runtime makes mlock () a
#   no-op that succeeds, so the warning the test waits for never comes;
# - the fuzz targets (libFuzzer + ASan), the benchmarks, the CUDA plugin
#   and GObject introspection: none runs in these suites.
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
# (each child runs one test case, or execs); exitcode 66 fails the test;
# ignore_noninstrumented_modules: intercepted calls (free, memcpy ...)
# made from inside GLib and GStreamer are not checked (their internal
# hand-offs are invisible: tests/tsan.supp); our code's accesses all are.
export TSAN_OPTIONS="suppressions=$top/tests/tsan.supp second_deadlock_stack=1 die_after_fork=0 exitcode=66 ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"

# The plugin registry. GStreamer scans plugins in a helper process,
# Debian's gst-plugin-scanner: not instrumented, it cannot load our
# plugins (they need the TSan runtime, which it lacks). So the registry
# the suites use is written once, in-process, by a small instrumented
# program with its reports off (it loads every system plugin: none is ours
# to check); the tests then read it and never rescan
# (GST_REGISTRY_UPDATE=no), loading only the plugins they use.
registry="$build/tests/registry.bin"
plugin_path="$build/gst/shm:$build/gst/cuda:"
printf '#include <gst/gst.h>\nint main (int c, char **v) { gst_init (&c, &v); return 0; }\n' |
  "$cc" -fsanitize=thread -x c - -o "$build/tsan-registry" \
    $(pkg-config --cflags --libs gstreamer-1.0) || exit 1
rm -f "$registry"
GST_REGISTRY_1_0="$registry" GST_PLUGIN_PATH_1_0="$plugin_path" \
  GST_REGISTRY_FORK=no TSAN_OPTIONS=report_bugs=0 "$build/tsan-registry" ||
  { echo "tsan: the registry could not be written"; exit 1; }
export GST_REGISTRY_UPDATE=no GST_REGISTRY_FORK=no
# GLib 2.74's g_slice keeps freed blocks in per-thread magazines and hands
# them to other threads under its own locks: a block one thread freed and
# another reuses shows as a race. Plain malloc instead, which TSan tracks.
export G_SLICE=always-malloc

mapfile -t all < <(meson test -C "$build" --list --suite transport \
  --suite shm --suite bridge 2> /dev/null | grep ' / ' | sed 's/^.* \/ //')
tests=()
for t in "${all[@]}"; do
  case "$t" in
    python-* | doc-consumer-* | export-* | interop-* | test-shm-alloc-* | \
      test-shm-delivery-memlock) ;;
    *) tests+=("$t") ;;
  esac
done
if [ ${#tests[@]} -eq 0 ]; then
  echo "tsan: no test found in $build"   # (no names would run every suite)
  exit 1
fi

# GLib's GMutex/GCond (futexes) and GStreamer's refcount and atomic-queue
# hand-offs, made visible to TSan (tests/tsan-glib.c says how): a library
# preloaded into every test process, uninstrumented, linked against
# nothing of ours.
annotations="$build/libpf-tsan-glib.so"
"$cc" -shared -fPIC -O1 -o "$annotations" "$top/tests/tsan-glib.c" -ldl ||
  exit 1

rc=0
rm -f "$build"/meson-logs/tsan-env.*
# (the log is tsan-env.*: meson names it after the wrapper)
meson test -C "$build" --print-errorlogs --num-processes 2 \
  --wrapper "env LD_PRELOAD=$annotations" --logbase tsan "${tests[@]}" ||
  rc=1

/usr/bin/python3 - "$build/meson-logs/tsan-env.json" <<'PY' || rc=1
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
reports = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    r = t.get("result", "")
    if r in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif r == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
    for f in ("stdout", "stderr"):
        reports += (t.get(f) or "").count("WARNING: ThreadSanitizer")
print("tsan: %(passed)d passed, %(failed)d failed, %(skipped)d skipped"
      % counts + ", %d reports" % reports)
sys.exit(1 if reports else 0)
PY
exit $rc
