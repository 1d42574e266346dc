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
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
  int wait_fds;                 /* the consumer's wait fd besides its socket */
  int ring_fds;                 /* a frame ring's doorbell, kept until unref */
  uint32_t hello_flags;         /* the consumer's HELLO flags */
  uint32_t sent;                /* socket messages sent, the HELLO included */
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
  v->ring_fds = 0;
  CHECK_INT (pf_test_send_fds (v->peer, v->buf, pf_msg_write_hello (v->buf,
              PF_ROLE_PRODUCER, max_held, 42), NULL, 0), ==, 0);
  v->sent = 1;
  res = pf_consumer_new_from_fd (sv[0], 5000, &v->c);
  CHECK_INT (res, ==, 0);
  CHECK_INT (pf_consumer_get_session_id (v->c), ==, 42);
  /* asking for a frame ring, it polls an epoll fd of its own */
  v->wait_fds = pf_consumer_get_fd (v->c) != sv[0];
  n = recv (v->peer, hello, sizeof (hello), 0);
  CHECK_INT (n, ==, 40);
  {
    struct pf_msg m;
    CHECK_INT (pf_msg_parse (hello, (size_t) n, 0, &m), ==, 0);
    CHECK_INT (m.u.hello.role, ==, PF_ROLE_CONSUMER);
    v->hello_flags = m.u.hello.flags;
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
  /* Every fd received was closed; only the socket pair is left (and the
   * consumer's wait fd and a frame ring's doorbell, closed by the unref). */
  CHECK_INT (t_count_fds (), ==, v->fds0 + 2 + v->wait_fds + v->ring_fds +
      held_segments);
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
  v->sent++;
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
  v->sent++;
}

static void
send_caps (victim * v, uint32_t caps_seq, const char *caps)
{
  CHECK_INT (pf_test_send_fds (v->peer, v->buf, pf_msg_write_caps (v->buf,
              caps_seq, caps), NULL, 0), ==, 0);
  v->sent++;
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

/* ---- the frame ring (PF_MSG_FRAME_RING) from a hostile producer ---- */

/* The memfd: the frame ring, then the release ring. Three fds come with
 * the FRAME_RING: the memfd, the frame doorbell, the release doorbell. */
#define RING_BYTES(n) ((size_t) PF_FRAME_RING_SIZE (n))
#define RING_N_FDS 3

/* What a producer keeps of a ring it offers: its copies of the fds and
 * its read-write mapping. The doorbells are socketpairs (issue 26): @bell
 * and @relbell are the consumer's ends (sent; we keep our copies, sharing
 * their open file descriptions as an attacker would), @bell_w and
 * @relbell_r ours. */
typedef struct
{
  int memfd, bell, bell_w;
  int relbell, relbell_r;       /* the release doorbell */
  uint32_t n;
  struct pf_frame_ring *h;
  struct stat st;               /* the memfd's, to find its mappings */
} fring;

/* A valid ring of @n entries: a memfd sealed SHRINK|GROW with its header,
 * and stream socketpairs as doorbells. */
static void
fring_make (fring * r, uint32_t n)
{
  int sp[2];

  r->n = n;
  r->memfd = make_memfd (RING_BYTES (n), 1);
  CHECK_INT (fstat (r->memfd, &r->st), ==, 0);
  r->h = mmap (NULL, RING_BYTES (n), PROT_READ | PROT_WRITE, MAP_SHARED,
      r->memfd, 0);
  CHECK (r->h != MAP_FAILED);
  r->h->magic = PF_FRAME_RING_MAGIC;
  r->h->n_entries = n;
  CHECK_INT (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
          SOCK_NONBLOCK, 0, sp), ==, 0);
  r->bell_w = sp[0];
  r->bell = sp[1];
  CHECK_INT (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
          SOCK_NONBLOCK, 0, sp), ==, 0);
  r->relbell_r = sp[0];
  r->relbell = sp[1];
}

/* Rings @fd's doorbell @n times (n bytes); how many went in. */
static size_t
bell_ring (int fd, size_t n)
{
  uint8_t b[4096];
  size_t done = 0;
  ssize_t k;

  memset (b, 1, sizeof (b));
  while (done < n) {
    k = send (fd, b, n - done < sizeof (b) ? n - done : sizeof (b),
        MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k <= 0)
      break;
    done += (size_t) k;
  }
  return done;
}

