/* Bridge suite: hostile raw peers against the node API
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: test-hostile CASE
 *   producer  a raw "producer" sends forged fds (pipe, unsealed memfd, short
 *             memfd, extra fds), malformed messages and video meta pointing
 *             past the frame to a pf_node_consumer: each gives -EPROTO with
 *             a message, no crash, no fd or mapping left behind
 *   consumer  a raw "consumer" sends garbage, forged fds and bad messages to
 *             a pf_node_producer: it drops that peer, keeps its fds and
 *             slots, and keeps serving real consumers
 */
#include "bridge-check.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-protocol-private.h>

static int
listen_on (const char *path)
{
  struct sockaddr_un addr = { 0 };
  int s = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

  CHECK (s >= 0);
  addr.sun_family = AF_UNIX;
  snprintf (addr.sun_path, sizeof (addr.sun_path), "%s", path);
  unlink (path);
  CHECK_INT (bind (s, (struct sockaddr *) &addr, sizeof (addr)), ==, 0);
  CHECK_INT (listen (s, 4), ==, 0);
  return s;
}

static int
connect_to (const char *path)
{
  int s = pf_test_connect (path);

  CHECK_MSG (s >= 0, "connect %s: %s", path, strerror (-s));
  return s;
}

/* Reads until the peer hangs up (1) or 10 s pass (0). */
static int
wait_hangup (int s)
{
  return pf_test_wait_hangup (s, 10000) != 0;
}

static int
sealed_memfd (uint64_t size, int seal)
{
  int fd = pf_test_memfd (size, seal);

  CHECK (fd >= 0);
  return fd;
}

/* ------------------------------------------------------------------------ */
/* A raw producer                                                            */
/* ------------------------------------------------------------------------ */

enum attack
{
  PIPE_FD,
  UNSEALED_MEMFD,
  SHORT_MEMFD,
  MISSING_FD,
  EXTRA_FDS,
  UNKNOWN_SEGMENT,
  CHUNK_OUTSIDE,
  TRUNCATED_FRAME,
  BAD_TYPE,
  CAPS_WITH_NUL,
  BAD_VIDEO_META,
  N_ATTACKS
};

static const char *attack_names[] = {
  "SEGMENT_ADD with a pipe fd", "SEGMENT_ADD with an unsealed memfd",
  "SEGMENT_ADD claiming more than the memfd holds",
  "SEGMENT_ADD without its fd", "SEGMENT_ADD with three fds",
  "FRAME in an unknown segment", "FRAME chunk outside its segment",
  "truncated FRAME", "unknown message type", "CAPS with a NUL inside",
  "video meta with rows past the frame",
};

struct raw_producer
{
  int listen_fd;
  enum attack attack;
};

static void
make_frame (struct pf_msg_frame *f, uint64_t seg, uint64_t off, uint64_t size)
{
  memset (f, 0, sizeof (*f));
  f->seq = 1;
  f->n_chunks = 1;
  f->chunks[0].segment_id = seg;
  f->chunks[0].offset = off;
  f->chunks[0].size = size;
  f->pts = f->dts = f->duration = f->clock_pts = PF_TIME_NONE;
  f->offset = f->offset_end = UINT64_MAX;
}

