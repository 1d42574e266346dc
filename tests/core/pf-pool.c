/* pf_pool on its own: slots, tickets, holders, flushing, and its
 * concurrency (bound, exclusivity, no lost wake-up).
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Rules checked:
 * - a slot is never out twice: outstanding never exceeds n_slots and no two
 *   threads ever own one slot at once, however loans, holds and returns
 *   (from other threads) interleave;
 * - a slot returns only when its last holder lets go;
 * - a ticket is spent once (redeem), and a stale one never matches;
 * - every waiter wakes: on a return (each of W waiters gets the one slot in
 *   turn), on flushing (loan, wait_idle, wait_change all fail with
 *   -ECANCELED), on notify (a ping-pong of 20000 turns through the
 *   lock-free notify); a lost wake-up shows as -ETIMEDOUT after 30 s, not
 *   as a hang;
 * - the stats add up (loans, waits, timeouts, max outstanding).
 *
 * Usage: core-pf-pool [CASE]; no argument runs every case.
 */
#include "pf-test-util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pinnedflow/pf-pool.h>

#define LONG_MS 30000           /* a hang guard, not a timing assertion */

static pf_pool *
make_pool (uint32_t n_slots, uint64_t size)
{
  pf_segment *seg = NULL;
  pf_pool *pool = NULL;
  uint64_t stride;

  CHECK_INT (pf_pool_slot_stride (size, &stride), ==, 0);
  CHECK_INT (pf_segment_new ("test-pf-pool", stride * n_slots, 0, &seg), ==, 0);
  CHECK_INT (pf_pool_new (seg, stride, n_slots, &pool), ==, 0);
  pf_segment_unref (seg);
  return pool;
}

/* ------------------------------------------------------------------------ */

