/* pinnedflow transport: hostile peers (forged fds, malformed messages)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The peer here is written with plain sendmsg()/recv(): it can send anything.
 * After every violation the victim must fail with a clear error, close every
 * fd it received and keep nothing mapped: fd count and live segments return
 * to their baseline.
 */
#include "harness.h"
#include "pf-test-util.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- a raw peer ---- */

static void
put32 (uint8_t * b, size_t off, uint32_t v)
{
  v = htole32 (v);
  memcpy (b + off, &v, 4);
}

/* A memfd of @size bytes: sealed SHRINK|GROW if @seal. */
static int
make_memfd (size_t size, int seal)
{
  int fd = pf_test_memfd (size, seal);

  CHECK (fd >= 0);
  return fd;
}

/* ---- consumer against a hostile producer ---- */

typedef struct
{
  pf_consumer *c;
  int peer;
  int fds0, segs0;
  uint8_t buf[PF_MAX_MSG_SIZE + 256];
} victim;

static void
victim_start (victim * v, uint32_t max_held)
{
  int sv[2], res;
  uint8_t hello[64];
  ssize_t n;

  v->fds0 = t_count_fds ();
  v->segs0 = pf_segment_count_live ();
  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  v->peer = sv[1];
  CHECK_INT (pf_test_send_fds (v->peer, v->buf, pf_msg_write_hello (v->buf,
              PF_ROLE_PRODUCER, max_held, 42), NULL, 0), ==, 0);
  res = pf_consumer_new_from_fd (sv[0], 5000, &v->c);
  CHECK_INT (res, ==, 0);
  CHECK_INT (pf_consumer_get_session_id (v->c), ==, 42);
  n = recv (v->peer, hello, sizeof (hello), 0);
  CHECK_INT (n, ==, 40);
  {
    struct pf_msg m;
    CHECK_INT (pf_msg_parse (hello, (size_t) n, 0, &m), ==, 0);
    CHECK_INT (m.u.hello.role, ==, PF_ROLE_CONSUMER);
  }
}

/* Expects the consumer to fail with @err and @needle in its error; then
 * checks nothing received is left. */
static void
victim_expect_fail_held (victim * v, int err, const char *needle,
    int held_segments);

static void
victim_expect_fail (victim * v, int err, const char *needle)
{
  victim_expect_fail_held (v, err, needle, 0);
}

/* @held_segments: segments the test keeps mapped through its events. */
static void
victim_expect_fail_held (victim * v, int err, const char *needle,
    int held_segments)
{
  pf_event ev;
  int res;

  res = pf_consumer_receive (v->c, 5000, &ev);
  if (res != err || strstr (pf_consumer_get_error (v->c), needle) == NULL) {
    fprintf (stderr, "want %d '%s', got %d '%s'\n", err, needle, res,
        pf_consumer_get_error (v->c));
    t_fail ();
  }
  /* The connection is down: the peer sees the hang-up. */
  CHECK_INT (recv (v->peer, v->buf, sizeof (v->buf), 0), ==, 0);
  /* Every fd received was closed; only the socket pair is left. */
  CHECK_INT (t_count_fds (), ==, v->fds0 + 2 + held_segments);
  pf_consumer_unref (v->c);
  close (v->peer);
  CHECK_INT (t_count_fds (), ==, v->fds0 + held_segments);
  CHECK_INT (pf_segment_count_live (), ==, v->segs0 + held_segments);
}

static void
send_segment (victim * v, uint64_t id, uint64_t claimed, int fd)
{
  size_t n = pf_msg_write_segment_add (v->buf, id, claimed);

  CHECK_INT (pf_test_send_fds (v->peer, v->buf, n, &fd, 1), ==, 0);
  close (fd);
}

static void
frame_init (struct pf_msg_frame *f, uint64_t seq, uint64_t seg, uint64_t off,
    uint64_t size)
{
  memset (f, 0, sizeof (*f));
  f->seq = seq;
  f->n_chunks = 1;
  f->chunks[0].segment_id = seg;
  f->chunks[0].offset = off;
  f->chunks[0].size = size;
}

