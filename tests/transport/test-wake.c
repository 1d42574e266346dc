/* pinnedflow tests: the release doorbell on demand (issue 35)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/protocol.md, 3.10; docs/design.md, "The frame ring"): a
 * producer that announces PF_RELEASE_RING_ON_DEMAND in its release ring
 * has its consumers ring the release doorbell only while its frame ring's
 * release_want is set, which it keeps set while something of its side
 * waits for a release (a blocked pf_producer_wait_ready (), a
 * pf_producer_want_releases () wait); a publisher takes the releases
 * itself. What the cases check:
 *  - want-rings: a release made while the producer wants one is rung and
 *    reaches frame_released through the I/O thread; one made while it
 *    does not is not rung, and the next publish takes it;
 *  - pool-dry: a producer whose slots are all out waits for a release
 *    (pf_producer_want_releases ()) and each wait ends through the
 *    doorbell of a pf_consumer on another thread;
 *  - wait-ready: an every-frame consumer at its limit wakes a publisher
 *    blocked in pf_producer_wait_ready () (max_held 1: every frame waits);
 *  - few-rings: a producer that never waits, with a consumer that keeps
 *    up, gets no ring at all for hundreds of releases, and frame_released
 *    for all of them;
 *  - lagging: a consumer that holds more than half its limit at a
 *    publish is asked to ring (what the producer's application waits for
 *    may be running out), and no longer once it caught up;
 *  - old-consumer: a consumer that rings after every release (as before
 *    issue 35, written from the protocol) still gets every frame, its
 *    rings read and counted;
 *  - quiet-consumer-idle: a consumer that never rings, even when asked,
 *    still has its releases taken while the producer is idle (the idle
 *    rescan repeats while frames are held);
 *  - consumer-rings: pf_consumer against a raw producer (written from
 *    docs/protocol.md): a ring header of zeros (a producer from before
 *    issue 35) gets a ring per release; the flag without release_want
 *    none; with it, one per release.
 * The producer's idle rescan (pf-producer-release.c) would take
 * unrung releases after 500 ms and hide a doorbell that never rings: these
 * producers run with PINNEDFLOW_RELEASE_IDLE_MS=0 (never), so a ring that
 * does not come fails the case (WAIT_FOR's 30 s), except idle-rescan
 * and quiet-consumer-idle, which check that path with a delay of 50 ms.
 *
 * Processes: each case runs in a forked child (harness.c); producer and
 * consumer are threads of it, or the consumer is raw (its rings read off
 * the socketpair in this thread).
 */
#include "harness.h"
#include "pf-test-util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEG_SIZE 4096u
#define N_FRAMES 60

/* ---- a pf_consumer on a thread: every frame checked, then released ---- */

struct reader
{
  pf_consumer *c;
  int n;                        /* frames to read */
  int hold_ms;                  /* each held this long before its release */
  atomic_int got;               /* frames read, intact and in order */
  int error;                    /* 0, or what went wrong (its line) */
  pthread_t th;
};

static void *
reader_thread (void *data)
{
  struct reader *r = data;
  uint64_t next = 1;
  pf_event ev;
  int res;

  while (atomic_load (&r->got) < r->n) {
    memset (&ev, 0, sizeof (ev));
    res = pf_consumer_receive (r->c, 20000 * t_slow_factor (), &ev);
    if (res != 1) {
      r->error = __LINE__;
      return NULL;
    }
    if (ev.type == PF_EVENT_FRAME) {
      if (ev.frame.seq != next || !t_check_fill (ev.data[0], SEG_SIZE, next)) {
        r->error = __LINE__;
        pf_consumer_event_clear (&ev);
        return NULL;
      }
      if (r->hold_ms > 0)
        t_sleep_ms (r->hold_ms);
      if (pf_consumer_release (r->c, ev.frame.seq) != 0) {
        r->error = __LINE__;
        pf_consumer_event_clear (&ev);
        return NULL;
      }
      next++;
      atomic_fetch_add (&r->got, 1);
    }
    pf_consumer_event_clear (&ev);
  }
  return NULL;
}

static void
reader_start (struct reader *r, uint32_t delivery, int n, int hold_ms)
{
  pf_consumer_options opts = {.delivery = delivery };

  memset (r, 0, sizeof (*r));
  r->c = t_connect (&opts);
  r->n = n;
  r->hold_ms = hold_ms;
  CHECK_INT (pthread_create (&r->th, NULL, reader_thread, r), ==, 0);
}