static void
test_slots (void)
{
  uint64_t page = pf_page_size (), stride;
  pf_pool_slot s[4], extra;
  pf_pool_stats st;
  pf_segment *seg;
  pf_pool *pool, *bad = NULL;
  uint32_t i, j;

  CHECK_INT (pf_pool_slot_stride (1, &stride), ==, 0);
  CHECK_INT (stride, ==, page);
  CHECK_INT (pf_pool_slot_stride (page + 1, &stride), ==, 0);
  CHECK_INT (stride, ==, 2 * page);
  CHECK_INT (pf_pool_slot_stride (0, &stride), ==, -EINVAL);
  CHECK_INT (pf_pool_slot_stride (UINT64_MAX, &stride), ==, -EOVERFLOW);

  pool = make_pool (4, 5000);
  seg = pf_pool_get_segment (pool);
  /* Geometry the pool refuses: no slots, a stride not a page multiple,
   * more slots than the segment holds. */
  CHECK_INT (pf_pool_new (seg, 2 * page, 0, &bad), ==, -EINVAL);
  CHECK_INT (pf_pool_new (seg, page + 1, 1, &bad), ==, -EINVAL);
  CHECK_INT (pf_pool_new (seg, 2 * page, 5, &bad), ==, -EINVAL);
  CHECK (bad == NULL);

  CHECK_INT (pf_pool_get_n_slots (pool), ==, 4);
  CHECK_INT (pf_pool_get_slot_stride (pool), ==, 2 * page);
  for (i = 0; i < 4; i++) {
    CHECK_INT (pf_pool_loan (pool, 0, &s[i]), ==, 0);
    /* Round robin from the segment's start. */
    CHECK_INT (s[i].index, ==, i);
    CHECK_INT (s[i].offset, ==, (uint64_t) i * 2 * page);
    CHECK (s[i].data == (uint8_t *) pf_segment_get_base (seg) + s[i].offset);
    CHECK_INT (s[i].size, ==, 2 * page);
    CHECK (s[i].id != 0);
    for (j = 0; j < i; j++)
      CHECK (s[j].id != s[i].id);
    memset (s[i].data, (int) i + 1, s[i].size);
  }
  for (i = 0; i < 4; i++)
    CHECK_INT (((uint8_t *) s[i].data)[s[i].size - 1], ==, i + 1);

  /* Full: 0 fails at once, a timeout times out. */
  CHECK_INT (pf_pool_loan (pool, 0, &extra), ==, -EAGAIN);
  CHECK_INT (pf_pool_loan (pool, 20, &extra), ==, -ETIMEDOUT);

  /* Two holders: the first return keeps the slot out. */
  CHECK_INT (pf_pool_hold (pool, 2), ==, 0);
  CHECK_INT (pf_pool_return (pool, 2), ==, 0);
  CHECK_INT (pf_pool_loan (pool, 0, &extra), ==, -EAGAIN);
  CHECK_INT (pf_pool_return (pool, 2), ==, 0);
  CHECK_INT (pf_pool_return (pool, 2), ==, -EINVAL);    /* already free */
  CHECK_INT (pf_pool_hold (pool, 2), ==, -EINVAL);
  CHECK_INT (pf_pool_hold (pool, 4), ==, -EINVAL);
  CHECK_INT (pf_pool_return (pool, 4), ==, -EINVAL);
  /* The stale ticket of slot 2 never matches again. */
  CHECK_INT (pf_pool_redeem (pool, 2, s[2].id), ==, -EINVAL);
  CHECK_INT (pf_pool_loan (pool, 0, &extra), ==, 0);
  CHECK_INT (extra.index, ==, 2);
  CHECK (extra.id != s[2].id);
  CHECK_INT (pf_pool_redeem (pool, 2, s[2].id), ==, -EINVAL);
  s[2] = extra;

  /* A ticket is spent once. */
  CHECK_INT (pf_pool_redeem (pool, 0, 0), ==, -EINVAL);
  CHECK_INT (pf_pool_redeem (pool, 0, s[1].id), ==, -EINVAL);
  CHECK_INT (pf_pool_redeem (pool, 0, s[0].id), ==, 0);
  CHECK_INT (pf_pool_redeem (pool, 0, s[0].id), ==, -EINVAL);

  /* wait_idle waits for redeemed slots only: slot 0. */
  CHECK_INT (pf_pool_wait_idle (pool, 0), ==, -ETIMEDOUT);
  CHECK_INT (pf_pool_wait_idle (pool, 10), ==, -ETIMEDOUT);
  pf_pool_get_stats (pool, &st);
  CHECK_INT (st.n_slots, ==, 4);
  CHECK_INT (st.n_free, ==, 0);
  CHECK_INT (st.outstanding, ==, 4);
  CHECK_INT (st.redeemed, ==, 1);
  CHECK_INT (st.max_outstanding, ==, 4);
  CHECK_INT (st.loans, ==, 5);
  CHECK_INT (st.timeouts, ==, 3);
  CHECK_INT (st.waits, ==, 1);  /* the 20 ms loan */
  CHECK_INT (pf_pool_return (pool, 0), ==, 0);
  CHECK_INT (pf_pool_wait_idle (pool, 0), ==, 0);

  /* Flushing fails loans even with a free slot, then clears. */
  pf_pool_set_flushing (pool, 1);
  CHECK_INT (pf_pool_loan (pool, 0, &extra), ==, -ECANCELED);
  CHECK_INT (pf_pool_loan (pool, -1, &extra), ==, -ECANCELED);
  /* Returns go on while flushing. */
  CHECK_INT (pf_pool_return (pool, 1), ==, 0);
  pf_pool_set_flushing (pool, 0);
  CHECK_INT (pf_pool_loan (pool, 0, &extra), ==, 0);
  CHECK_INT (pf_pool_return (pool, extra.index), ==, 0);
  pf_pool_get_stats (pool, &st);
  CHECK_INT (st.cancelled, ==, 2);
  CHECK_INT (st.outstanding, ==, 2);    /* slots 2 and 3 */
  CHECK_INT (st.outstanding + st.n_free, ==, st.n_slots);

  /* The pool keeps its segment; it goes with the last pool reference. */
  CHECK_INT (pf_segment_count_live (), ==, 1);
  CHECK (pf_pool_ref (pool) == pool);
  pf_pool_unref (pool);
  CHECK_INT (pf_segment_count_live (), ==, 1);
  pf_pool_unref (pool);
  CHECK_INT (pf_segment_count_live (), ==, 0);
}

/* ------------------------------------------------------------------------ */
/* Many threads: loan, hold, hand over, return                               */
/* ------------------------------------------------------------------------ */

#define N_SLOTS 3
#define N_WORKERS 6
#define N_ITERS 3000

typedef struct
{
  pf_pool *pool;
  atomic_int owner[N_SLOTS];    /* worker id + 1 owning a slot, or 0 */
  atomic_int out;               /* slots the workers hold right now */
  atomic_int max_out;
  atomic_llong loans, timeouts;

  /* Hand-over queue: a slot passed to the returner thread, which returns
   * it (so returns also come from a thread that never loaned). */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int queue[N_SLOTS * N_WORKERS];
  int n_queued;
  int done;
} Shared;