static void
send_frame (victim * v, const struct pf_msg_frame *f)
{
  CHECK_INT (pf_test_send_fds (v->peer, v->buf, pf_msg_write_frame (v->buf, f),
          NULL, 0), ==, 0);
}

static void
test_seg_unsealed (void)
{
  victim v;

  victim_start (&v, 4);
  send_segment (&v, 1, 4096, make_memfd (4096, 0));
  victim_expect_fail (&v, -EPROTO, "not sealed");
}

static void
test_seg_size_lie (void)
{
  victim v;

  victim_start (&v, 4);
  send_segment (&v, 1, 8192, make_memfd (4096, 1));
  victim_expect_fail (&v, -EPROTO, "smaller");
}

static void
test_seg_truncated (void)
{
  victim v;
  int fd;

  victim_start (&v, 4);
  /* Shrunk after the fact, then sealed: what the peer claims is gone. */
  fd = make_memfd (65536, 0);
  CHECK_INT (ftruncate (fd, 100), ==, 0);
  CHECK_INT (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), ==, 0);
  send_segment (&v, 1, 65536, fd);
  victim_expect_fail (&v, -EPROTO, "smaller");
}

static void
test_seg_pipe (void)
{
  victim v;
  int p[2];

  victim_start (&v, 4);
  CHECK_INT (pipe (p), ==, 0);
  send_segment (&v, 1, 4096, p[0]);
  close (p[1]);
  victim_expect_fail (&v, -EPROTO, "sealing");
}

static void
test_seg_no_sealing (void)
{
  victim v;
  int fd;

  victim_start (&v, 4);
  fd = memfd_create ("nos", MFD_CLOEXEC);       /* F_SEAL_SEAL from birth */
  CHECK_INT (ftruncate (fd, 4096), ==, 0);
  send_segment (&v, 1, 4096, fd);
  victim_expect_fail (&v, -EPROTO, "not sealed");
}

static void
test_seg_two_fds (void)
{
  victim v;
  int fds[2];
  size_t n;

  victim_start (&v, 4);
  fds[0] = make_memfd (4096, 1);
  fds[1] = make_memfd (4096, 1);
  n = pf_msg_write_segment_add (v.buf, 1, 4096);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, n, fds, 2), ==, 0);
  close (fds[0]);
  close (fds[1]);
  victim_expect_fail (&v, -EPROTO, "2 fds attached");
}

static void
test_seg_no_fd (void)
{
  victim v;

  victim_start (&v, 4);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_segment_add (v.buf,
              1, 4096), NULL, 0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "0 fds attached");
}

static void
test_many_fds (void)
{
  victim v;
  int fds[24], i;

  victim_start (&v, 4);
  for (i = 0; i < 24; i++)
    fds[i] = make_memfd (4096, 1);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_segment_add (v.buf,
              1, 4096), fds, 24), ==, 0);
  for (i = 0; i < 24; i++)
    close (fds[i]);
  victim_expect_fail (&v, -EPROTO, "truncated");
}

static void
test_fd_on_frame (void)
{
  victim v;
  struct pf_msg_frame f;
  int fd;

  victim_start (&v, 4);
  send_segment (&v, 1, 4096, make_memfd (4096, 1));
  frame_init (&f, 1, 1, 0, 100);
  fd = make_memfd (4096, 1);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_frame (v.buf, &f),
          &fd, 1), ==, 0);
  close (fd);
  victim_expect_fail (&v, -EPROTO, "1 fds attached");
}

static void
test_fd_on_caps (void)
{
  victim v;
  int fd;

  victim_start (&v, 4);
  fd = make_memfd (4096, 1);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_caps (v.buf, 1,
              "a/b"), &fd, 1), ==, 0);
  close (fd);
  victim_expect_fail (&v, -EPROTO, "fds");
}

static void
test_oversized (void)
{
  victim v;
  int fd;

  victim_start (&v, 4);
  fd = make_memfd (4096, 1);
  memset (v.buf, 0, sizeof (v.buf));
  put32 (v.buf, 0, PF_MSG_CAPS);
  put32 (v.buf, 4, sizeof (v.buf));
  /* Too big for the receive buffer, and with an fd: both dropped. */
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, sizeof (v.buf), &fd, 1), ==, 0);
  close (fd);
  victim_expect_fail (&v, -EPROTO, "larger");
}

