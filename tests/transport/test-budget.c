/* pinnedflow transport: what a consumer accepts from its producer
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/protocol.md, "Consumer budget"): a consumer maps a
 * producer's segments lazily, so a sparse segment costs it nothing until
 * frames use its pages, and it refuses, before mapping, a segment that would
 * take what it keeps mapped past its budget (bytes or segments): the fd is
 * closed, the connection ends with -EDQUOT and an error naming the bytes and
 * the budget. Mapped = announced and not removed, or removed but still used
 * by a frame the application holds. The producer here is raw sendmsg().
 */
#include "harness.h"
#include "pf-test-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define MiB (UINT64_C (1) << 20)
#define GiB (UINT64_C (1) << 30)

/* A field of /proc/self/status in KiB (VmRSS, RssShmem), or -1. */
static long
status_kib (const char *field)
{
  char line[256];
  size_t n = strlen (field);
  long v = -1;
  FILE *f = fopen ("/proc/self/status", "re");

  if (f == NULL)
    return -1;
  while (fgets (line, sizeof (line), f))
    if (strncmp (line, field, n) == 0 && line[n] == ':') {
      v = strtol (line + n + 1, NULL, 10);
      break;
    }
  fclose (f);
  return v;
}

typedef struct
{
  pf_consumer *c;
  int peer;
  int fds0, segs0;
  uint8_t buf[PF_MAX_MSG_SIZE];
} link_t;

static void
link_start (link_t * l, const pf_consumer_budget * budget)
{
  int sv[2];

  l->fds0 = t_count_fds ();
  l->segs0 = pf_segment_count_live ();
  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  l->peer = sv[1];
  CHECK_INT (pf_test_send_fds (l->peer, l->buf, pf_msg_write_hello (l->buf,
              PF_ROLE_PRODUCER, 8, 1), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 30000, &l->c), ==, 0);
  CHECK_INT (recv (l->peer, l->buf, sizeof (l->buf), 0), ==, 40);
  if (budget)
    CHECK_INT (pf_consumer_set_budget (l->c, budget), ==, 0);
}

/* Ends the connection; nothing received may be left behind. */
static void
link_stop (link_t * l)
{
  pf_consumer_unref (l->c);
  close (l->peer);
  CHECK_INT (pf_segment_count_live (), ==, l->segs0);
  CHECK_INT (t_count_fds (), ==, l->fds0);
}

/* Announces a sealed, sparse memfd of @size bytes as segment @id. */
static void
send_segment (link_t * l, uint64_t id, uint64_t size)
{
  int fd = pf_test_memfd (size, 1);

  CHECK (fd >= 0);
  CHECK_INT (pf_test_send_fds (l->peer, l->buf,
          pf_msg_write_segment_add (l->buf, id, size), &fd, 1), ==, 0);
  close (fd);
}

static void
send_remove (link_t * l, uint64_t id)
{
  CHECK_INT (pf_test_send_fds (l->peer, l->buf,
          pf_msg_write_segment_remove (l->buf, id), NULL, 0), ==, 0);
}

static void
send_caps (link_t * l)
{
  CHECK_INT (pf_test_send_fds (l->peer, l->buf, pf_msg_write_caps (l->buf, 1,
              "application/octet-stream"), NULL, 0), ==, 0);
}

static void
send_frame (link_t * l, uint64_t seq, uint64_t seg, uint64_t size)
{
  struct pf_msg_frame f;

  memset (&f, 0, sizeof (f));
  f.seq = seq;
  f.caps_seq = 1;
  f.n_chunks = 1;
  f.chunks[0].segment_id = seg;
  f.chunks[0].size = size;
  f.pts = f.dts = f.duration = f.clock_pts = f.send_time = PF_TIME_NONE;
  CHECK_INT (pf_test_send_fds (l->peer, l->buf, pf_msg_write_frame (l->buf,
              &f), NULL, 0), ==, 0);
}

static void
expect_event (link_t * l, pf_event * ev, int type)
{
  CHECK_INT (pf_consumer_receive (l->c, 30000, ev), ==, 1);
  CHECK_INT (ev->type, ==, type);
}

static void
expect_refused (link_t * l, const char *needle1, const char *needle2)
{
  pf_event ev;
  const char *e;

  CHECK_INT (pf_consumer_receive (l->c, 30000, &ev), ==, -EDQUOT);
  e = pf_consumer_get_error (l->c);
  if (strstr (e, needle1) == NULL || strstr (e, needle2) == NULL) {
    fprintf (stderr, "error \"%s\" lacks \"%s\" or \"%s\"\n", e, needle1,
        needle2);
    t_fail ();
  }
  /* the connection is over */
  CHECK_INT (pf_test_wait_hangup (l->peer, 30000), ==, 1);
}

/* The attack: one sparse 1 GiB segment under the default budget is
 * refused, and the consumer's memory does not grow. */
static void
test_oversize_refused (void)
{
  link_t l;
  long rss0, shm0;

  link_start (&l, NULL);
  rss0 = status_kib ("VmRSS");
  shm0 = status_kib ("RssShmem");
  CHECK (rss0 > 0 && shm0 >= 0);
  send_segment (&l, 1, GiB);
  expect_refused (&l, "1073741824 bytes", "budget of 805306368 bytes");
  CHECK_INT (status_kib ("VmRSS") - rss0, <, 16 * 1024);
  CHECK_INT (status_kib ("RssShmem") - shm0, <, 16 * 1024);
  /* refused before mapping: no segment, the fd closed */
  link_stop (&l);
}

/* Within the default budget a large sparse segment works, and only the
 * pages a frame uses cost memory (lazy mapping). */