/* Rings waiting on @fd (bytes), read without waiting. */
static size_t
bell_count (int fd)
{
  uint8_t b[4096];
  size_t n = 0;
  ssize_t k;

  while ((k = recv (fd, b, sizeof (b), MSG_DONTWAIT)) > 0)
    n += (size_t) k;
  return n;
}

/* Mappings of the ring's memfd in this process, ours included. */
static int
fring_maps (const fring * r)
{
  return pf_test_count_maps_of (r->st.st_dev, r->st.st_ino);
}

/* Unmaps and closes our side: what is left is the consumer's. */
static void
fring_drop (fring * r)
{
  munmap (r->h, RING_BYTES (r->n));
  close (r->memfd);
  close (r->bell);
  close (r->bell_w);
  close (r->relbell);
  close (r->relbell_r);
}

/* A FRAME_RING for @n entries with @ring, @bell and @relbell attached (not
 * closed). */
static void
send_ring_fds3 (victim * v, uint32_t n, int ring, int bell, int relbell)
{
  int fds[3] = { ring, bell, relbell };

  CHECK_INT (pf_test_send_fds (v->peer, v->buf,
          pf_msg_write_frame_ring (v->buf, n), fds, RING_N_FDS), ==, 0);
  v->sent++;
}

/* The same with @r's release doorbell. */
static void
send_ring_fds (victim * v, const fring * r, uint32_t n, int ring, int bell)
{
  send_ring_fds3 (v, n, ring, bell, r->relbell);
}

/* A victim that asks for a ring (whatever the environment said), and a
 * valid ring of @n entries for it. */
static void
ring_victim_start (victim * v, fring * r, uint32_t n)
{
  unsetenv ("PINNEDFLOW_FRAME_RING");
  victim_start (v, 4);
  CHECK (v->hello_flags & PF_HELLO_FRAME_RING);
  CHECK_INT (v->wait_fds, ==, 1);
  fring_make (r, n);
}

/* Offers @r and has the consumer take it: it keeps the doorbell(s) and
 * maps the ring, and closes its copy of the memfd. */
static void
fring_offer (victim * v, fring * r)
{
  pf_event ev;

  send_ring_fds (v, r, r->n, r->memfd, r->bell);
  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (v->c, 0, &ev), ==, 0);
  v->ring_fds = RING_N_FDS - 1;
  /* the socket pair, the epoll fd, the doorbell(s); ours: the memfd and
   * both ends of both doorbells */
  CHECK_INT (t_count_fds (), ==, v->fds0 + 2 + 1 + v->ring_fds + RING_N_FDS +
      2);
  CHECK_INT (fring_maps (r), ==, 2);
}

/* Writes @f as the ring's next entry, after @reserved socket messages
 * (not published yet). Returns the entry. */
static uint8_t *
fring_write (fring * r, const struct pf_msg_frame *f, uint32_t reserved)
{
  uint8_t *e = (uint8_t *) (r->h + 1) +
      (r->h->write_seq & (r->n - 1)) * sizeof (struct pf_msg_frame);

  CHECK_INT (pf_msg_write_frame (e, f), ==, sizeof (struct pf_msg_frame));
  put32 (e, offsetof (struct pf_msg_header, reserved), reserved);
  return e;
}

/* Sets write_seq to @w (release order) and rings the doorbell once. */
static void
fring_publish_seq (fring * r, uint64_t w)
{
  __atomic_store_n (&r->h->write_seq, w, __ATOMIC_RELEASE);
  CHECK_INT (bell_ring (r->bell_w, 1), ==, 1);
}

/* Publishes @f after @reserved socket messages, as a producer does. */
static void
fring_publish (fring * r, const struct pf_msg_frame *f, uint32_t reserved)
{
  fring_write (r, f, reserved);
  fring_publish_seq (r, r->h->write_seq + 1);
}

/* Whether the consumer's fd polls readable now. */
static int
consumer_readable (victim * v)
{
  struct pollfd p = {.fd = pf_consumer_get_fd (v->c),.events = POLLIN };

  CHECK_INT (poll (&p, 1, 0), >=, 0);
  return (p.revents & POLLIN) != 0;
}

static struct pf_release_ring *
fring_rel (const fring * r)
{
  return (struct pf_release_ring *) ((uint8_t *) r->h +
      PF_FRAME_RING_RELEASE_OFFSET (r->n));
}

