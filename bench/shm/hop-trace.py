#!/usr/bin/python3
# Splits the latency of each frame of a paced shm-bench run into its steps,
# from a perf trace of the scheduler and of every syscall (issue 13).
# SPDX-License-Identifier: LGPL-2.1-or-later
#
#   perf script -F comm,tid,cpu,time,event,trace -i perf.data | hop-trace.py
#
# For every frame (the producer's pacing thread leaving clock_nanosleep):
#   push  pacing thread wakes -> the FRAME's send() (or, with a frame
#         ring, the doorbell's write()) starts (stamp, fill, gst_pad_push,
#         the sink's render up to the send)
#   send  the send syscall itself (it wakes the consumer's thread)
#   wire  send returns -> the consumer's thread returns from its wait
#         (the first poll, ppoll, epoll_wait or recv of that thread to
#         return > 0: the consumer's wake-up, and the producer's work after
#         the send when both run on one CPU)
#   cons  that return -> the consumer's next send (a release, an ACK):
#         read, wrap, push through the probe and fakesink. The element
#         pairs' consumers release the frame before this one there (fakesink
#         keeps the last sample, so the new frame's push frees the old);
#         the node API's releases this one.
#   total pacing thread wakes -> that send
# (Until issue 35 "wire" ended at the consumer's recv; pinnedshmsrc drains
# its frame doorbell with a recv after the frame's push, so the split now
# ends it at the wake-up for every transport.)
# Printed as p25 / p50 / p75 in microseconds. The consumer's receiving
# thread is named "src:src" (GStreamer's sources), or give its name as the
# first argument ("node": the node API's receiving thread in shm-bench).
import re
import sys

LINE = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
# sendto, sendmsg; write: the frame ring's doorbells (an eventfd), which
# with a ring take the FRAME's and the RELEASE's place
SEND = ('44', '46', '1')
# recvfrom, recvmsg; read: the consumer's read of the frame doorbell; and
# the waits before them: poll, ppoll, epoll_wait, epoll_pwait
RECV = ('45', '47', '0', '7', '271', '232', '281')
NANOSLEEP = '230'
CONSUMER = sys.argv[1] if len(sys.argv) > 1 else 'src:src'


def parse(stream):
    ev = []
    for line in stream:
        m = LINE.match(line)
        if not m or m.group(1) == 'perf':
            continue
        comm, tid, cpu, t, name, rest = m.groups()
        kind = {'raw_syscalls:sys_enter': 'in',
                'raw_syscalls:sys_exit': 'out'}.get(name)
        if kind is None:
            continue
        fields = rest.split()
        ev.append((float(t) * 1e6, comm, int(tid), kind, fields[1],
                   fields[-1]))
    return ev


def steps(ev):
    out = {k: [] for k in ('push', 'send', 'wire', 'cons', 'total')}
    n = len(ev)
    for i, (t0, _, tid, kind, nr, _) in enumerate(ev):
        if kind != 'out' or nr != NANOSLEEP:
            continue
        j = i + 1
        while j < n and not (ev[j][2] == tid and ev[j][3] == 'in'
                             and ev[j][4] in SEND + (NANOSLEEP,)):
            j += 1
        if j >= n or ev[j][4] == NANOSLEEP:
            continue
        k = j + 1
        while k < n and not (ev[k][2] == tid and ev[k][3] == 'out'):
            k += 1
        r = k + 1
        while r < n and not (ev[r][1] == CONSUMER and ev[r][3] == 'out'
                             and ev[r][4] in RECV
                             and not ev[r][5].startswith('-')
                             and ev[r][5] != '0'):
            r += 1
        p = r + 1
        while p < n and not (r < n and ev[p][2] == ev[r][2]
                             and ev[p][3] == 'in' and ev[p][4] in SEND):
            p += 1
        if p >= n:
            break
        if ev[p][0] - t0 > 5000:    # not this frame's (a gap, a stall)
            continue
        out['push'].append(ev[j][0] - t0)
        out['send'].append(ev[k][0] - ev[j][0])
        out['wire'].append(ev[r][0] - ev[k][0])
        out['cons'].append(ev[p][0] - ev[r][0])
        out['total'].append(ev[p][0] - t0)
    return out


def main():
    out = steps(parse(sys.stdin))
    if not out['total']:
        sys.exit('no frame found (is the consumer thread named %s?)'
                 % CONSUMER)
    print('%d frames; us p25 / p50 / p75' % len(out['total']))
    for name, v in out.items():
        v = sorted(v)
        q = [v[len(v) // 4], v[len(v) // 2], v[3 * len(v) // 4]]
        print('%-6s %7.1f %7.1f %7.1f' % (name, *q))


if __name__ == '__main__':
    main()