static void *
raw_producer_run (void *data)
{
  struct raw_producer *rp = data;
  static uint8_t buf[PF_MAX_MSG_SIZE];
  struct pf_msg_frame frame;
  struct pf_msg_header *hdr = (struct pf_msg_header *) buf;
  int s, fds[3], n_fds = 0, i;
  size_t len;

  s = accept4 (rp->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (s < 0)
    return NULL;
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 0x1234);
  pf_test_send_fds (s, buf, len, NULL, 0);

  switch (rp->attack) {
    case PIPE_FD:
      CHECK_INT (pipe2 (fds, O_CLOEXEC), ==, 0);
      close (fds[1]);
      n_fds = 1;
      len = pf_msg_write_segment_add (buf, 1, 4096);
      break;
    case UNSEALED_MEMFD:
      fds[0] = sealed_memfd (4096, 0);
      n_fds = 1;
      len = pf_msg_write_segment_add (buf, 1, 4096);
      break;
    case SHORT_MEMFD:
      fds[0] = sealed_memfd (4096, 1);
      n_fds = 1;
      len = pf_msg_write_segment_add (buf, 1, 1 << 20);
      break;
    case MISSING_FD:
      len = pf_msg_write_segment_add (buf, 1, 4096);
      break;
    case EXTRA_FDS:
      for (i = 0; i < 3; i++)
        fds[i] = sealed_memfd (4096, 1);
      n_fds = 3;
      len = pf_msg_write_segment_add (buf, 1, 4096);
      break;
    case UNKNOWN_SEGMENT:
      make_frame (&frame, 77, 0, 16);
      len = pf_msg_write_frame (buf, &frame);
      break;
    case CHUNK_OUTSIDE:
      /* A valid segment first, then a frame reaching past its end. */
      fds[0] = sealed_memfd (4096, 1);
      len = pf_msg_write_segment_add (buf, 1, 4096);
      pf_test_send_fds (s, buf, len, fds, 1);
      close (fds[0]);
      make_frame (&frame, 1, 4000, 200);
      len = pf_msg_write_frame (buf, &frame);
      break;
    case TRUNCATED_FRAME:
      make_frame (&frame, 1, 0, 16);
      pf_msg_write_frame (buf, &frame);
      len = 100;
      hdr->size = 100;
      break;
    case BAD_TYPE:
      len = pf_msg_write_eos (buf);
      hdr->type = 99;
      break;
    case CAPS_WITH_NUL:
      len = pf_msg_write_caps (buf, 1, "video/x-raw, format=RGBA");
      buf[sizeof (struct pf_msg_caps) + 5] = '\0';
      break;
    case BAD_VIDEO_META:
    default:
      /* Valid caps, segment and chunk; the strides lead 16 rows of a
       * 1 KiB frame far past it (the transport cannot know; pf-node can). */
      len = pf_msg_write_caps (buf, 1, "video/x-raw, format=(string)RGBA, "
          "width=(int)16, height=(int)16, framerate=(fraction)30/1");
      pf_test_send_fds (s, buf, len, NULL, 0);
      fds[0] = sealed_memfd (65536, 1);
      len = pf_msg_write_segment_add (buf, 1, 65536);
      pf_test_send_fds (s, buf, len, fds, 1);
      close (fds[0]);
      make_frame (&frame, 1, 0, 1024);
      frame.caps_seq = 1;
      frame.meta_flags = PF_FRAME_HAS_VIDEO_META;
      frame.width = frame.height = 16;
      frame.n_planes = 1;
      frame.plane_stride[0] = 4096;
      len = pf_msg_write_frame (buf, &frame);
      break;
  }
  pf_test_send_fds (s, buf, len, fds, n_fds);
  for (i = 0; i < n_fds; i++)
    close (fds[i]);
  wait_hangup (s);              /* until the consumer gives up on us */
  close (s);
  return NULL;
}

static void
test_raw_producer (void)
{
  const char *path = bc_path ("rawprod.sock");
  struct raw_producer rp;
  pf_node_consumer *c;
  pf_node_frame *f;
  pthread_t th;
  int fds0, res, a;

  for (a = 0; a < N_ATTACKS; a++) {
    fds0 = pf_test_count_fds ();
    rp.listen_fd = listen_on (path);
    rp.attack = (enum attack) a;
    CHECK_INT (pthread_create (&th, NULL, raw_producer_run, &rp), ==, 0);
    CHECK_INT (pf_node_consumer_new (path, 10000, &c), ==, 0);
    res = pf_node_consumer_next (c, 10000, &f);
    CHECK_MSG (res == -EPROTO, "%s: next = %d (%s)", attack_names[a], res,
        pf_node_consumer_get_error (c));
    CHECK (f == NULL);
    CHECK (strlen (pf_node_consumer_get_error (c)) > 0);
    printf ("%-45s -> %s\n", attack_names[a], pf_node_consumer_get_error (c));
    /* Once broken, it stays broken. */
    res = pf_node_consumer_next (c, 100, &f);
    CHECK (res < 0 && f == NULL);
    pf_node_consumer_free (c);
    pthread_join (th, NULL);
    close (rp.listen_fd);
    unlink (path);
    CHECK_INT (pf_segment_count_live (), ==, 0);
    CHECK_MSG (pf_test_count_fds () == fds0, "%s: %d fds open, %d before",
        attack_names[a], pf_test_count_fds (), fds0);
  }
}

/* ------------------------------------------------------------------------ */
/* A raw consumer                                                            */
/* ------------------------------------------------------------------------ */

