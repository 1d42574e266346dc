/* pinnedflow: libFuzzer target for the producer's handling of a consumer
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Per input, a fresh producer (socket in a private temporary directory, so
 * frame seqs are 1..4 every time): a raw client connects and completes the
 * handshake, the producer publishes 4 frames to it, then the input is sent
 * as packets ([u16 LE length][u8 flags][bytes] records; flag bit 0 attaches
 * a memfd) and the client hangs up. Oracle: no crash; every published frame
 * is released exactly once; after close no fd and no segment is left.
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
static char dir[64], path[108];
static atomic_int released;

static void
on_released (void *user_data, void *token)
{
  atomic_fetch_add (&released, 1);
}

static void
remove_dir (void)
{
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

  for (i = 0; i < 2000 && !cond (); i++)
    pf_test_sleep_ms (1);
  if (!cond ())
    abort ();                   /* the producer did not reclaim */
}

/* Sends; flag bit 0 attaches an (unsealed) memfd. */
static void
send_packet (int sock, const uint8_t * buf, size_t len, unsigned int flags)
{
  int fd = -1;

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
  int fds0 = pf_test_count_fds (), segs0 = pf_segment_count_live ();
  pf_segment *segment;
  size_t pos = 0;
  pf_frame f;
  int sock, i;

  if (dir[0] == '\0') {
    if (pf_test_make_tmpdir (dir, sizeof (dir), "pf-fuzz") < 0)
      abort ();
    snprintf (path, sizeof (path), "%s/sock", dir);
    atexit (remove_dir);
  }
  cfg.socket_path = path;
  cfg.callbacks.frame_released = on_released;
  atomic_store (&released, 0);
  if (pf_producer_new (&cfg, &producer) != 0 ||
      pf_segment_new ("fuzz", 65536, 0, &segment) != 0)
    abort ();

  if ((sock = pf_test_connect (path)) < 0)
    abort ();
  send_packet (sock, buf, pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0), 0);
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
  pf_producer_close (producer);
  if (atomic_load (&released) != expected)
    abort ();
  pf_producer_unref (producer);
  pf_segment_unref (segment);
  if (pf_test_count_fds () != fds0 || pf_segment_count_live () != segs0)
    abort ();
  return 0;
}