typedef struct
{
  Shared *sh;
  int id;
} Worker;

static void
note_out (Shared * sh, int delta)
{
  int now = atomic_fetch_add (&sh->out, delta) + delta;
  int max = atomic_load (&sh->max_out);

  while (now > max && !atomic_compare_exchange_weak (&sh->max_out, &max, now));
}

static void *
worker_func (void *data)
{
  Worker *w = data;
  Shared *sh = w->sh;
  pf_pool_slot s;
  int i, res, expected;

  for (i = 0; i < N_ITERS; i++) {
    /* Mostly blocking loans; some that may time out or fail at once. */
    res = pf_pool_loan (sh->pool, i % 5 == 0 ? 0 : (i % 5 == 1 ? 1 :
            LONG_MS), &s);
    if (res == -EAGAIN || res == -ETIMEDOUT) {
      CHECK_MSG (i % 5 < 2, "blocking loan failed: %d", res);
      atomic_fetch_add (&sh->timeouts, 1);
      continue;
    }
    CHECK_INT (res, ==, 0);
    atomic_fetch_add (&sh->loans, 1);
    /* Exclusive: nobody else owns this slot now. */
    expected = 0;
    CHECK_MSG (atomic_compare_exchange_strong (&sh->owner[s.index], &expected,
            w->id + 1), "slot %u owned by %d and given to %d", s.index,
        expected, w->id + 1);
    note_out (sh, 1);
    CHECK_INT (atomic_load (&sh->out), <=, N_SLOTS);
    memset (s.data, w->id, 64);
    if (((uint8_t *) s.data)[0] != w->id || ((uint8_t *) s.data)[63] != w->id)
      pf_test_fail (__FILE__, __LINE__, "slot %u overwritten", s.index);

    if (i % 3 == 0) {
      /* Two holders: ours and a second one we drop first. */
      CHECK_INT (pf_pool_hold (sh->pool, s.index), ==, 0);
      CHECK_INT (pf_pool_return (sh->pool, s.index), ==, 0);
    }
    /* The ticket is ours to spend, once. */
    if (i % 2 == 0) {
      CHECK_INT (pf_pool_redeem (sh->pool, s.index, s.id), ==, 0);
      CHECK_INT (pf_pool_redeem (sh->pool, s.index, s.id), ==, -EINVAL);
    }
    atomic_store (&sh->owner[s.index], 0);
    note_out (sh, -1);
    if (i % 4 == 0) {
      /* The returner thread lets go of it. */
      pthread_mutex_lock (&sh->lock);
      sh->queue[sh->n_queued++] = (int) s.index;
      pthread_cond_signal (&sh->cond);
      pthread_mutex_unlock (&sh->lock);
    } else {
      CHECK_INT (pf_pool_return (sh->pool, s.index), ==, 0);
    }
  }
  return NULL;
}

static void *
returner_func (void *data)
{
  Shared *sh = data;
  int slot;

  pthread_mutex_lock (&sh->lock);
  for (;;) {
    while (sh->n_queued == 0 && !sh->done)
      pthread_cond_wait (&sh->cond, &sh->lock);
    if (sh->n_queued == 0)
      break;
    slot = sh->queue[--sh->n_queued];
    pthread_mutex_unlock (&sh->lock);
    CHECK_INT (pf_pool_return (sh->pool, (uint32_t) slot), ==, 0);
    pthread_mutex_lock (&sh->lock);
  }
  pthread_mutex_unlock (&sh->lock);
  return NULL;
}