static void
reader_join (struct reader *r)
{
  CHECK_INT (pthread_join (r->th, NULL), ==, 0);
  CHECK_MSG (r->error == 0, "the consumer failed (test-wake.c:%d)", r->error);
  CHECK_INT (atomic_load (&r->got), ==, r->n);
}

/* The producer, max_held @max_frames, not live, no idle rescan (see the
 * top), and one consumer in. */
static void
start (t_producer * tp, pf_segment ** seg, unsigned int max_frames,
    unsigned int n_slots)
{
  pf_producer_config cfg;

  memset (&cfg, 0, sizeof (cfg));
  cfg.reliable_timeout_ms = 60000;      /* nobody is demoted here */
  setenv ("PINNEDFLOW_RELEASE_IDLE_MS", "0", 1);
  CHECK_INT (t_producer_start_config (tp, t_path ("sock"), max_frames, &cfg),
      ==, 0);
  unsetenv ("PINNEDFLOW_RELEASE_IDLE_MS");
  CHECK_INT (pf_producer_set_caps (tp->p, "video/x-raw"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * n_slots, 0, seg), ==, 0);
}

/* The one client's stats. */
static pf_client_stats
stats_of (t_producer * tp)
{
  pf_client_stats st;

  memset (&st, 0, sizeof (st));
  CHECK_INT (pf_producer_get_client_stats (tp->p, &st, 1), ==, 1);
  return st;
}

static void
wait_connected (t_producer * tp, int n)
{
  WAIT_FOR (atomic_load (&tp->connected) == n &&
      pf_producer_get_n_clients (tp->p) == (unsigned int) n);
}

/* ---- cases ---- */

/* One release while the producer wants one, one while it does not. */
static void
test_want_rings (void)
{
  int fds0 = t_count_fds ();
  pf_consumer_options opts = {.delivery = PF_DELIVERY_EVERY_FRAME };
  pf_consumer *c;
  pf_segment *seg;
  t_producer tp;
  pf_event ev;
  int i;

  start (&tp, &seg, 4, 4);
  c = t_connect (&opts);
  wait_connected (&tp, 1);
  for (i = 1; i <= 3; i++) {
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i - 1) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
    do {
      memset (&ev, 0, sizeof (ev));
      CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
      if (ev.type != PF_EVENT_FRAME)
        pf_consumer_event_clear (&ev);
    } while (ev.type != PF_EVENT_FRAME);
    CHECK_INT (ev.frame.seq, ==, i);
    if (i == 1) {
      /* wanted: the release rings, the I/O thread takes it */
      CHECK_INT (pf_producer_want_releases (tp.p, 1), ==, 0);
      CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
      WAIT_FOR (atomic_load (&tp.released) == 1);
      CHECK_INT (pf_producer_want_releases (tp.p, 0), ==, 0);
      CHECK_INT (stats_of (&tp).release_rings, ==, 1);
    } else {
      /* not wanted: no ring; the next publish (or want) takes it */
      CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
      t_sleep_ms (20);
      CHECK_INT (atomic_load (&tp.released), ==, i - 1);
      CHECK_INT (stats_of (&tp).release_rings, ==, 1);
    }
    pf_consumer_event_clear (&ev);
  }
  /* a wait that begins takes what is there already, and rings nothing */
  CHECK_INT (pf_producer_want_releases (tp.p, 1), ==, 0);
  CHECK_INT (atomic_load (&tp.released), ==, 3);
  CHECK_INT (pf_producer_want_releases (tp.p, 0), ==, 0);
  CHECK_INT (stats_of (&tp).release_rings, ==, 1);
  CHECK_INT (stats_of (&tp).frames_released, ==, 3);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* Two slots, a consumer that holds each frame a little: the producer runs
 * dry at every frame and waits until frame_released gives a slot back. */