static void
test_within_budget_lazy (void)
{
  link_t l;
  pf_event ev;
  uint64_t bytes;
  uint32_t count;
  long shm0;
  const volatile uint8_t *d;

  link_start (&l, NULL);
  shm0 = status_kib ("RssShmem");
  send_segment (&l, 1, 512 * MiB);
  send_caps (&l);
  expect_event (&l, &ev, PF_EVENT_CAPS);
  pf_consumer_get_mapped (l.c, &bytes, &count);
  CHECK_INT (bytes, ==, 512 * MiB);
  CHECK_INT (count, ==, 1);
  send_frame (&l, 1, 1, 4096);
  expect_event (&l, &ev, PF_EVENT_FRAME);
  d = ev.data[0];
  CHECK_INT (d[0] + d[4095], ==, 0);
  CHECK_INT (pf_segment_get_state (ev.segments[0]) &
      (PF_SEGMENT_STATE_LOCKED | PF_SEGMENT_STATE_LOCK_REFUSED), ==, 0);
  CHECK_INT (status_kib ("RssShmem") - shm0, <, 16 * 1024);
  CHECK_INT (pf_consumer_release (l.c, 1), ==, 0);
  pf_consumer_event_clear (&ev);
  link_stop (&l);
}

/* A budget of our own: bytes, then segments. */
static void
test_custom_budget (void)
{
  pf_consumer_budget b = {.max_bytes = MiB };
  pf_consumer_budget got;
  link_t l;
  pf_event ev;

  link_start (&l, &b);
  pf_consumer_get_budget (l.c, &got);
  CHECK_INT (got.max_bytes, ==, MiB);
  CHECK_INT (got.max_segments, ==, PF_CONSUMER_DEFAULT_MAX_SEGMENTS);
  send_segment (&l, 1, 512 * 1024);
  send_segment (&l, 2, 512 * 1024);     /* exactly the budget: fine */
  send_caps (&l);
  expect_event (&l, &ev, PF_EVENT_CAPS);
  send_segment (&l, 3, 4096);
  expect_refused (&l, "1048576 bytes mapped already",
      "budget of 1048576 bytes");
  link_stop (&l);

  b.max_bytes = 0;              /* default */
  b.max_segments = 2;
  link_start (&l, &b);
  send_segment (&l, 1, 4096);
  send_segment (&l, 2, 4096);
  send_segment (&l, 3, 4096);
  expect_refused (&l, "2 segments are mapped", "budget is 2 segments");
  link_stop (&l);

  /* unknown flags are refused */
  link_start (&l, NULL);
  b.flags = 1u << 7;
  CHECK_INT (pf_consumer_set_budget (l.c, &b), ==, -EINVAL);
  link_stop (&l);
}

/* A removed segment still used by a held frame still counts; once the
 * frame is released it no longer does. */
static void
test_removed_but_held (void)
{
  pf_consumer_budget b = {.max_segments = 1 };
  link_t l;
  pf_event ev, ev2;

  link_start (&l, &b);
  send_segment (&l, 1, 65536);
  send_caps (&l);
  send_frame (&l, 1, 1, 4096);
  expect_event (&l, &ev, PF_EVENT_CAPS);
  expect_event (&l, &ev, PF_EVENT_FRAME);
  send_remove (&l, 1);
  send_segment (&l, 2, 65536);
  expect_refused (&l, "1 segments are mapped", "budget is 1 segments");
  pf_consumer_event_clear (&ev);
  link_stop (&l);

  link_start (&l, &b);
  send_segment (&l, 1, 65536);
  send_caps (&l);
  send_frame (&l, 1, 1, 4096);
  expect_event (&l, &ev, PF_EVENT_CAPS);
  expect_event (&l, &ev, PF_EVENT_FRAME);
  send_remove (&l, 1);
  CHECK_INT (pf_consumer_receive (l.c, 50, &ev2), ==, 0);
  CHECK_INT (pf_consumer_release (l.c, 1), ==, 0);
  pf_consumer_event_clear (&ev);
  send_segment (&l, 2, 65536);
  send_frame (&l, 2, 2, 4096);
  expect_event (&l, &ev, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.chunks[0].segment_id, ==, 2);
  CHECK_INT (pf_consumer_release (l.c, 2), ==, 0);
  pf_consumer_event_clear (&ev);
  link_stop (&l);
}

/* Asked to, the consumer prefaults (and tries to lock) every segment. */
static void
test_prefault_lock (void)
{
  pf_consumer_budget b = {.flags = PF_CONSUMER_LOCK };
  link_t l;
  pf_event ev;
  long shm0;

  link_start (&l, &b);
  shm0 = status_kib ("RssShmem");
  send_segment (&l, 1, 32 * MiB);
  send_caps (&l);
  send_frame (&l, 1, 1, 4096);
  expect_event (&l, &ev, PF_EVENT_CAPS);
  expect_event (&l, &ev, PF_EVENT_FRAME);
  /* every page is resident at once, holes included */
  CHECK_INT (status_kib ("RssShmem") - shm0, >=, 32 * 1024);
  CHECK (pf_segment_get_state (ev.segments[0]) &
      (PF_SEGMENT_STATE_LOCKED | PF_SEGMENT_STATE_LOCK_REFUSED));
  CHECK_INT (pf_consumer_release (l.c, 1), ==, 0);
  pf_consumer_event_clear (&ev);
  link_stop (&l);
}

static const t_case cases[] = {
  {"oversize-refused", test_oversize_refused},
  {"within-budget-lazy", test_within_budget_lazy},
  {"custom-budget", test_custom_budget},
  {"removed-but-held", test_removed_but_held},
  {"prefault-lock", test_prefault_lock},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
