/* pinnedflow: libFuzzer target for the producer's handling of a consumer
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One producer (socket in a private temporary directory) for the whole
 * run, made at the first input: creating one per input (a thread, a
 * listening socket, a segment) capped the run at about 1000 inputs/s. Per
 * input a raw client connects and completes the handshake, the producer
 * publishes 4 frames to it, then the input is sent as packets ([u16 LE
 * length][u8 flags][bytes] records; flag bit 0 attaches a memfd) and the
 * client hangs up. The input's frame seqs are relative: a well-formed
 * RELEASE of seq k (1..4 in the corpus) releases this input's k-th frame,
 * whatever the producer's seq counter reached, so an input means the same
 * thing every time it runs. The client asks for the delivery size % 3
 * (default, every frame, newest frame). Oracle: no crash; every published frame is
 * released exactly once; once the client is reaped no fd and no segment is
 * left beyond the producer's own.
 */
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-protocol-private.h>
#include "pf-test-util.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static pf_producer *producer;
static pf_segment *segment;
static char dir[64], path[108];
static atomic_int released;
/* the producer's seq before this input's first frame */
static uint64_t seq_base;

static void
on_released (void *user_data, void *token)
{
  atomic_fetch_add (&released, 1);
}

static void
shut_down (void)
{
  pf_producer_close (producer);
  pf_producer_unref (producer);
  pf_segment_unref (segment);
  rmdir (dir);
}

static int expected;

static int
all_released (void)
{
  return atomic_load (&released) >= expected;
}

static int
no_client (void)
{
  return pf_producer_get_n_clients (producer) == 0;
}

static void
wait_for (int (*cond) (void))
{
  int i;

  /* a hang guard of 2 s, in steps short enough not to set the pace */
  for (i = 0; i < 40000 && !cond (); i++) {
    struct timespec ts = { 0, 50000 };

    nanosleep (&ts, NULL);
  }
  if (!cond ())
    abort ();                   /* the producer did not reclaim */
}

/* Sends; flag bit 0 attaches an (unsealed) memfd. A well-formed RELEASE
 * gets this input's seq base added (see the top). */
static void
send_packet (int sock, const uint8_t * buf, size_t len, unsigned int flags)
{
  uint8_t copy[sizeof (struct pf_msg_release)];
  struct pf_msg m;
  int fd = -1;

  if (len == sizeof (copy) && pf_msg_parse (buf, len, 0, &m) == 0
      && m.type == PF_MSG_RELEASE) {
    pf_msg_write_release (copy, m.u.release.seq + seq_base);
    buf = copy;
  }
  if ((flags & 1) && (fd = pf_test_memfd (4096, 0)) < 0)
    abort ();
  (void) pf_test_send_fds (sock, buf, len, &fd, fd >= 0 ? 1 : 0);
  if (fd >= 0)
    close (fd);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static uint8_t buf[PF_MAX_MSG_SIZE];
  pf_producer_config cfg = {.perms = 0600,.max_client_frames = 8 };
  int fds0, segs0;
  size_t pos = 0;
  pf_producer_frame f;
  int sock, i;

  if (producer == NULL) {
    if (pf_test_make_tmpdir (dir, sizeof (dir), "pf-fuzz") < 0)
      abort ();
    snprintf (path, sizeof (path), "%s/sock", dir);
    cfg.socket_path = path;
    cfg.callbacks.frame_released = on_released;
    if (pf_producer_new (&cfg, &producer) != 0 ||
        pf_segment_new ("fuzz", 65536, 0, &segment) != 0)
      abort ();
    atexit (shut_down);
    /* One frame nobody receives: the producer takes its own dup of the
     * segment's fd now, not inside the first input's fd count. */
    memset (&f, 0, sizeof (f));
    f.n_chunks = 1;
    f.chunks[0].segment_id = pf_segment_get_id (segment);
    f.chunks[0].size = 4096;
    if (pf_producer_publish (producer, &f, &segment, NULL) != 0)
      abort ();
    seq_base = 1;
  }
  fds0 = pf_test_count_fds ();
  segs0 = pf_segment_count_live ();
  atomic_store (&released, 0);

  if ((sock = pf_test_connect (path)) < 0)
    abort ();
  /* the delivery it asks for: derived from the input, so that each one
   * means the same every run */
  send_packet (sock, buf, pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION,
          PF_ROLE_CONSUMER, 0, (uint32_t) (size % 3), 0), 0);
  if (recv (sock, buf, sizeof (buf), 0) != sizeof (struct pf_msg_hello))
    abort ();

  memset (&f, 0, sizeof (f));
  f.n_chunks = 1;
  f.chunks[0].segment_id = pf_segment_get_id (segment);
  f.chunks[0].size = 4096;
  expected = 0;
  for (i = 0; i < 4; i++) {
    int r;

    f.chunks[0].offset = (uint64_t) i *4096;
    if ((r = pf_producer_publish (producer, &f, &segment, NULL)) != 1)
      abort ();
    expected += r;
  }
  /* the frames just published are seq_base + 1 .. seq_base + 4 */

  while (pos + 3 <= size) {
    size_t len = data[pos] | (size_t) data[pos + 1] << 8;
    unsigned int flags = data[pos + 2];

    pos += 3;
    if (len > size - pos)
      len = size - pos;
    send_packet (sock, data + pos, len, flags);
    pos += len;
  }
  close (sock);
  /* Hang-up: everything comes back, exactly once. */
  wait_for (no_client);
  wait_for (all_released);
  if (atomic_load (&released) != expected)
    abort ();
  seq_base += 4;
  if (pf_test_count_fds () != fds0 || pf_segment_count_live () != segs0)
    abort ();
  return 0;
}