static void
test_pool_dry (void)
{
  int fds0 = t_count_fds ();
  pf_client_stats st;
  struct reader r;
  pf_segment *seg;
  t_producer tp;
  int i, waits = 0;

  start (&tp, &seg, 2, 2);
  reader_start (&r, PF_DELIVERY_EVERY_FRAME, N_FRAMES, 2);
  wait_connected (&tp, 1);
  for (i = 1; i <= N_FRAMES; i++) {
    /* slots out: published and not yet released */
    if (i - 1 - atomic_load (&tp.released) >= 2) {
      waits++;
      T_WAIT_RELEASED (&tp, i - 1 - atomic_load (&tp.released) < 2);
    }
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 2) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
  }
  reader_join (&r);
  T_WAIT_RELEASED (&tp, atomic_load (&tp.released) == N_FRAMES);
  st = stats_of (&tp);
  printf ("# %d waits for a slot, %u rings for %" PRIu64 " releases\n",
      waits, st.release_rings, st.frames_released);
  CHECK_INT (waits, >, 0);
  CHECK_INT (st.frames_released, ==, N_FRAMES);
  CHECK_INT (st.release_rings, >, 0);
  CHECK_INT (st.release_rings, <=, N_FRAMES);
  CHECK_INT (st.frames_dropped, ==, 0);
  pf_consumer_unref (r.c);
  t_finish (&tp, seg, fds0);
}

/* max_held 1: every publish fills the consumer, and the next
 * pf_producer_wait_ready () waits for its release. */
static void
test_wait_ready (void)
{
  int fds0 = t_count_fds ();
  pf_client_stats st;
  struct reader r;
  pf_segment *seg;
  t_producer tp;
  int i;

  start (&tp, &seg, 1, 2);
  reader_start (&r, PF_DELIVERY_EVERY_FRAME, N_FRAMES, 2);
  wait_connected (&tp, 1);
  for (i = 1; i <= N_FRAMES; i++) {
    CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 2) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
  }
  reader_join (&r);
  CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
  st = stats_of (&tp);
  printf ("# %u rings for %" PRIu64 " releases\n", st.release_rings,
      st.frames_released);
  CHECK_INT (st.frames_released, ==, N_FRAMES);
  CHECK_INT (st.release_rings, >, 0);
  CHECK_INT (st.release_rings, <=, N_FRAMES);
  CHECK_INT (st.demoted, ==, 0);
  CHECK_INT (st.frames_dropped, ==, 0);
  CHECK_INT (atomic_load (&tp.events[PF_CLIENT_EVENT_DEMOTED]), ==, 0);
  pf_consumer_unref (r.c);
  t_finish (&tp, seg, fds0);
}

/* A publisher that never waits: the consumer releases every frame and
 * rings for none. */
static void
test_few_rings (void)
{
  int fds0 = t_count_fds ();
  pf_client_stats st;
  struct reader r;
  pf_segment *seg;
  t_producer tp;
  int i, n = 4 * N_FRAMES;

  start (&tp, &seg, 8, 16);
  reader_start (&r, PF_DELIVERY_EVERY_FRAME, n, 0);
  wait_connected (&tp, 1);
  for (i = 1; i <= n; i++) {
    /* the consumer keeps up: it released every frame before this one
     * (one that lags, holding more than half its limit at a publish, is
     * asked to ring: pf-producer-release.c, release_held ()); this reads
     * a counter of the consumer's thread, no release of ours */
    WAIT_FOR (atomic_load (&r.got) >= i - 1);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 16) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
  }
  reader_join (&r);
  st = stats_of (&tp);
  printf ("# %u rings for %" PRIu64 " releases taken by publishing\n",
      st.release_rings, st.frames_released);
  CHECK_INT (st.release_rings, ==, 0);
  CHECK_INT (st.frames_released, >=, (uint64_t) n - 8);
  CHECK_INT (st.frames_dropped, ==, 0);
  /* the last ones, wanted now: rung (or taken by the want itself) */
  T_WAIT_RELEASED (&tp, atomic_load (&tp.released) == n);
  CHECK_INT (stats_of (&tp).release_rings, <=, 8);
  pf_consumer_unref (r.c);
  t_finish (&tp, seg, fds0);
}

/* A consumer that lags (more than half its limit, 3 of 4 frames, held at
 * a publish) is asked to ring until a publish finds it caught up. */