/* Releases @seq and checks its release reaches the producer: in @r's
 * release ring, its doorbell rung, nothing on the socket, and taken as the
 * producer does (read_seq) if @take; with no @r, as a RELEASE on the
 * socket. */
static void
release_and_check_take (victim * v, fring * r, uint64_t seq, int take)
{
  struct pf_msg m;
  ssize_t n;

  if (r != NULL) {
    struct pf_release_ring *rel = fring_rel (r);
    uint64_t *seqs = (uint64_t *) (rel + 1);
    uint64_t w = __atomic_load_n (&rel->write_seq, __ATOMIC_ACQUIRE);

    CHECK_INT (pf_consumer_release (v->c, seq), ==, 0);
    CHECK_INT (__atomic_load_n (&rel->write_seq, __ATOMIC_ACQUIRE), ==, w + 1);
    CHECK_INT (seqs[w & (r->n - 1)], ==, seq);
    CHECK_INT (bell_count (r->relbell_r), ==, 1);
    CHECK_INT (recv (v->peer, v->buf, sizeof (v->buf), MSG_DONTWAIT), ==, -1);
    if (take)
      __atomic_store_n (&rel->read_seq, w + 1, __ATOMIC_RELEASE);
    return;
  }
  CHECK_INT (pf_consumer_release (v->c, seq), ==, 0);
  n = recv (v->peer, v->buf, sizeof (v->buf), MSG_DONTWAIT);
  CHECK_INT (n, ==, sizeof (struct pf_msg_release));
  CHECK_INT (pf_msg_parse (v->buf, (size_t) n, 0, &m), ==, 0);
  CHECK_INT (m.type, ==, PF_MSG_RELEASE);
  CHECK_INT (m.u.release.seq, ==, seq);
}

static void
release_and_check (victim * v, fring * r, uint64_t seq)
{
  release_and_check_take (v, r, seq, 1);
}

/* Expects a FRAME event of @seq in caps @caps_seq whose 4096 bytes were
 * filled with @seed; releases it. */
static void
expect_frame (victim * v, fring * r, uint64_t seq, uint32_t caps_seq,
    uint64_t seed)
{
  pf_event ev;

  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (v->c, 5000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.seq, ==, seq);
  CHECK_INT (ev.frame.caps_seq, ==, caps_seq);
  CHECK_INT (ev.frame.n_chunks, ==, 1);
  CHECK_INT (ev.frame.chunks[0].size, ==, 4096);
  CHECK (t_check_fill (ev.data[0], 4096, seed));
  release_and_check (v, r, seq);
  pf_consumer_event_clear (&ev);
}