static void
check_still_serving (pf_node_producer * p, const char *path, uint8_t mark)
{
  pf_node_consumer *c;
  pf_node_frame *f;
  pf_node_loan loan;
  int res;

  CHECK_INT (pf_node_consumer_new (path, 5000, &c), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  CHECK_INT (pf_node_producer_loan (p, 5000, &loan), ==, 0);
  memset (loan.data, mark, 64);
  loan.size = 64;
  CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);
  res = pf_node_consumer_next (c, 10000, &f);
  CHECK_MSG (res == 1, "next = %d (%s)", res, pf_node_consumer_get_error (c));
  CHECK (((const uint8_t *) f->data)[63] == mark && f->size == 64);
  pf_node_frame_release (f);
  pf_node_consumer_free (c);
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
}

static void
wait_no_clients (pf_node_producer * p)
{
  int i;

  for (i = 0; i < 1000 && pf_node_producer_get_n_clients (p) > 0; i++)
    usleep (10000);
  CHECK_INT (pf_node_producer_get_n_clients (p), ==, 0);
}

static void
test_raw_consumer (void)
{
  const char *path = bc_path ("rawcons.sock");
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *p;
  pf_node_loan loan;
  uint8_t buf[PF_MAX_MSG_SIZE + 64];
  struct pf_msg_header *hdr = (struct pf_msg_header *) buf;
  size_t len;
  int s, fd, fds0 = pf_test_count_fds (), fds1;

  cfg.socket_path = path;
  cfg.n_slots = 2;
  cfg.slot_size = 4096;
  CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (pf_node_producer_set_caps (p, "application/x-test"), ==, 0);
  /* Once the pool was published the transport keeps a dup of its fd. */
  check_still_serving (p, path, 0);
  wait_no_clients (p);
  fds1 = pf_test_count_fds ();

  /* 1. Garbage instead of HELLO. */
  s = connect_to (path);
  CHECK (send (s, "garbage", 7, MSG_NOSIGNAL) == 7);
  CHECK_MSG (wait_hangup (s), "garbage: not dropped");
  close (s);
  wait_no_clients (p);
  check_still_serving (p, path, 1);

  /* 2. A HELLO with the wrong magic. */
  s = connect_to (path);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  ((struct pf_msg_hello *) buf)->magic = 0xdeadbeef;
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  CHECK_MSG (wait_hangup (s), "bad magic: not dropped");
  close (s);

  /* 3. A RELEASE carrying a forged fd (a memfd of ours). */
  s = connect_to (path);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  fd = sealed_memfd (4096, 1);
  len = pf_msg_write_release (buf, 1);
  CHECK_INT (pf_test_send_fds (s, buf, len, &fd, 1), ==, 0);
  close (fd);
  CHECK_MSG (wait_hangup (s), "forged fd: not dropped");
  close (s);

  /* 4. An oversized packet. */
  s = connect_to (path);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  memset (buf, 0x5a, sizeof (buf));
  hdr->type = PF_MSG_RELEASE;
  hdr->size = sizeof (buf);
  hdr->n_fds = 0;
  hdr->reserved = 0;
  CHECK_INT (pf_test_send_fds (s, buf, sizeof (buf), NULL, 0), ==, 0);
  CHECK_MSG (wait_hangup (s), "oversized: not dropped");
  close (s);

  /* 5. A producer-only message (FRAME) from a consumer. */
  s = connect_to (path);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  len = pf_msg_write_eos (buf);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  CHECK_MSG (wait_hangup (s), "EOS from a consumer: not dropped");
  close (s);

  /* 6. Releasing a frame it never got, while holding a real one: the
   * peer is dropped and the frame it held is reclaimed. */
  s = connect_to (path);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  CHECK_INT (pf_node_producer_loan (p, 5000, &loan), ==, 0);
  loan.size = 16;
  CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 1);
  len = pf_msg_write_release (buf, 1000);
  CHECK_INT (pf_test_send_fds (s, buf, len, NULL, 0), ==, 0);
  CHECK_MSG (wait_hangup (s), "bogus release: not dropped");
  close (s);
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 2);

  wait_no_clients (p);
  check_still_serving (p, path, 2);
  wait_no_clients (p);
  CHECK_MSG (pf_test_count_fds () == fds1, "%d fds open, %d before the attacks",
      pf_test_count_fds (), fds1);
  pf_node_producer_free (p);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s producer|consumer\n", argv[0]);
    return 2;
  }
  bc_init ();
  if (strcmp (argv[1], "producer") == 0)
    test_raw_producer ();
  else if (strcmp (argv[1], "consumer") == 0)
    test_raw_consumer ();
  else
    return 2;
  printf ("ok %s\n", argv[1]);
  return 0;
}