static void
test_lagging (void)
{
  int fds0 = t_count_fds ();
  pf_consumer_options opts = {.delivery = PF_DELIVERY_EVERY_FRAME };
  uint64_t seqs[4];
  pf_consumer *c;
  pf_segment *seg;
  t_producer tp;
  pf_event ev;
  int i;

  start (&tp, &seg, 4, 4);
  c = t_connect (&opts);
  wait_connected (&tp, 1);
  /* three frames out: it lags */
  for (i = 1; i <= 3; i++) {
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i - 1) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
    do {
      memset (&ev, 0, sizeof (ev));
      CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
      if (ev.type != PF_EVENT_FRAME)
        pf_consumer_event_clear (&ev);
    } while (ev.type != PF_EVENT_FRAME);
    seqs[i - 1] = ev.frame.seq;
    pf_consumer_event_clear (&ev);
  }
  /* its releases ring, and come back without a publish or a wait */
  for (i = 0; i < 3; i++)
    CHECK_INT (pf_consumer_release (c, seqs[i]), ==, 0);
  WAIT_FOR (atomic_load (&tp.released) == 3);
  CHECK_INT (stats_of (&tp).release_rings, >=, 1);
  /* caught up: the next publish ends it */
  CHECK_INT (t_publish (&tp, seg, 3 * SEG_SIZE, SEG_SIZE, 4), ==, 1);
  do {
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
    if (ev.type != PF_EVENT_FRAME)
      pf_consumer_event_clear (&ev);
  } while (ev.type != PF_EVENT_FRAME);
  seqs[3] = ev.frame.seq;
  pf_consumer_event_clear (&ev);
  i = (int) stats_of (&tp).release_rings;
  CHECK_INT (pf_consumer_release (c, seqs[3]), ==, 0);
  t_sleep_ms (20);
  CHECK_INT (atomic_load (&tp.released), ==, 3);
  CHECK_INT (stats_of (&tp).release_rings, ==, (uint32_t) i);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* The idle rescan: nothing published for its delay, releases are taken
 * without anyone waiting, and the doorbell is wanted from then on. */
static void
test_idle_rescan (void)
{
  int fds0 = t_count_fds ();
  pf_consumer_options opts = {.delivery = PF_DELIVERY_EVERY_FRAME };
  pf_producer_config cfg;
  pf_consumer *c;
  pf_segment *seg;
  t_producer tp;
  pf_event ev;

  memset (&cfg, 0, sizeof (cfg));
  setenv ("PINNEDFLOW_RELEASE_IDLE_MS", "50", 1);
  CHECK_INT (t_producer_start_config (&tp, t_path ("sock"), 4, &cfg), ==, 0);
  unsetenv ("PINNEDFLOW_RELEASE_IDLE_MS");
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg), ==, 0);
  c = t_connect (&opts);
  wait_connected (&tp, 1);
  CHECK_INT (t_publish (&tp, seg, 0, SEG_SIZE, 1), ==, 1);
  do {
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
    if (ev.type != PF_EVENT_FRAME)
      pf_consumer_event_clear (&ev);
  } while (ev.type != PF_EVENT_FRAME);
  CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
  pf_consumer_event_clear (&ev);
  /* nobody waits, nobody publishes: frame_released all the same */
  WAIT_FOR (atomic_load (&tp.released) == 1);
  pf_consumer_unref (c);
  t_finish (&tp, seg, fds0);
}

/* ---- raw peers, written from docs/protocol.md ---- */

/* A consumer that never rings, even when asked (a hostile or broken one):
 * while the producer stays idle, its releases are taken all the same, by
 * the idle rescan, as long as frames are held. */
