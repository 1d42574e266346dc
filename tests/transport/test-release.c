/* pinnedflow tests: a release in the ring counts at the next publish
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (docs/design.md, "The frame ring"; issue 35): a publisher takes
 * the releases a consumer published in its release ring before it judges
 * whether that consumer has room, so a consumer that released is never
 * dropped (newest frame) or waited for (every frame) because the
 * producer's I/O thread has not run yet. On a loaded machine that race cost
 * a newest-frame consumer frames (tests/bridge/test_python_delivery.py,
 * "frame 5 reached 2 consumers, want 3", in the trixie root of CI).
 *
 * The cases make the race certain instead of rare: the consumer is written
 * from docs/protocol.md (section 3.10) and publishes its releases in the
 * release ring without ringing the release doorbell, so the I/O thread
 * never learns of them; only the publisher can. With one frame to hold
 * (max_held 1), each publish must still reach it, and frame_released must
 * have run for the previous frame by the time publish returns.
 *
 * Processes: the case runs in a forked child (harness.c); producer and the
 * raw consumer are both in it (the consumer's side never blocks: the
 * ring is read only after the publish that filled it returned).
 */
#include "harness.h"
#include "pf-test-util.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEG_SIZE 4096u
#define ROUNDS 50

/* The consumer of docs/protocol.md, section 3.10, that never rings. */
typedef struct
{
  int fd;                       /* its socket */
  int bells[2];                 /* frame doorbell, release doorbell */
  uint8_t *map;                 /* the rings */
  size_t size;
  uint32_t n;                   /* entries */
  uint64_t rel_off;             /* release ring's offset in map */
  uint64_t r;                   /* entries read */
  uint64_t rel_w;               /* releases published */
} quiet_consumer;

static void
quiet_connect (quiet_consumer * q, uint32_t delivery)
{
  uint8_t buf[PF_MAX_MSG_SIZE];
  int got[8], n_got, i, k;
  ssize_t len;

  memset (q, 0, sizeof (*q));
  q->bells[0] = q->bells[1] = -1;
  for (k = 0; k < 500 && (q->fd = pf_test_connect (t_path ("sock"))) < 0; k++)
    t_sleep_ms (10);
  CHECK_MSG (q->fd >= 0, "connect to %s", t_path ("sock"));
  /* HELLO (section 3.1): role consumer, @delivery | FRAME_RING */
  pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  t_put32 (buf, 28, delivery | PF_HELLO_FRAME_RING);
  CHECK_INT (send (q->fd, buf, 40, MSG_NOSIGNAL), ==, 40);
  /* the producer's HELLO, then the FRAME_RING */
  while (q->map == NULL) {
    len = t_raw_recv (q->fd, buf, sizeof (buf), got, 8, &n_got);
    CHECK_MSG (len > 0, "no FRAME_RING (recv %zd)", len);
    if (t_get32 (buf, 0) != PF_MSG_FRAME_RING || n_got != 3) {
      for (i = 0; i < n_got; i++)
        close (got[i]);
      continue;
    }
    q->n = t_get32 (buf, 16);
    memcpy (&q->size, buf + 24, 8);
    memcpy (&q->rel_off, buf + 32, 8);
    q->map = mmap (NULL, q->size, PROT_READ | PROT_WRITE, MAP_SHARED,
        got[0], 0);
    close (got[0]);
    q->bells[0] = got[1];
    q->bells[1] = got[2];
    CHECK (q->map != MAP_FAILED);
  }
}

/* The seq of the next entry of the frame ring (published: the caller
 * published it and the publish returned, so it is there). */
static uint64_t
quiet_take (quiet_consumer * q)
{
  uint64_t w, seq;

  w = __atomic_load_n ((uint64_t *) (q->map + 8), __ATOMIC_ACQUIRE);
  CHECK_MSG (w > q->r, "no frame in the ring (write_seq %" PRIu64 ", %"
      PRIu64 " read)", w, q->r);
  memcpy (&seq, q->map + 64 + (q->r % q->n) * 256 + 16, 8);
  q->r++;
  return seq;
}