static void
test_bad_header (void)
{
  victim v;

  victim_start (&v, 4);
  CHECK_INT (pf_test_send_fds (v.peer, "\1\0\0\0\0\0\0\0", 8, NULL, 0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "shorter than a header");

  victim_start (&v, 4);
  pf_msg_write_eos (v.buf);
  put32 (v.buf, 0, 77);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, 16, NULL, 0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "unknown message type");

  victim_start (&v, 4);
  pf_msg_write_eos (v.buf);
  put32 (v.buf, 4, 24);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, 16, NULL, 0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "header says");
}

static void
test_bad_caps (void)
{
  victim v;
  size_t n;

  victim_start (&v, 4);
  n = pf_msg_write_caps (v.buf, 1, "video/x-raw");
  v.buf[24 + 5] = '\0';
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, n, NULL, 0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "NUL");

  victim_start (&v, 4);
  memset (v.buf, 'a', sizeof (v.buf));
  put32 (v.buf, 0, PF_MSG_CAPS);
  put32 (v.buf, 4, 24 + PF_MAX_CAPS_LEN + 1);
  put32 (v.buf, 8, 0);
  put32 (v.buf, 12, 0);
  put32 (v.buf, 16, 1);
  put32 (v.buf, 20, PF_MAX_CAPS_LEN + 1);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, 24 + PF_MAX_CAPS_LEN + 1, NULL,
          0), ==, 0);
  victim_expect_fail (&v, -EPROTO, "larger");

  /* Caps sequence going backwards. */
  victim_start (&v, 4);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_caps (v.buf, 2,
              "a/b"), NULL, 0), ==, 0);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_caps (v.buf, 2,
              "a/c"), NULL, 0), ==, 0);
  {
    pf_event ev;
    CHECK_INT (pf_consumer_receive (v.c, 5000, &ev), ==, 1);
    CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  }
  victim_expect_fail (&v, -EPROTO, "must increase");
}

static void
test_bad_chunks (void)
{
  static const struct
  {
    uint32_t n_chunks;
    uint64_t seg, off, size;
    const char *needle;
  } cases[] = {
    {0, 1, 0, 100, "chunks"},
    {5, 1, 0, 100, "chunks"},
    {1, 1, 4000, 100, "outside segment"},
    {1, 1, 4096, 1, "outside segment"},
    {1, 1, UINT64_MAX - 10, 100, "overflows"},
    {1, 1, UINT64_MAX, UINT64_MAX, "overflows"},
    {1, 2, 0, 100, "unknown segment"},
    {1, 0, 0, 100, "segment id 0"},
    {1, 1, 0, 0, "empty"},
  };
  unsigned int i;

  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    victim v;
    struct pf_msg_frame f;

    victim_start (&v, 4);
    send_segment (&v, 1, 4096, make_memfd (4096, 1));
    frame_init (&f, 1, cases[i].seg, cases[i].off, cases[i].size);
    f.n_chunks = cases[i].n_chunks;
    send_frame (&v, &f);
    victim_expect_fail (&v, -EPROTO, cases[i].needle);
  }
}

static void
test_bad_planes (void)
{
  victim v;
  struct pf_msg_frame f;

  victim_start (&v, 4);
  send_segment (&v, 1, 4096, make_memfd (4096, 1));
  frame_init (&f, 1, 1, 0, 1000);
  f.meta_flags = PF_FRAME_HAS_VIDEO_META;
  f.n_planes = 2;
  f.plane_offset[1] = 1000;
  send_frame (&v, &f);
  victim_expect_fail (&v, -EPROTO, "outside the frame");
}