static void
expect_caps (victim * v, uint32_t caps_seq, const char *caps)
{
  pf_event ev;

  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (v->c, 5000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  CHECK_INT (ev.caps_seq, ==, caps_seq);
  CHECK (strcmp (ev.caps, caps) == 0);
}

/* A segment 1 of 8192 bytes, its halves filled with seeds 1 and 2, and caps
 * 1: what the ring's FRAMEs below point into. */
static void
ring_stream_start (victim * v)
{
  int fd = make_memfd (8192, 1);
  uint8_t *w = mmap (NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

  CHECK (w != MAP_FAILED);
  t_fill (w, 4096, 1);
  t_fill (w + 4096, 4096, 2);
  munmap (w, 8192);
  send_segment (v, 1, 8192, fd);
  send_caps (v, 1, "video/x-raw");
  expect_caps (v, 1, "video/x-raw");
}

/* After the case: nothing of the ring is left mapped, no fd open. */
static void
ring_check_gone (const fring * r, const victim * v)
{
  CHECK_INT (fring_maps (r), ==, 0);
  CHECK_INT (t_count_fds (), ==, v->fds0);
}

/* The end of a ring case that did not fail the connection: the ring
 * dropped on our side, the consumer and its socket closed, nothing of the
 * ring left mapped or open. */
static void
ring_victim_finish (victim * v, fring * r)
{
  fring_drop (r);
  pf_consumer_unref (v->c);
  close (v->peer);
  ring_check_gone (r, v);
}

/* A ring the consumer did not ask for (PINNEDFLOW_FRAME_RING=0). */
static void
test_ring_not_asked (void)
{
  victim v;
  fring r;

  CHECK_INT (setenv ("PINNEDFLOW_FRAME_RING", "0", 1), ==, 0);
  victim_start (&v, 4);
  CHECK_INT (unsetenv ("PINNEDFLOW_FRAME_RING"), ==, 0);
  CHECK_INT (v.hello_flags & PF_HELLO_FRAME_RING, ==, 0);
  CHECK_INT (v.wait_fds, ==, 0);
  fring_make (&r, 4);
  send_ring_fds (&v, &r, 4, r.memfd, r.bell);
  fring_drop (&r);
  victim_expect_fail (&v, -EPROTO, "not asked for");
  ring_check_gone (&r, &v);
}

/* A second ring: refused, its fds closed; the first one stays until the
 * unref. */
static void
test_ring_twice (void)
{
  victim v;
  fring r, r2;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  fring_make (&r2, 4);
  send_ring_fds (&v, &r2, 4, r2.memfd, r2.bell);
  fring_drop (&r2);
  fring_drop (&r);
  CHECK_INT (fring_maps (&r), ==, 1);
  victim_expect_fail (&v, -EPROTO, "sent twice");
  ring_check_gone (&r, &v);
  ring_check_gone (&r2, &v);
}

/* A ring memfd the producer could still shrink under the consumer's
 * mapping: without sealing at all, and able to seal but not sealed. */
static void
test_ring_unsealed (void)
{
  int k;

  for (k = 0; k < 2; k++) {
    victim v;
    fring r;
    int fd;

    ring_victim_start (&v, &r, 4);
    if (k == 0)
      fd = memfd_create ("pf-test-ring", MFD_CLOEXEC);  /* F_SEAL_SEAL only */
    else
      fd = make_memfd (0, 0);
    CHECK_INT (fd, >=, 0);
    CHECK_INT (ftruncate (fd, RING_BYTES (4)), ==, 0);
    send_ring_fds (&v, &r, 4, fd, r.bell);
    close (fd);
    fring_drop (&r);
    victim_expect_fail (&v, -EPROTO, "not sealed against shrinking");
    CHECK_INT (t_count_fds (), ==, v.fds0);
  }
}

/* A ring file smaller than the FRAME_RING announces, and not a file. */
static void
test_ring_size (void)
{
  int k;

  for (k = 0; k < 3; k++) {
    victim v;
    fring r;
    int p[2] = { -1, -1 };

    ring_victim_start (&v, &r, 4);
    switch (k) {
      case 0:                  /* the file of 4 entries, 64 announced */
        CHECK (RING_BYTES (64) > RING_BYTES (4));
        send_ring_fds (&v, &r, 64, r.memfd, r.bell);
        break;
      case 1:                  /* one byte short */
        fring_drop (&r);
        fring_make (&r, 4);
        close (r.memfd);
        r.memfd = make_memfd (RING_BYTES (4) - 1, 1);
        CHECK_INT (fstat (r.memfd, &r.st), ==, 0);
        send_ring_fds (&v, &r, 4, r.memfd, r.bell);
        break;
      case 2:                  /* a pipe */
        CHECK_INT (pipe (p), ==, 0);
        send_ring_fds (&v, &r, 4, p[0], r.bell);
        close (p[0]);
        close (p[1]);
        break;
    }
    fring_drop (&r);
    victim_expect_fail (&v, -EPROTO, "not a file of the size announced");
    ring_check_gone (&r, &v);
  }
}

/* A doorbell that is not an AF_UNIX stream socket: a pipe's end, a
 * regular file, an eventfd (issue 13's doorbell, whose flags the producer
 * shares: issue 26), a datagram socket; as the frame doorbell and as the
 * release doorbell. */
static void
test_ring_bad_doorbell (void)
{
  int k;

  for (k = 0; k < 10; k++) {
    victim v;
    fring r;
    int p[2], sp[2], fd, efd, bad;

    ring_victim_start (&v, &r, 4);
    CHECK_INT (pipe (p), ==, 0);
    CHECK_INT (socketpair (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), ==, 0);
    fd = make_memfd (4096, 1);
    efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
    CHECK_INT (efd, >=, 0);
    switch (k % 5) {
      case 0:
        bad = p[0];
        break;
      case 1:
        bad = p[1];
        break;
      case 2:
        bad = fd;
        break;
      case 3:
        bad = efd;
        break;
      default:
        bad = sp[1];
        break;
    }
    if (k < 5)
      send_ring_fds (&v, &r, 4, r.memfd, bad);
    else
      send_ring_fds3 (&v, 4, r.memfd, r.bell, bad);
    close (p[0]);
    close (p[1]);
    close (sp[0]);
    close (sp[1]);
    close (fd);
    close (efd);
    fring_drop (&r);
    victim_expect_fail (&v, -EPROTO, "not a stream socket");
    ring_check_gone (&r, &v);
  }
}

/* A header that is not the ring's: mapped, checked, unmapped again. */
static void
test_ring_bad_header (void)
{
  int k;

  for (k = 0; k < 2; k++) {
    victim v;
    fring r;

    ring_victim_start (&v, &r, 4);
    if (k == 0)
      r.h->magic ^= 1;
    else
      r.h->n_entries = 2;
    send_ring_fds (&v, &r, 4, r.memfd, r.bell);
    fring_drop (&r);
    victim_expect_fail (&v, -EPROTO, "header does not match");
    ring_check_gone (&r, &v);
  }
}

/* More entries published than the ring holds; a write_seq that goes
 * back below what the consumer read. */
static void
test_ring_overrun (void)
{
  int k;

  for (k = 0; k < 2; k++) {
    victim v;
    fring r;
    struct pf_msg_frame f;

    ring_victim_start (&v, &r, 4);
    fring_offer (&v, &r);
    if (k == 0) {
      fring_publish_seq (&r, 4 + 5);
    } else {
      ring_stream_start (&v);
      frame_init (&f, 1, 1, 0, 4096);
      f.caps_seq = 1;
      fring_publish (&r, &f, v.sent);
      expect_frame (&v, &r, 1, 1, 1);
      fring_publish_seq (&r, 0);
    }
    fring_drop (&r);
    victim_expect_fail (&v, -EPROTO, "more than the ring's 4");
    ring_check_gone (&r, &v);
    CHECK_INT (pf_segment_count_live (), ==, v.segs0);
  }
}

/* An entry that is not a FRAME. */
static void
test_ring_not_frame (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;
  uint8_t *e;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);
  frame_init (&f, 1, 1, 0, 4096);
  f.caps_seq = 1;
  e = fring_write (&r, &f, v.sent);
  put32 (e, 0, PF_MSG_CAPS);
  fring_publish_seq (&r, 1);
  fring_drop (&r);
  victim_expect_fail (&v, -EPROTO, "not a FRAME");
  ring_check_gone (&r, &v);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

/* An entry after socket messages that never come. */
static void
test_ring_never_came (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);
  CHECK_INT (v.sent, ==, 4);    /* HELLO, FRAME_RING, SEGMENT_ADD, CAPS */
  frame_init (&f, 1, 1, 0, 4096);
  f.caps_seq = 1;
  fring_publish (&r, &f, v.sent + 3);
  fring_drop (&r);
  victim_expect_fail (&v, -EPROTO, "follows socket messages that never came");
  ring_check_gone (&r, &v);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

/* A ring sealed against writing: the consumer, which writes its releases
 * there, cannot map it and says so. */
static void
test_ring_write_sealed (void)
{
  victim v;
  fring r;
  struct pf_frame_ring h;
  int fd;

  ring_victim_start (&v, &r, 4);
  fd = make_memfd (RING_BYTES (4), 1);
  memset (&h, 0, sizeof (h));
  h.magic = PF_FRAME_RING_MAGIC;
  h.n_entries = 4;
  CHECK_INT (pwrite (fd, &h, sizeof (h), 0), ==, sizeof (h));
  CHECK_INT (fcntl (fd, F_ADD_SEALS, F_SEAL_WRITE), ==, 0);
  send_ring_fds (&v, &r, 4, fd, r.bell);
  close (fd);
  fring_drop (&r);
  victim_expect_fail (&v, -EPROTO, "cannot be mapped");
  CHECK_INT (t_count_fds (), ==, v.fds0);
}

/* A producer that does not take the releases (read_seq stays): the ones
 * the release ring has no room for come on the socket; a read_seq ahead of
 * what the consumer wrote reads as full too; taken again, the ring is
 * used again. */
static void
test_ring_release_full (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;
  struct pf_release_ring *rel;
  pf_event ev;
  uint64_t seq;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);
  rel = fring_rel (&r);
  for (seq = 1; seq <= 8; seq++) {
    frame_init (&f, seq, 1, 0, 4096);
    f.caps_seq = 1;
    fring_publish (&r, &f, v.sent);
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (v.c, 5000, &ev), ==, 1);
    CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
    CHECK_INT (ev.frame.seq, ==, seq);
    if (seq <= 4) {             /* room: in the ring, never taken */
      release_and_check_take (&v, &r, seq, 0);
    } else if (seq == 5) {      /* full: on the socket; then all taken */
      release_and_check (&v, NULL, seq);
      CHECK_INT (rel->write_seq, ==, 4);
      __atomic_store_n (&rel->read_seq, 4, __ATOMIC_RELEASE);
    } else if (seq == 6) {      /* room again; then read_seq runs ahead */
      release_and_check (&v, &r, seq);
      __atomic_store_n (&rel->read_seq, 1000, __ATOMIC_RELEASE);
    } else if (seq == 7) {      /* ahead reads as full: on the socket */
      release_and_check (&v, NULL, seq);
      CHECK_INT (rel->write_seq, ==, 5);
      __atomic_store_n (&rel->read_seq, 5, __ATOMIC_RELEASE);
    } else {
      release_and_check (&v, &r, seq);
    }
    pf_consumer_event_clear (&ev);
  }
  CHECK_INT (rel->write_seq, ==, 6);

  /* a release doorbell full to the brim, and made blocking by the
   * producer, which shares the consumer's end (issue 26): the release is
   * in the ring all the same, and pf_consumer_release () does not block */
  {
    size_t full = bell_ring (r.relbell, SIZE_MAX);

    CHECK (full > 0);
    CHECK_INT (fcntl (r.relbell, F_SETFL, 0), ==, 0);
    frame_init (&f, 9, 1, 0, 4096);
    f.caps_seq = 1;
    fring_publish (&r, &f, v.sent);
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (v.c, 5000, &ev), ==, 1);
    CHECK_INT (ev.frame.seq, ==, 9);
    CHECK_INT (pf_consumer_release (v.c, 9), ==, 0);
    pf_consumer_event_clear (&ev);
    CHECK_INT (rel->write_seq, ==, 7);
    CHECK_INT (((uint64_t *) (rel + 1))[6 & 3], ==, 9);
    CHECK_INT (bell_count (r.relbell_r), ==, full);
    CHECK_INT (recv (v.peer, v.buf, sizeof (v.buf), MSG_DONTWAIT), ==, -1);
  }

  ring_victim_finish (&v, &r);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