static void
test_threads (void)
{
  Shared sh;
  Worker w[N_WORKERS];
  pthread_t t[N_WORKERS], ret;
  pf_pool_stats st;
  int i;

  memset (&sh, 0, sizeof (sh));
  sh.pool = make_pool (N_SLOTS, 4096);
  pthread_mutex_init (&sh.lock, NULL);
  pthread_cond_init (&sh.cond, NULL);
  CHECK_INT (pthread_create (&ret, NULL, returner_func, &sh), ==, 0);
  for (i = 0; i < N_WORKERS; i++) {
    w[i].sh = &sh;
    w[i].id = i;
    CHECK_INT (pthread_create (&t[i], NULL, worker_func, &w[i]), ==, 0);
  }
  for (i = 0; i < N_WORKERS; i++)
    pthread_join (t[i], NULL);
  pthread_mutex_lock (&sh.lock);
  sh.done = 1;
  pthread_cond_signal (&sh.cond);
  pthread_mutex_unlock (&sh.lock);
  pthread_join (ret, NULL);

  pf_pool_get_stats (sh.pool, &st);
  /* The bound, seen by the workers and by the pool. */
  CHECK_INT (atomic_load (&sh.max_out), <=, N_SLOTS);
  CHECK_INT (atomic_load (&sh.max_out), >=, 1);
  CHECK_INT (st.max_outstanding, <=, N_SLOTS);
  CHECK_INT (st.max_outstanding, >=, atomic_load (&sh.max_out));
  /* Everything came back, and the counts add up. */
  CHECK_INT (st.outstanding, ==, 0);
  CHECK_INT (st.n_free, ==, N_SLOTS);
  CHECK_INT (st.redeemed, ==, 0);
  CHECK_INT (st.loans, ==, atomic_load (&sh.loans));
  CHECK_INT (st.timeouts, ==, atomic_load (&sh.timeouts));
  CHECK_INT (st.loans + st.timeouts, ==, (long long) N_WORKERS * N_ITERS);
  CHECK_INT (st.waits, <=, st.loans + st.timeouts);
  CHECK_INT (st.cancelled, ==, 0);
  CHECK_INT (pf_pool_wait_idle (sh.pool, 0), ==, 0);

  pf_pool_unref (sh.pool);
  pthread_cond_destroy (&sh.cond);
  pthread_mutex_destroy (&sh.lock);
}

/* ------------------------------------------------------------------------ */
/* No lost wake-up                                                           */
/* ------------------------------------------------------------------------ */

#define N_WAITERS 8

typedef struct
{
  pf_pool *pool;
  int kind;                     /* 0 loan, 1 wait_idle, 2 wait_change */
  uint32_t change;
  int res;
  atomic_int *got;
} Waiter;

static void *
waiter_func (void *data)
{
  Waiter *w = data;
  pf_pool_slot s;

  switch (w->kind) {
    case 0:
      w->res = pf_pool_loan (w->pool, LONG_MS, &s);
      if (w->res == 0) {
        atomic_fetch_add (w->got, 1);
        /* Pass the one slot on to the next waiter. */
        CHECK_INT (pf_pool_return (w->pool, s.index), ==, 0);
      }
      break;
    case 1:
      w->res = pf_pool_wait_idle (w->pool, LONG_MS);
      break;
    default:
      w->res = pf_pool_wait_change (w->pool, w->change, LONG_MS);
      break;
  }
  return NULL;
}

static void
start_waiters (Waiter * w, pthread_t * t, int n, pf_pool * pool, int kind,
    atomic_int * got)
{
  int i;

  for (i = 0; i < n; i++) {
    w[i].pool = pool;
    w[i].kind = kind;
    w[i].change = pf_pool_get_change (pool);
    w[i].res = 1;
    w[i].got = got;
    CHECK_INT (pthread_create (&t[i], NULL, waiter_func, &w[i]), ==, 0);
  }
}

/* Every one of N waiters for the only slot gets it, one after the other,
 * from a single return. */
static void
test_wakeup_return (void)
{
  pf_pool *pool = make_pool (1, 4096);
  Waiter w[N_WAITERS];
  pthread_t t[N_WAITERS];
  atomic_int got = 0;
  pf_pool_slot s;
  pf_pool_stats st;
  int i;

  CHECK_INT (pf_pool_loan (pool, 0, &s), ==, 0);
  start_waiters (w, t, N_WAITERS, pool, 0, &got);
  /* A waiter counts its wait and sleeps under one hold of the lock, which
   * get_stats takes: all are asleep once all are counted. */
  pf_pool_get_stats (pool, &st);
  WAIT_FOR ((pf_pool_get_stats (pool, &st), st.waits == N_WAITERS));
  CHECK_INT (pf_pool_return (pool, s.index), ==, 0);
  for (i = 0; i < N_WAITERS; i++) {
    pthread_join (t[i], NULL);
    CHECK_INT (w[i].res, ==, 0);
  }
  CHECK_INT (atomic_load (&got), ==, N_WAITERS);
  pf_pool_get_stats (pool, &st);
  CHECK_INT (st.loans, ==, N_WAITERS + 1);
  CHECK_INT (st.timeouts, ==, 0);
  CHECK_INT (st.n_free, ==, 1);
  pf_pool_unref (pool);
}