/* State violations after valid traffic; what was received stays valid. */
static void
test_state_violations (void)
{
  victim v;
  pf_event held;
  struct pf_msg_frame f;
  const uint8_t *data;
  int k;

  for (k = 0; k < 7; k++) {
    victim_start (&v, 2);
    send_segment (&v, 5, 8192, make_memfd (8192, 1));
    frame_init (&f, 10, 5, 4096, 4096);
    send_frame (&v, &f);
    CHECK_INT (pf_consumer_receive (v.c, 5000, &held), ==, 1);
    CHECK_INT (held.type, ==, PF_EVENT_FRAME);
    data = held.data[0];
    switch (k) {
      case 0:                  /* sequence must increase */
        frame_init (&f, 10, 5, 0, 100);
        send_frame (&v, &f);
        victim_expect_fail_held (&v, -EPROTO, "sequence must increase", 1);
        break;
      case 1:                  /* duplicate segment id */
        send_segment (&v, 5, 4096, make_memfd (4096, 1));
        victim_expect_fail_held (&v, -EPROTO, "announced twice", 1);
        break;
      case 2:                  /* caps the consumer never got */
        frame_init (&f, 11, 5, 0, 100);
        f.caps_seq = 3;
        send_frame (&v, &f);
        victim_expect_fail_held (&v, -EPROTO, "caps 3 unknown", 1);
        break;
      case 3:                  /* over the announced limit of 2 */
        frame_init (&f, 11, 5, 0, 100);
        send_frame (&v, &f);
        frame_init (&f, 12, 5, 0, 100);
        send_frame (&v, &f);
        {
          pf_event e;
          CHECK_INT (pf_consumer_receive (v.c, 5000, &e), ==, 1);
          pf_consumer_event_clear (&e);
        }
        victim_expect_fail_held (&v, -EPROTO, "limit", 1);
        break;
      case 4:                  /* unknown segment removed */
        CHECK_INT (pf_test_send_fds (v.peer, v.buf,
                pf_msg_write_segment_remove (v.buf, 6), NULL, 0), ==, 0);
        victim_expect_fail_held (&v, -EPROTO, "unknown segment 6", 1);
        break;
      case 5:                  /* a producer does not release */
        CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_release (v.buf,
                    10), NULL, 0), ==, 0);
        victim_expect_fail_held (&v, -EPROTO, "unexpected message type 7", 1);
        break;
      case 6:                  /* nor say HELLO twice */
        CHECK_INT (pf_test_send_fds (v.peer, v.buf, pf_msg_write_hello (v.buf,
                    PF_ROLE_PRODUCER, 2, 1), NULL, 0), ==, 0);
        victim_expect_fail_held (&v, -EPROTO, "unexpected message type 1", 1);
        break;
    }
    /* The held frame is still readable after the connection failed. */
    CHECK (data[0] == 0 && data[4095] == 0);
    CHECK_INT (pf_segment_count_live (), ==, v.segs0 + 1);
    pf_consumer_event_clear (&held);
    CHECK_INT (pf_segment_count_live (), ==, v.segs0);
  }
}

/* A segment removed while a frame in it is held stays mapped for it. */
static void
test_remove_while_held (void)
{
  victim v;
  pf_event ev, e2;
  struct pf_msg_frame f;
  int fd;
  uint8_t *w;

  victim_start (&v, 4);
  fd = make_memfd (4096, 1);
  w = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK (w != MAP_FAILED);
  memset (w, 0xab, 4096);
  send_segment (&v, 1, 4096, fd);
  frame_init (&f, 1, 1, 0, 4096);
  send_frame (&v, &f);
  CHECK_INT (pf_test_send_fds (v.peer, v.buf,
          pf_msg_write_segment_remove (v.buf, 1), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_receive (v.c, 5000, &ev), ==, 1);
  CHECK_INT (pf_consumer_receive (v.c, 100, &e2), ==, 0);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0 + 1);
  CHECK (((const uint8_t *) ev.data[0])[4095] == 0xab);
  /* The id is free again (a compliant producer never reuses it, but the
   * consumer's table must not hold it). A frame in it is now rejected. */
  frame_init (&f, 2, 1, 0, 4096);
  send_frame (&v, &f);
  CHECK_INT (pf_consumer_release (v.c, 1), ==, 0);
  {
    struct pf_msg m;
    ssize_t n = recv (v.peer, v.buf, sizeof (v.buf), 0);
    CHECK_INT (pf_msg_parse (v.buf, (size_t) n, 0, &m), ==, 0);
    CHECK_INT (m.type, ==, PF_MSG_RELEASE);
    CHECK_INT (m.u.release.seq, ==, 1);
  }
  pf_consumer_event_clear (&ev);
  munmap (w, 4096);
  victim_expect_fail (&v, -EPROTO, "unknown segment 1");
}