/* FRAMEs through the ring keep their place among the socket's messages:
 * an entry published before a socket message is delivered before it, one
 * published after it (its count says so) after it, whichever the consumer
 * looks at first; the ring wraps around; every release reaches the
 * producer and the doorbell is left empty. */
static void
test_ring_order (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;
  uint64_t seq;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);

  /* the entry, then CAPS 2 on the socket: FRAME first */
  frame_init (&f, 7, 1, 0, 4096);
  f.caps_seq = 1;
  fring_publish (&r, &f, v.sent);
  send_caps (&v, 2, "video/x-raw,width=2");
  expect_frame (&v, &r, 7, 1, 1);
  expect_caps (&v, 2, "video/x-raw,width=2");

  /* CAPS 3 on the socket, then an entry in caps 3 that follows it: the
   * consumer finds the entry first but must read CAPS 3 before it */
  send_caps (&v, 3, "video/x-raw,width=3");
  frame_init (&f, 8, 1, 4096, 4096);
  f.caps_seq = 3;
  fring_publish (&r, &f, v.sent);
  expect_caps (&v, 3, "video/x-raw,width=3");
  expect_frame (&v, &r, 8, 3, 2);

  /* both at once: two entries around a CAPS */
  frame_init (&f, 9, 1, 0, 4096);
  f.caps_seq = 3;
  fring_publish (&r, &f, v.sent);
  send_caps (&v, 4, "video/x-raw,width=4");
  frame_init (&f, 10, 1, 4096, 4096);
  f.caps_seq = 4;
  fring_publish (&r, &f, v.sent);
  expect_frame (&v, &r, 9, 3, 1);
  expect_caps (&v, 4, "video/x-raw,width=4");
  expect_frame (&v, &r, 10, 4, 2);

  /* around the ring of 4 a few times, with a SEGMENT_REMOVE of an unused
   * segment now and then on the socket between entries */
  for (seq = 11; seq < 31; seq++) {
    frame_init (&f, seq, 1, (seq & 1) * 4096, 4096);
    f.caps_seq = 4;
    fring_publish (&r, &f, v.sent);
    if (seq % 5 == 0) {
      send_segment (&v, 100 + seq, 4096, make_memfd (4096, 1));
      CHECK_INT (pf_test_send_fds (v.peer, v.buf,
              pf_msg_write_segment_remove (v.buf, 100 + seq), NULL, 0), ==, 0);
      v.sent++;
    }
    expect_frame (&v, &r, seq, 4, 1 + (seq & 1));
  }
  CHECK_INT (r.h->write_seq, ==, 24);

  /* all taken: the doorbell was counted off, nothing wakes the caller */
  {
    pf_event ev;

    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (v.c, 0, &ev), ==, 0);
  }
  CHECK (!consumer_readable (&v));
  CHECK_INT (recv (v.peer, v.buf, sizeof (v.buf), MSG_DONTWAIT), ==, -1);

  fring_drop (&r);
  CHECK_INT (fring_maps (&r), ==, 1);
  pf_consumer_unref (v.c);
  close (v.peer);
  ring_check_gone (&r, &v);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

