/* pinnedflow: libFuzzer target for the consumer's message handling
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Input: a sequence of records, each [u16 LE length][u8 fd flags][length
 * bytes], sent one packet each over a SOCK_SEQPACKET socketpair to a real
 * pf_consumer (after a valid producer HELLO, max_held 4). Flags: bit 0
 * attaches a sealed 64 KiB memfd, bit 1 an unsealed one, bit 2 a pipe;
 * bit 3 keeps the frames of this packet held (up to 8, released at the end),
 * bit 4 also releases a seq not held (UINT64_MAX - 1, unless kept), bit 5
 * sends the next packet before draining (so that packets queue up: a
 * newest-frame consumer then skips stale FRAMEs). After each packet the
 * consumer (a version-2 one, pf_consumer_new_from_fd_with(): STREAM events,
 * the delivery the producer's STREAMs say) is drained; every frame's chunks
 * are read end to end and released (or kept). The consumer asks for device
 * segments (DEVICE_SEGMENT_ADD) but has no import function: it keeps them
 * refused and releases their frames unseen. Oracle: no crash, no SIGBUS, held frames stay readable after a
 * failure, and after the consumer is gone no fd and no segment is left.
 */
#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-protocol-private.h>
#include "pf-test-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

#define MEMFD_SIZE 65536

/* Attaches fds as @flags asks (bit 0: a sealed memfd, bit 1: an unsealed
 * one, bit 2: a pipe) and sends; closes its copies. */
static void
send_packet (int sock, const uint8_t * buf, size_t len, unsigned int flags)
{
  int fds[3], n = 0, p[2], i;

  if (flags & 1)
    fds[n++] = pf_test_memfd (MEMFD_SIZE, 1);
  if (flags & 2)
    fds[n++] = pf_test_memfd (MEMFD_SIZE, 0);
  if ((flags & 4) && pipe2 (p, O_CLOEXEC) == 0) {
    fds[n++] = p[0];
    close (p[1]);
  }
  for (i = 0; i < n; i++)
    if (fds[i] < 0)
      abort ();
  /* May fail once the consumer hung up: that is fine. */
  (void) pf_test_send_fds_flags (sock, buf, len, fds, n, MSG_DONTWAIT);
  for (i = 0; i < n; i++)
    close (fds[i]);
}

static volatile uint8_t sink;

#define MAX_KEPT 8
static pf_event kept[MAX_KEPT];
static unsigned int n_kept;

static void
touch (const pf_event * ev)
{
  unsigned int i;

  for (i = 0; i < ev->frame.n_chunks; i++) {
    const volatile uint8_t *d = ev->data[i];

    sink = d[0];
    sink = d[ev->frame.chunks[i].size - 1];
  }
}

/* Whether a frame of @seq is among those kept: the only frames held (the
 * others are released as soon as they are read). */
static int
is_kept (uint64_t seq)
{
  unsigned int i;

  for (i = 0; i < n_kept; i++)
    if (kept[i].frame.seq == seq)
      return 1;
  return 0;
}

static int
drain (pf_consumer * c, unsigned int flags)
{
  pf_event ev, ev2;
  int res, r;

  /* A seq never received: the producer may well have sent UINT64_MAX - 1
   * (found by the fuzzer), then it is held and releasing it is fine. */
  if ((flags & 16) && !is_kept (UINT64_MAX - 1)
      && pf_consumer_release (c, UINT64_MAX - 1) != -ENOENT)
    abort ();
  while ((res = pf_consumer_receive (c, 0, &ev)) == 1) {
    if (ev.type == PF_EVENT_FRAME) {
      touch (&ev);
      if ((flags & 8) && n_kept < MAX_KEPT) {
        kept[n_kept++] = ev;
        continue;
      }
      /* -EPIPE: the connection failed while newer frames were read past
       * this one (newest frame); the frame itself stays valid */
      r = pf_consumer_release (c, ev.frame.seq);
      if (r != 0 && (r != -EPIPE || pf_consumer_receive (c, 0, &ev2) >= 0))
        abort ();
    } else if (ev.type == PF_EVENT_STREAM) {
      if (ev.stream.delivery != PF_DELIVERY_EVERY_FRAME &&
          ev.stream.delivery != PF_DELIVERY_NEWEST_FRAME)
        abort ();
    } else if (ev.type == PF_EVENT_CAPS) {
      if (ev.caps == NULL || strlen (ev.caps) > PF_MAX_CAPS_LEN)
        abort ();
    }
    pf_consumer_event_clear (&ev);
  }
  if (res < 0 && pf_consumer_get_error (c)[0] == '\0')
    abort ();
  return res;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static uint8_t hello[64], release[PF_MAX_MSG_SIZE];
  static const pf_consumer_options device_opts = {
    .flags = PF_CONSUMER_OPTION_DEVICE_SEGMENTS
  };
  int fds0 = pf_test_count_fds (), segs0 = pf_segment_count_live (), sv[2];
  pf_consumer *c = NULL;
  size_t pos = 0;

  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    abort ();
  send_packet (sv[1], hello, pf_msg_write_hello (hello, PF_ROLE_PRODUCER, 4,
          1), 0);
  /* device segments asked for, imported by nobody (a consumer without
   * CUDA): DEVICE_SEGMENT_ADDs are parsed and kept refused, their frames
   * released unseen */
  if (pf_consumer_new_from_fd_with (sv[0], 1000, &device_opts, &c) < 0)
    abort ();
  /* Discard the consumer's HELLO. */
  if (recv (sv[1], hello, sizeof (hello), 0) != 40)
    abort ();

  while (pos + 3 <= size) {
    size_t len = data[pos] | (size_t) data[pos + 1] << 8;
    unsigned int flags = data[pos + 2];

    pos += 3;
    if (len > size - pos)
      len = size - pos;
    send_packet (sv[1], data + pos, len, flags);
    pos += len;
    if ((flags & 32) && pos + 3 <= size)
      continue;
    if (drain (c, flags) < 0)
      break;
    /* Read the releases, like a producer, so the consumer never blocks. */
    while (recv (sv[1], release, sizeof (release), MSG_DONTWAIT) > 0);
  }
  /* Kept frames are intact whatever happened, and release cleanly. */
  while (n_kept > 0) {
    pf_event *ev = &kept[--n_kept];
    int r;

    touch (ev);
    r = pf_consumer_release (c, ev->frame.seq);
    if (r != 0 && r != -EPIPE)
      abort ();
    pf_consumer_event_clear (ev);
  }
  pf_consumer_unref (c);
  close (sv[1]);
  if (pf_test_count_fds () != fds0 || pf_segment_count_live () != segs0) {
    fprintf (stderr, "leak: fds %d -> %d, segments %d -> %d\n", fds0,
        pf_test_count_fds (), segs0, pf_segment_count_live ());
    abort ();
  }
  return 0;
}