static void
test_bad_hello (void)
{
  static const int kinds[] = { 0, 1, 2, 3, 4 };
  unsigned int i;

  for (i = 0; i < 5; i++) {
    int fds0 = t_count_fds (), sv[2], fd, res;
    uint8_t b[64];
    size_t n = pf_msg_write_hello (b, PF_ROLE_PRODUCER, 4, 1);
    pf_consumer *c = NULL;

    CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
        ==, 0);
    fd = -1;
    switch (kinds[i]) {
      case 0:
        put32 (b, 16, 0x11223344);      /* magic */
        break;
      case 1:
        b[20] = 9;              /* version */
        break;
      case 2:
        b[22] = PF_ROLE_CONSUMER;       /* role */
        break;
      case 3:
        fd = make_memfd (4096, 1);      /* an fd with it */
        break;
      case 4:
        n = pf_msg_write_eos (b);       /* not a HELLO */
        break;
    }
    CHECK_INT (pf_test_send_fds (sv[1], b, n, fd >= 0 ? &fd : NULL, fd >= 0),
        ==, 0);
    if (fd >= 0)
      close (fd);
    res = pf_consumer_new_from_fd (sv[0], 5000, &c);
    CHECK (c == NULL);
    CHECK (strlen (pf_consumer_connect_error ()) > 0);
    if (kinds[i] <= 1)
      CHECK_INT (res, ==, -EPROTONOSUPPORT);
    else
      CHECK_INT (res, ==, -EPROTO);
    close (sv[1]);
    CHECK_INT (t_count_fds (), ==, fds0);
  }
}

/* ---- producer against hostile consumers ---- */

static int
raw_connect (const char *path)
{
  int fd = pf_test_connect (path);

  CHECK_INT (fd, >=, 0);
  return fd;
}

/* Connects, says HELLO, reads the producer's HELLO. */
static int
raw_consumer (const char *path)
{
  uint8_t b[PF_MAX_MSG_SIZE];
  struct pf_msg m;
  int fd = raw_connect (path);
  ssize_t n;

  CHECK_INT (pf_test_send_fds (fd, b, pf_msg_write_hello (b, PF_ROLE_CONSUMER,
              0, 0), NULL, 0), ==, 0);
  n = recv (fd, b, sizeof (b), 0);
  CHECK_INT (pf_msg_parse (b, (size_t) n, 0, &m), ==, 0);
  CHECK_INT (m.type, ==, PF_MSG_HELLO);
  return fd;
}