/* A doorbell rung with no entry behind it is emptied: the consumer's fd
 * does not stay readable for ever. Entries still come after it. */
static void
test_ring_spurious_doorbell (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;
  pf_event ev;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);
  CHECK (!consumer_readable (&v));
  CHECK_INT (bell_ring (r.bell_w, 3), ==, 3);
  CHECK (consumer_readable (&v));
  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (v.c, 0, &ev), ==, 0);
  CHECK (!consumer_readable (&v));
  /* and with a timeout: it waits, without an event */
  CHECK_INT (bell_ring (r.bell_w, 3), ==, 3);
  CHECK_INT (pf_consumer_receive (v.c, 50, &ev), ==, 0);
  CHECK (!consumer_readable (&v));

  /* a real entry after that */
  frame_init (&f, 1, 1, 0, 4096);
  f.caps_seq = 1;
  fring_publish (&r, &f, v.sent);
  CHECK (consumer_readable (&v));
  expect_frame (&v, &r, 1, 1, 1);
  /* its ring is read before the next wait, not on the frame's path */
  CHECK_INT (pf_consumer_prepare_wait (v.c), ==, 0);
  CHECK (!consumer_readable (&v));

  ring_victim_finish (&v, &r);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

/* A doorbell that is an anonymous inode but no eventfd: an epoll fd that
 * is always readable (it watches an eventfd of ours with a count, which we
 * keep open, as a producer would). Reading it fails (EINVAL), so nothing
 * empties it: were it taken, pf_consumer_get_fd() would poll readable for
 * ever and pf_consumer_receive() with a timeout would spin on the CPU for
 * all of it.
 *
 * Found by this case: is_eventfd () used to check only (st_mode & S_IFMT)
 * == 0, which every anonymous inode passes (epoll, timerfd, signalfd...);
 * the doorbell was taken and receive (c, 500) spun for 0.50 s of CPU. It
 * then asked /proc (anon_inode:[eventfd]). Since issue 26 a doorbell is an
 * AF_UNIX stream socket (pf_doorbell_check ()): the epoll fd is refused on
 * arrival. */