/* Flushing wakes every kind of waiter, each failing with -ECANCELED. */
static void
test_wakeup_flush (void)
{
  pf_pool *pool = make_pool (2, 4096);
  Waiter w[3 * N_WAITERS];
  pthread_t t[3 * N_WAITERS];
  atomic_int got = 0;
  pf_pool_slot s[2];
  pf_pool_stats st;
  int i;

  CHECK_INT (pf_pool_loan (pool, 0, &s[0]), ==, 0);
  CHECK_INT (pf_pool_loan (pool, 0, &s[1]), ==, 0);
  CHECK_INT (pf_pool_redeem (pool, s[1].index, s[1].id), ==, 0);
  start_waiters (w, t, N_WAITERS, pool, 0, &got);
  start_waiters (w + N_WAITERS, t + N_WAITERS, N_WAITERS, pool, 1, &got);
  start_waiters (w + 2 * N_WAITERS, t + 2 * N_WAITERS, N_WAITERS, pool, 2,
      &got);
  WAIT_FOR ((pf_pool_get_stats (pool, &st), st.waits == N_WAITERS));
  pf_pool_set_flushing (pool, 1);
  for (i = 0; i < 3 * N_WAITERS; i++) {
    pthread_join (t[i], NULL);
    /* wait_change may also see the flush as the change it waited for. */
    if (w[i].kind == 2)
      CHECK_MSG (w[i].res == 0 || w[i].res == -ECANCELED, "waiter %d: %d",
          i, w[i].res);
    else
      CHECK_MSG (w[i].res == -ECANCELED, "waiter %d (kind %d): %d", i,
          w[i].kind, w[i].res);
  }
  CHECK_INT (atomic_load (&got), ==, 0);
  pf_pool_get_stats (pool, &st);
  CHECK_INT (st.cancelled, ==, N_WAITERS);
  CHECK_INT (st.outstanding, ==, 2);
  /* Already flushing: no wait at all. */
  CHECK_INT (pf_pool_wait_idle (pool, -1), ==, -ECANCELED);
  CHECK_INT (pf_pool_wait_change (pool, pf_pool_get_change (pool), -1), ==,
      -ECANCELED);
  CHECK_INT (pf_pool_return (pool, s[0].index), ==, 0);
  CHECK_INT (pf_pool_return (pool, s[1].index), ==, 0);
  pf_pool_unref (pool);
}

/* Two threads take turns 20000 times, each waking the other only through
 * pf_pool_notify() (lock-free when it sees no waiter): a single lost
 * wake-up stalls the ping-pong. */
#define N_TURNS 20000

typedef struct
{
  pf_pool *pool;
  atomic_int turn;
} PingPong;

typedef struct
{
  PingPong *pp;
  int me;
} Player;

static void *
player_func (void *data)
{
  Player *pl = data;
  PingPong *pp = pl->pp;
  uint32_t change;
  int i;

  for (i = 0; i < N_TURNS; i++) {
    for (;;) {
      change = pf_pool_get_change (pp->pool);
      if (atomic_load (&pp->turn) == pl->me)
        break;
      CHECK_INT (pf_pool_wait_change (pp->pool, change, LONG_MS), ==, 0);
    }
    atomic_store (&pp->turn, 1 - pl->me);
    pf_pool_notify (pp->pool);
  }
  return NULL;
}

static void
test_wakeup_notify (void)
{
  PingPong pp;
  Player pl[2];
  pthread_t t[2];
  int i;

  pp.pool = make_pool (1, 4096);
  atomic_init (&pp.turn, 0);
  for (i = 0; i < 2; i++) {
    pl[i].pp = &pp;
    pl[i].me = i;
    CHECK_INT (pthread_create (&t[i], NULL, player_func, &pl[i]), ==, 0);
  }
  for (i = 0; i < 2; i++)
    pthread_join (t[i], NULL);
  CHECK_INT (pf_pool_get_change (pp.pool), >=, 2 * N_TURNS);
  pf_pool_unref (pp.pool);
}

int
main (int argc, char **argv)
{
  static const struct
  {
    const char *name;
    void (*fn) (void);
  } cases[] = {
    {"slots", test_slots},
    {"threads", test_threads},
    {"wakeup-return", test_wakeup_return},
    {"wakeup-flush", test_wakeup_flush},
    {"wakeup-notify", test_wakeup_notify},
  };
  size_t i;
  int ran = 0;

  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    if (argc > 1 && strcmp (argv[1], cases[i].name) != 0)
      continue;
    cases[i].fn ();
    printf ("ok %s\n", cases[i].name);
    ran++;
  }
  if (ran == 0) {
    fprintf (stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  return 0;
}