/* Receives until a FRAME; returns its seq. */
static uint64_t
raw_next_frame (int fd)
{
  uint8_t b[PF_MAX_MSG_SIZE];
  int fds[8];
  unsigned int i;
  struct msghdr mh;
  struct iovec iov = {.iov_base = b,.iov_len = sizeof (b) };
  union
  {
    char c[CMSG_SPACE (sizeof (int) * 8)];
    struct cmsghdr align;
  } ctl;
  struct pf_msg m;
  ssize_t n;

  for (;;) {
    unsigned int n_fds = 0;
    struct cmsghdr *cm;

    memset (&mh, 0, sizeof (mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.c;
    mh.msg_controllen = sizeof (ctl.c);
    n = recvmsg (fd, &mh, MSG_CMSG_CLOEXEC);
    CHECK (n > 0);
    for (cm = CMSG_FIRSTHDR (&mh); cm; cm = CMSG_NXTHDR (&mh, cm)) {
      unsigned int k = (cm->cmsg_len - CMSG_LEN (0)) / sizeof (int);
      memcpy (fds + n_fds, CMSG_DATA (cm), k * sizeof (int));
      n_fds += k;
    }
    for (i = 0; i < n_fds; i++)
      close (fds[i]);
    CHECK_INT (pf_msg_parse (b, (size_t) n, n_fds, &m), ==, 0);
    if (m.type == PF_MSG_FRAME)
      return m.u.frame.seq;
  }
}

/* Whatever was queued first, then end of stream (not a reset). */
static void
expect_hangup (int fd)
{
  CHECK_INT (pf_test_wait_hangup (fd, 30000), ==, 1);
}

/* Each kind of misbehaviour drops that client only; a well-behaved consumer
 * beside it keeps getting frames, and the misbehaving client's frames are
 * given back. */
static void
test_producer_drops_bad_clients (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  t_producer tp;
  pf_consumer *good;
  pf_segment *seg;
  pf_event ev;
  uint8_t b[PF_MAX_MSG_SIZE + 100];
  int kind, bad, fd, seed = 0;
  uint64_t s1, s2;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 8), ==, 0);
  CHECK_INT (pf_segment_new ("t", 1 << 20, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &good), ==, 0);

  for (kind = 0; kind < 6; kind++) {
    int released0 = tp.released, disc0 = tp.disconnected;

    bad = raw_consumer (t_path ("sock"));
    WAIT_FOR (pf_producer_get_n_clients (tp.p) == 2);
    CHECK_INT (t_publish (&tp, seg, 0, 1000, ++seed), ==, 2);
    CHECK_INT (t_publish (&tp, seg, 4096, 1000, ++seed), ==, 2);
    s1 = raw_next_frame (bad);
    s2 = raw_next_frame (bad);
    CHECK_INT (s2, ==, s1 + 1);
    switch (kind) {
      case 0:                  /* release of a frame never held */
        pf_test_send_fds (bad, b, pf_msg_write_release (b, s2 + 100), NULL, 0);
        break;
      case 1:                  /* the same frame twice */
        pf_test_send_fds (bad, b, pf_msg_write_release (b, s1), NULL, 0);
        pf_test_send_fds (bad, b, pf_msg_write_release (b, s1), NULL, 0);
        break;
      case 2:                  /* an fd with a release */
        fd = make_memfd (4096, 1);
        pf_test_send_fds (bad, b, pf_msg_write_release (b, s1), &fd, 1);
        close (fd);
        break;
      case 3:                  /* a producer's message */
        pf_test_send_fds (bad, b, pf_msg_write_eos (b), NULL, 0);
        break;
      case 4:                  /* too large */
        memset (b, 0, sizeof (b));
        pf_test_send_fds (bad, b, sizeof (b), NULL, 0);
        break;
      case 5:                  /* garbage */
        pf_test_send_fds (bad, "garbage garbage garbage", 23, NULL, 0);
        break;
    }
    expect_hangup (bad);
    close (bad);
    WAIT_FOR (tp.disconnected == disc0 + 1);
    CHECK_INT (tp.last_error, <, 0);
    if (kind <= 1)
      CHECK (strstr (tp.last_reason, "does not hold") != NULL);
    CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 1);

    /* The good consumer got both and keeps going. */
    CHECK_INT (pf_consumer_receive (good, 5000, &ev), ==, 1);
    CHECK (ev.frame.seq == s1 && t_check_fill (ev.data[0], 1000, seed - 1));
    CHECK_INT (pf_consumer_release (good, s1), ==, 0);
    pf_consumer_event_clear (&ev);
    CHECK_INT (pf_consumer_receive (good, 5000, &ev), ==, 1);
    CHECK_INT (ev.frame.seq, ==, s2);
    CHECK_INT (pf_consumer_release (good, s2), ==, 0);
    pf_consumer_event_clear (&ev);
    WAIT_FOR (tp.released == released0 + 2);
  }

  pf_consumer_unref (good);
  t_producer_stop (&tp);
  pf_segment_unref (seg);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* Clients that fail the handshake never count as consumers. */