static void
test_ring_epoll_doorbell (void)
{
  victim v;
  fring r;
  struct epoll_event e = {.events = EPOLLIN };
  pf_event ev;
  uint64_t one = 1;
  int ep, efd, res;

  ring_victim_start (&v, &r, 4);
  efd = eventfd (0, EFD_CLOEXEC);
  CHECK_INT (efd, >=, 0);
  CHECK_INT (write (efd, &one, sizeof (one)), ==, sizeof (one));
  ep = epoll_create1 (EPOLL_CLOEXEC);
  CHECK_INT (ep, >=, 0);
  e.data.fd = efd;
  CHECK_INT (epoll_ctl (ep, EPOLL_CTL_ADD, efd, &e), ==, 0);
  send_ring_fds (&v, &r, 4, r.memfd, ep);
  close (ep);
  fring_drop (&r);
  memset (&ev, 0, sizeof (ev));
  res = pf_consumer_receive (v.c, 0, &ev);
  CHECK_INT (res, ==, -EPROTO);
  close (efd);
  victim_expect_fail (&v, -EPROTO, "not a stream socket");
  ring_check_gone (&r, &v);
}

/* The producer closes its end of the frame doorbell (issue 26: the
 * consumer's end reads end of file, and would poll readable for ever): the
 * consumer drops it from what it polls, and the connection goes on; an
 * entry published is still taken, socket messages still come. */