static void
test_quiet_consumer_idle (void)
{
  int fds0 = t_count_fds ();
  uint8_t buf[PF_MAX_MSG_SIZE], *map = NULL, *rel;
  int got[8], n_got, i, k, fd = -1, bells[2] = { -1, -1 };
  uint64_t size = 0, rel_off = 0, seq;
  pf_producer_config cfg;
  uint32_t n = 0;
  pf_segment *seg;
  t_producer tp;
  ssize_t len;

  memset (&cfg, 0, sizeof (cfg));
  setenv ("PINNEDFLOW_RELEASE_IDLE_MS", "50", 1);
  CHECK_INT (t_producer_start_config (&tp, t_path ("sock"), 2, &cfg), ==, 0);
  unsetenv ("PINNEDFLOW_RELEASE_IDLE_MS");
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 2, 0, &seg), ==, 0);
  for (k = 0; k < 500 && (fd = pf_test_connect (t_path ("sock"))) < 0; k++)
    t_sleep_ms (10);
  CHECK (fd >= 0);
  pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  t_put32 (buf, 28, PF_DELIVERY_EVERY_FRAME | PF_HELLO_FRAME_RING);
  CHECK_INT (send (fd, buf, 40, MSG_NOSIGNAL), ==, 40);
  while (map == NULL) {
    len = t_raw_recv (fd, buf, sizeof (buf), got, 8, &n_got);
    CHECK_MSG (len > 0, "no FRAME_RING (recv %zd)", len);
    if (t_get32 (buf, 0) != PF_MSG_FRAME_RING || n_got != 3) {
      for (i = 0; i < n_got; i++)
        close (got[i]);
      continue;
    }
    n = t_get32 (buf, 16);
    memcpy (&size, buf + 24, 8);
    memcpy (&rel_off, buf + 32, 8);
    map = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, got[0], 0);
    close (got[0]);
    bells[0] = got[1];
    bells[1] = got[2];
    CHECK (map != MAP_FAILED);
  }
  CHECK_INT (n, ==, 2);         /* entries for max_held 2 */
  rel = map + rel_off;
  /* the producer says it rings on demand */
  CHECK_INT (t_get32 (rel, 16) & PF_RELEASE_RING_ON_DEMAND, !=, 0);
  wait_connected (&tp, 1);
  CHECK_INT (t_publish (&tp, seg, 0, SEG_SIZE, 1), ==, 1);
  CHECK_INT (__atomic_load_n ((uint64_t *) (map + 8), __ATOMIC_ACQUIRE), ==, 1);
  memcpy (&seq, map + 64 + 16, 8);
  CHECK_INT (seq, ==, 1);
  /* idle: it asks for the doorbell */
  WAIT_FOR (__atomic_load_n ((uint32_t *) (map + 16), __ATOMIC_RELAXED) != 0);
  /* released in the ring, and never rung */
  __atomic_store_n ((uint64_t *) (rel + 64), seq, __ATOMIC_RELAXED);
  __atomic_store_n ((uint64_t *) rel, 1, __ATOMIC_RELEASE);
  WAIT_FOR (atomic_load (&tp.released) == 1);
  CHECK_INT (stats_of (&tp).release_rings, ==, 0);
  CHECK_INT (stats_of (&tp).held, ==, 0);
  munmap (map, size);
  close (bells[0]);
  close (bells[1]);
  close (fd);
  t_finish (&tp, seg, fds0);
}

/* A consumer of before issue 35: it rings after every release, whatever
 * the ring's header says. Reads @n frames (every frame, max_held 1) and
 * releases each. */
struct old_consumer
{
  int n;
};