static void
test_producer_bad_handshake (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_segment *seg;
  uint8_t b[PF_MAX_MSG_SIZE];
  struct pf_msg m;
  int silent, bad;
  ssize_t n;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 8), ==, 0);
  CHECK_INT (pf_segment_new ("t", 1 << 20, 0, &seg), ==, 0);

  /* Never says HELLO: not a consumer, gets nothing. */
  silent = raw_connect (t_path ("sock"));
  /* Another version (1, before delivery policies): gets our HELLO (to
   * learn ours), then the hang-up (docs/protocol.md, Versioning). */
  bad = raw_connect (t_path ("sock"));
  n = pf_msg_write_hello_full (b, 1, PF_ROLE_CONSUMER, 0, 0, 0);
  pf_test_send_fds (bad, b, (size_t) n, NULL, 0);
  n = recv (bad, b, sizeof (b), 0);
  CHECK_INT (pf_msg_parse (b, (size_t) n, 0, &m), ==, 0);
  CHECK_INT (m.u.hello.version, ==, PF_PROTOCOL_VERSION);
  expect_hangup (bad);
  close (bad);
  /* Another magic: not one of ours, closed without an answer. */
  bad = raw_connect (t_path ("sock"));
  n = pf_msg_write_hello (b, PF_ROLE_CONSUMER, 0, 0);
  b[16] ^= 0xff;
  pf_test_send_fds (bad, b, (size_t) n, NULL, 0);
  CHECK_INT (recv (bad, b, sizeof (b), 0), ==, 0);
  close (bad);
  /* A producer connecting to a producer. */
  bad = raw_connect (t_path ("sock"));
  pf_test_send_fds (bad, b, pf_msg_write_hello (b, PF_ROLE_PRODUCER, 1, 1),
      NULL, 0);
  expect_hangup (bad);
  close (bad);

  CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 0);
  CHECK_INT (t_publish (&tp, seg, 0, 100, 1), ==, 0);
  CHECK_INT (pf_producer_get_unsent (tp.p), ==, 1);
  CHECK_INT (tp.connected, ==, 0);
  CHECK_INT (tp.disconnected, ==, 0);
  CHECK_INT (recv (silent, b, sizeof (b), MSG_DONTWAIT), ==, -1);
  t_producer_stop (&tp);
  expect_hangup (silent);
  close (silent);
  pf_segment_unref (seg);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A connection that never says HELLO is closed by the producer after its
 * handshake timeout (5 s), never reported as a consumer; one that keeps
 * quiet for a while and then speaks up in time is served normally. */
static void
test_handshake_timeout (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  int silent;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 8), ==, 0);
  silent = raw_connect (t_path ("sock"));
  /* Hang-up guard of 30 s; the producer's deadline is 5 s. */
  CHECK_INT (pf_test_wait_hangup (silent, 30000), ==, 1);
  close (silent);
  CHECK_INT (tp.connected, ==, 0);
  CHECK_INT (tp.disconnected, ==, 0);
  /* The producer still serves consumers that do speak. */
  silent = raw_consumer (t_path ("sock"));
  WAIT_FOR (tp.connected == 1);
  close (silent);
  WAIT_FOR (tp.disconnected == 1);
  CHECK_INT (tp.last_error, ==, 0);
  t_producer_stop (&tp);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static const t_case cases[] = {
  {"seg-unsealed", test_seg_unsealed},
  {"seg-size-lie", test_seg_size_lie},
  {"seg-truncated", test_seg_truncated},
  {"seg-pipe", test_seg_pipe},
  {"seg-no-sealing", test_seg_no_sealing},
  {"seg-two-fds", test_seg_two_fds},
  {"seg-no-fd", test_seg_no_fd},
  {"many-fds", test_many_fds},
  {"fd-on-frame", test_fd_on_frame},
  {"fd-on-caps", test_fd_on_caps},
  {"oversized", test_oversized},
  {"bad-header", test_bad_header},
  {"bad-caps", test_bad_caps},
  {"bad-chunks", test_bad_chunks},
  {"bad-planes", test_bad_planes},
  {"state-violations", test_state_violations},
  {"remove-while-held", test_remove_while_held},
  {"bad-hello", test_bad_hello},
  {"producer-drops-bad-clients", test_producer_drops_bad_clients},
  {"producer-bad-handshake", test_producer_bad_handshake},
  {"handshake-timeout", test_handshake_timeout},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