static void
test_ring_doorbell_closed (void)
{
  victim v;
  fring r;
  struct pf_msg_frame f;
  pf_event ev;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  ring_stream_start (&v);
  CHECK_INT (close (r.bell_w), ==, 0);
  r.bell_w = -1;
  CHECK (consumer_readable (&v));
  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (v.c, 0, &ev), ==, 0);
  CHECK (!consumer_readable (&v));
  CHECK_INT (pf_consumer_receive (v.c, 50, &ev), ==, 0);
  /* its doorbell closed (the socket pair, the epoll fd, the release
   * doorbell, the segment; ours: the memfd and three doorbell ends) */
  CHECK_INT (t_count_fds (), ==, v.fds0 + 2 + 1 + 1 + 1 + RING_N_FDS + 1);
  v.ring_fds = 1;

  frame_init (&f, 1, 1, 0, 4096);
  f.caps_seq = 1;
  fring_write (&r, &f, v.sent);
  __atomic_store_n (&r.h->write_seq, 1, __ATOMIC_RELEASE);
  send_caps (&v, 2, "video/x-raw,width=2");
  expect_frame (&v, &r, 1, 1, 1);
  expect_caps (&v, 2, "video/x-raw,width=2");
  ring_victim_finish (&v, &r);
  CHECK_INT (pf_segment_count_live (), ==, v.segs0);
}

typedef struct
{
  pf_consumer *c;
  _Atomic int done;
  int res;
} receive_job;

static void *
receive_thread (void *arg)
{
  receive_job *j = arg;
  pf_event ev;

  memset (&ev, 0, sizeof (ev));
  j->res = pf_consumer_receive (j->c, 0, &ev);
  atomic_store (&j->done, 1);
  return NULL;
}

/* A doorbell rung with the largest count an eventfd holds and no entry:
 * pf_consumer_receive (c, 0) must come back at once (nothing to deliver,
 * or the connection failed), not read the semaphore down one by one.
 *
 * Found by this case: doorbell_drain () used to read the semaphore until
 * EAGAIN, one unit per read (): 10^7 took 3.9 s here, 2^64-2 would take
 * ~10^5 years. An honest doorbell counts at most the entries not yet taken
 * plus a few rings that came after their entry was taken; the drain now
 * stops after the ring's size + 1024 reads and fails the connection. */
static void
test_ring_doorbell_flood (void)
{
  victim v;
  fring r;
  receive_job j = {.done = 0 };
  pthread_t th;
  int i;

  ring_victim_start (&v, &r, 4);
  fring_offer (&v, &r);
  /* as many rings as the socket holds (well over the ring's size + 1024),
   * the consumer's end made blocking (issue 26) */
  CHECK (bell_ring (r.bell_w, SIZE_MAX) > 4 + 1024);
  CHECK_INT (fcntl (r.bell, F_SETFL, 0), ==, 0);
  j.c = v.c;
  CHECK_INT (pthread_create (&th, NULL, receive_thread, &j), ==, 0);
  for (i = 0; i < 5000 && !atomic_load (&j.done); i++)
    t_sleep_ms (1);
  /* the drain gives up after the ring's size + 1024 reads (well under
   * 5 s): a forged count fails the connection */
  CHECK (atomic_load (&j.done));
  CHECK_INT (pthread_join (th, NULL), ==, 0);
  CHECK_INT (j.res, ==, -EPROTO);
  fring_drop (&r);
  victim_expect_fail (&v, -EPROTO, "rang more than");
  ring_check_gone (&r, &v);
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
  {"ring-not-asked", test_ring_not_asked},
  {"ring-twice", test_ring_twice},
  {"ring-unsealed", test_ring_unsealed},
  {"ring-size", test_ring_size},
  {"ring-bad-doorbell", test_ring_bad_doorbell},
  {"ring-bad-header", test_ring_bad_header},
  {"ring-overrun", test_ring_overrun},
  {"ring-not-frame", test_ring_not_frame},
  {"ring-never-came", test_ring_never_came},
  {"ring-write-sealed", test_ring_write_sealed},
  {"ring-release-full", test_ring_release_full},
  {"ring-order", test_ring_order},
  {"ring-spurious-doorbell", test_ring_spurious_doorbell},
  {"ring-epoll-doorbell", test_ring_epoll_doorbell},
  {"ring-doorbell-flood", test_ring_doorbell_flood},
  {"ring-doorbell-closed", test_ring_doorbell_closed},
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
