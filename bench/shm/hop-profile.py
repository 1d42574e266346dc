#!/usr/bin/python3
# Where a hop's CPU goes, per frame, by process, thread, library and
# function: aggregates `perf script -F pid,tid,comm,ip,sym,dso` of a
# system-wide cpu-clock profile (issue 35; bench/shm/hop-profile.sh runs it).
# SPDX-License-Identifier: LGPL-2.1-or-later
#
#   hop-profile.py --consumer PID --producer PID --hz F --frames N [--top K]
#
# Each sample is 1/F s of one CPU; a side's figure is its samples x 1e6/F
# divided by the frames that crossed during the profile (N): us per frame,
# comparable with shm-bench's getrusage figures (sampling adds a little).
import argparse
import collections
import re
import sys

LINE = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+([0-9a-f]+)\s+(.*?)\s*\((.*)\)\s*$')


def area(dso, sym):
    d = dso.rsplit('/', 1)[-1]
    if 'kernel' in d:
        return 'kernel'
    for key, name in (('libgstpinnedshm', 'pinnedshm plugin'),
                      ('libpinnedflow', 'libpinnedflow'),
                      ('libgstshm', 'gst shm plugin'),
                      ('libgstunixfd', 'gst unixfd plugin'),
                      ('libgstcoreelements', 'coreelements (fakesink)'),
                      ('libgstbase', 'libgstbase'),
                      ('libgstvideo', 'libgstvideo'),
                      ('libgstallocators', 'libgstallocators'),
                      ('libgstreamer', 'libgstreamer'),
                      ('libgobject', 'gobject'), ('libglib', 'glib'),
                      ('libc.so', 'libc'), ('ld-linux', 'ld.so'),
                      ('shm-bench', 'shm-bench itself')):
        if key in d:
            return name
    return d or '?'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--consumer', type=int, required=True)
    ap.add_argument('--producer', type=int, required=True)
    ap.add_argument('--hz', type=float, required=True)
    ap.add_argument('--frames', type=int, required=True)
    ap.add_argument('--top', type=int, default=12)
    a = ap.parse_args()
    us = 1e6 / a.hz / a.frames
    side = {a.consumer: 'consumer', a.producer: 'producer'}
    threads = collections.Counter()
    areas = collections.Counter()
    syms = collections.Counter()
    total = collections.Counter()
    for line in sys.stdin:
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, tid, _, sym, dso = m.groups()
        s = side.get(int(pid))
        if s is None:
            continue
        total[s] += 1
        threads[(s, comm if int(tid) != int(pid) else 'main')] += 1
        areas[(s, area(dso, sym))] += 1
        syms[(s, sym if sym != '[unknown]' else '[unknown] ' +
              dso.rsplit('/', 1)[-1])] += 1
    for s in ('producer', 'consumer'):
        print('%s: %.1f us per frame (%d samples)' % (s, total[s] * us,
                                                      total[s]))
        print('  threads: ' + ', '.join(
            '%s %.1f' % (k[1], v * us) for k, v in threads.most_common()
            if k[0] == s))
        print('  by library: ' + ', '.join(
            '%s %.1f' % (k[1], v * us) for k, v in areas.most_common()
            if k[0] == s))
        print('  top functions (us per frame):')
        for (k, v) in [kv for kv in syms.most_common() if kv[0][0] == s][
                :a.top]:
            print('    %6.2f  %s' % (v * us, k[1]))


if __name__ == '__main__':
    main()