/* Releases @seq through the release ring, and does not ring. */
static void
quiet_release (quiet_consumer * q, uint64_t seq)
{
  uint8_t *rel = q->map + q->rel_off;
  uint64_t *slots = (uint64_t *) (rel + 64);

  CHECK (q->rel_w - __atomic_load_n ((uint64_t *) (rel + 8),
          __ATOMIC_ACQUIRE) < q->n);
  __atomic_store_n (&slots[q->rel_w % q->n], seq, __ATOMIC_RELAXED);
  q->rel_w++;
  __atomic_store_n ((uint64_t *) rel, q->rel_w, __ATOMIC_RELEASE);
}

static void
quiet_close (quiet_consumer * q)
{
  munmap (q->map, q->size);
  close (q->bells[0]);
  close (q->bells[1]);
  close (q->fd);
}

/* The producer (max_held 1), then @q connected with @delivery. */
static void
start (t_producer * tp, pf_segment ** seg, quiet_consumer * q,
    uint32_t delivery)
{
  pf_producer_config cfg;
  int k;

  memset (&cfg, 0, sizeof (cfg));
  cfg.live = 0;
  cfg.reliable_timeout_ms = 30000;      /* nobody is demoted here */
  CHECK_INT (t_producer_start_config (tp, t_path ("sock"), 1, &cfg), ==, 0);
  pf_producer_set_caps (tp->p, "video/x-raw");
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 2, 0, seg), ==, 0);
  quiet_connect (q, delivery);
  for (k = 0; k < 5000 && atomic_load (&tp->connected) < 1; k++)
    t_sleep_ms (1);
  CHECK_MSG (atomic_load (&tp->connected) == 1, "the consumer never came "
      "in");
}

/* Newest frame, one frame to hold: every publish reaches it. */
static void
test_newest_quiet_release (void)
{
  int fds0 = t_count_fds ();
  quiet_consumer q;
  pf_segment *seg;
  t_producer tp;
  uint64_t i;

  start (&tp, &seg, &q, PF_DELIVERY_NEWEST_FRAME);
  for (i = 1; i <= ROUNDS; i++) {
    CHECK_MSG (t_publish (&tp, seg, (i % 2) * SEG_SIZE, SEG_SIZE, i) == 1,
        "frame %" PRIu64 " did not reach the consumer that released the "
        "frame before it (dropped at its limit)", i);
    CHECK_INT (atomic_load (&tp.released), ==, (int) i - 1);
    CHECK_INT (quiet_take (&q), ==, i);
    quiet_release (&q, i);
  }
  CHECK_INT (atomic_load (&tp.events[PF_CLIENT_EVENT_DROPPED]), ==, 0);
  quiet_close (&q);
  t_finish (&tp, seg, fds0);
}

/* Every frame, one frame to hold: wait_ready never waits for a consumer
 * whose release is in the ring. */
static void
test_every_quiet_release (void)
{
  int fds0 = t_count_fds ();
  quiet_consumer q;
  pf_segment *seg;
  t_producer tp;
  uint64_t i;

  start (&tp, &seg, &q, PF_DELIVERY_EVERY_FRAME);
  for (i = 1; i <= ROUNDS; i++) {
    CHECK_MSG (pf_producer_wait_ready (tp.p, 0) == 0, "frame %" PRIu64
        ": the producer waits for a consumer that released", i);
    CHECK_INT (t_publish (&tp, seg, (i % 2) * SEG_SIZE, SEG_SIZE, i), ==, 1);
    CHECK_INT (quiet_take (&q), ==, i);
    /* at its limit now: a wait finds it full */
    CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, -ETIMEDOUT);
    quiet_release (&q, i);
    CHECK_INT (pf_producer_wait_ready (tp.p, 0), ==, 0);
    CHECK_INT (atomic_load (&tp.released), ==, (int) i);
  }
  CHECK_INT (atomic_load (&tp.events[PF_CLIENT_EVENT_DEMOTED]), ==, 0);
  quiet_close (&q);
  t_finish (&tp, seg, fds0);
}

int
main (int argc, char **argv)
{
  static const t_case cases[] = {
    {"newest-quiet-release", test_newest_quiet_release},
    {"every-quiet-release", test_every_quiet_release},
    {NULL, NULL}
  };

  return t_main (argc, argv, cases);
}