static int
old_consumer_main (void *data)
{
  struct old_consumer *o = data;
  uint8_t buf[PF_MAX_MSG_SIZE], *map = NULL, *rel;
  int got[8], n_got, i, fd = -1, bells[2] = { -1, -1 }, k;
  uint64_t size = 0, rel_off = 0, r = 0, rel_w = 0, w, seq;
  uint32_t n = 0;
  struct pollfd pfd;
  ssize_t len;
  char b[64];

  for (k = 0; k < 500 && (fd = pf_test_connect (t_path ("sock"))) < 0; k++)
    t_sleep_ms (10);
  if (fd < 0)
    return 2;
  pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  t_put32 (buf, 28, PF_DELIVERY_EVERY_FRAME | PF_HELLO_FRAME_RING);
  if (send (fd, buf, 40, MSG_NOSIGNAL) != 40)
    return 3;
  while (map == NULL) {
    len = t_raw_recv (fd, buf, sizeof (buf), got, 8, &n_got);
    if (len <= 0)
      return 4;
    if (t_get32 (buf, 0) != PF_MSG_FRAME_RING || n_got != 3) {
      for (i = 0; i < n_got; i++)
        close (got[i]);
      continue;
    }
    n = t_get32 (buf, 16);
    memcpy (&size, buf + 24, 8);
    memcpy (&rel_off, buf + 32, 8);
    map = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, got[0], 0);
    close (got[0]);
    bells[0] = got[1];
    bells[1] = got[2];
    if (map == MAP_FAILED)
      return 5;
  }
  rel = map + rel_off;
  while (r < (uint64_t) o->n) {
    /* the frame doorbell, then the entry (the socket's messages are read
     * and thrown away: none of them matters here) */
    struct pollfd two[2] = { {.fd = bells[0],.events = POLLIN},
    {.fd = fd,.events = POLLIN}
    };
    if (poll (two, 2, 20000) <= 0)
      return 6;
    if (two[1].revents) {
      len = t_raw_recv (fd, buf, sizeof (buf), got, 8, &n_got);
      for (i = 0; i < n_got; i++)
        close (got[i]);
      if (len <= 0)
        return 7;
    }
    if (two[0].revents)
      (void) recv (bells[0], b, sizeof (b), MSG_DONTWAIT);
    w = __atomic_load_n ((uint64_t *) (map + 8), __ATOMIC_ACQUIRE);
    while (r < w) {
      memcpy (&seq, map + 64 + (r % n) * 256 + 16, 8);
      r++;
      if (seq != r)
        return 8;
      /* release it: the seq, write_seq, then always a ring */
      __atomic_store_n ((uint64_t *) (rel + 64) + rel_w % n, seq,
          __ATOMIC_RELAXED);
      rel_w++;
      __atomic_store_n ((uint64_t *) rel, rel_w, __ATOMIC_RELEASE);
      if (send (bells[1], "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
        return 9;
    }
  }
  /* until the producer hangs up */
  pfd.fd = fd;
  pfd.events = POLLIN;
  while (poll (&pfd, 1, 20000) > 0) {
    len = t_raw_recv (fd, buf, sizeof (buf), got, 8, &n_got);
    for (i = 0; i < n_got; i++)
      close (got[i]);
    if (len <= 0)
      break;
  }
  munmap (map, size);
  close (bells[0]);
  close (bells[1]);
  close (fd);
  return 0;
}

static void
test_old_consumer (void)
{
  int fds0 = t_count_fds ();
  struct old_consumer o = {.n = N_FRAMES };
  pf_client_stats st;
  pf_segment *seg;
  t_producer tp;
  pid_t pid;
  int i;

  /* forked first: it holds no copy of the producer's fds */
  pid = t_spawn (old_consumer_main, &o);
  start (&tp, &seg, 1, 2);
  wait_connected (&tp, 1);
  for (i = 1; i <= N_FRAMES; i++) {
    CHECK_INT (pf_producer_wait_ready (tp.p, -1), ==, 0);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 2) * SEG_SIZE, SEG_SIZE,
            (uint64_t) i), ==, 1);
  }
  /* its rings wake the I/O thread: every release comes back */
  WAIT_FOR (atomic_load (&tp.released) == N_FRAMES);
  /* each frame released once, by its release (a frame given back twice
   * would count here and not there) */
  st = stats_of (&tp);
  CHECK_INT (st.frames_released, ==, N_FRAMES);
  CHECK_INT (st.held, ==, 0);
  WAIT_FOR (stats_of (&tp).release_rings == N_FRAMES);
  CHECK_INT (atomic_load (&tp.events[PF_CLIENT_EVENT_DEMOTED]), ==, 0);
  t_producer_stop (&tp);
  CHECK_INT (t_wait (pid), ==, 0);
  pf_segment_unref (seg);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* Bytes waiting on @fd (a release doorbell's far end), read off. */
static int
rings_read (int fd)
{
  char b[256];
  ssize_t k;
  int n = 0;

  while ((k = recv (fd, b, sizeof (b), MSG_DONTWAIT)) > 0)
    n += (int) k;
  return n;
}

/* pf_consumer against a producer that announces @flags in its release
 * ring and keeps @want in release_want: the rings for three releases. */
static int
consumer_rings_with (uint32_t flags, uint32_t want)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  struct pf_frame_ring *ring;
  struct pf_release_ring *rel;
  struct pf_msg_frame f;
  int sv[2], fds[3], bell[2], relbell[2], memfd, segfd, rings;
  uint32_t sent = 0, n = 4, i;
  pf_consumer *c;
  pf_event ev;
  void *seg;

  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_hello (buf,
              PF_ROLE_PRODUCER, n, 42), NULL, 0), ==, 0);
  sent++;
  unsetenv ("PINNEDFLOW_FRAME_RING");
  CHECK_INT (pf_consumer_new_from_fd (sv[0], 5000, &c), ==, 0);
  CHECK_INT (recv (sv[1], buf, sizeof (buf), 0), ==, 40);
  CHECK (t_get32 (buf, 28) & PF_HELLO_FRAME_RING);

  /* the ring (section 3.10): its header as the case says */
  memfd = pf_test_memfd (PF_FRAME_RING_SIZE (n), 1);
  CHECK_INT (memfd, >=, 0);
  ring = mmap (NULL, PF_FRAME_RING_SIZE (n), PROT_READ | PROT_WRITE,
      MAP_SHARED, memfd, 0);
  CHECK (ring != MAP_FAILED);
  ring->magic = PF_FRAME_RING_MAGIC;
  ring->n_entries = n;
  ring->release_want = want;
  rel = (struct pf_release_ring *) ((uint8_t *) ring +
      PF_FRAME_RING_RELEASE_OFFSET (n));
  rel->flags = flags;
  CHECK_INT (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, bell), ==, 0);
  CHECK_INT (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, relbell), ==,
      0);
  fds[0] = memfd;
  fds[1] = bell[1];
  fds[2] = relbell[1];
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_frame_ring (buf, n),
          fds, 3), ==, 0);
  sent++;
  close (memfd);
  close (bell[1]);
  close (relbell[1]);
  segfd = pf_test_memfd (SEG_SIZE, 1);
  CHECK_INT (segfd, >=, 0);
  seg = mmap (NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, segfd, 0);
  CHECK (seg != MAP_FAILED);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_segment_add (buf, 1,
              SEG_SIZE), &segfd, 1), ==, 0);
  sent++;
  close (segfd);
  CHECK_INT (pf_test_send_fds (sv[1], buf, pf_msg_write_caps (buf, 1,
              "video/x-raw"), NULL, 0), ==, 0);
  sent++;
  memset (&ev, 0, sizeof (ev));
  CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  pf_consumer_event_clear (&ev);

  /* three frames, one at a time, each received and released */
  rings = 0;
  for (i = 1; i <= 3; i++) {
    memset (&f, 0, sizeof (f));
    f.seq = i;
    f.caps_seq = 1;
    f.n_chunks = 1;
    f.chunks[0].segment_id = 1;
    f.chunks[0].size = SEG_SIZE;
    pf_msg_write_frame ((uint8_t *) (ring + 1) + ((i - 1) % n) * 256, &f);
    t_put32 ((uint8_t *) (ring + 1) + ((i - 1) % n) * 256,
        offsetof (struct pf_msg_header, reserved), sent);
    __atomic_store_n (&ring->write_seq, i, __ATOMIC_RELEASE);
    CHECK_INT (send (bell[0], "f", 1, MSG_DONTWAIT), ==, 1);
    memset (&ev, 0, sizeof (ev));
    CHECK_INT (pf_consumer_receive (c, 5000, &ev), ==, 1);
    CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
    CHECK_INT (ev.frame.seq, ==, i);
    CHECK_INT (pf_consumer_release (c, i), ==, 0);
    pf_consumer_event_clear (&ev);
    /* the release is in the ring, rung or not */
    CHECK_INT (__atomic_load_n (&rel->write_seq, __ATOMIC_ACQUIRE), ==, i);
    CHECK_INT (((uint64_t *) (rel + 1))[(i - 1) % n], ==, i);
    rings += rings_read (relbell[0]);
  }

  pf_consumer_unref (c);
  close (sv[1]);
  close (bell[0]);
  close (relbell[0]);
  munmap (ring, PF_FRAME_RING_SIZE (n));
  munmap (seg, SEG_SIZE);
  return rings;
}

static void
test_consumer_rings (void)
{
  int fds0 = t_count_fds ();

  /* zeros: a producer of before issue 35, rung after every release */
  CHECK_INT (consumer_rings_with (0, 0), ==, 3);
  CHECK_INT (consumer_rings_with (0, 1), ==, 3);
  /* on demand: none while not wanted, each while wanted */
  CHECK_INT (consumer_rings_with (PF_RELEASE_RING_ON_DEMAND, 0), ==, 0);
  CHECK_INT (consumer_rings_with (PF_RELEASE_RING_ON_DEMAND, 1), ==, 3);
  CHECK_INT (t_count_fds (), ==, fds0);
}

int
main (int argc, char **argv)
{
  static const t_case cases[] = {
    {"want-rings", test_want_rings},
    {"pool-dry", test_pool_dry},
    {"wait-ready", test_wait_ready},
    {"few-rings", test_few_rings},
    {"lagging", test_lagging},
    {"idle-rescan", test_idle_rescan},
    {"quiet-consumer-idle", test_quiet_consumer_idle},
    {"old-consumer", test_old_consumer},
    {"consumer-rings", test_consumer_rings},
    {NULL, NULL}
  };

  return t_main (argc, argv, cases);
}
