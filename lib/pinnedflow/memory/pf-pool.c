/* pinnedflow: a bounded pool of page-aligned slots in one segment, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-pool.h. The one implementation of "N slots of one pinned segment,
 * a slot returns when its last holder lets go, waits with a timeout,
 * flush"; GstPinnedBufferPool, the node producer and pinnedcudaupload's
 * bounce buffer are faces of it.
 *
 * Threading: @lock guards every field below it in struct pf_pool (the slot
 * table, the counters, @flushing). @cond (CLOCK_MONOTONIC) is broadcast
 * whenever a slot comes back, the flushing state changes or the change
 * counter is bumped while someone waits; every waiter re-checks its own
 * condition, so one condition serves loans, wait_idle and wait_change.
 * @change and @waiters are atomics read outside the lock by
 * pf_pool_notify(), which takes the lock only when someone waits (see
 * there why no wake-up is lost). No callback is made, so the lock is a
 * leaf: callers may hold their own locks around any call.
 *
 * Lifetime: atomic refcount; the pool holds one reference on its segment,
 * dropped with the last pool reference. Slots still out then are simply
 * forgotten (their memory goes with the segment's last reference).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-pool.h>

#include "pf-time-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pf_pool
{
  atomic_int refcount;
  pf_segment *seg;
  uint8_t *base;
  uint64_t slot_stride;
  uint32_t n_slots;

  atomic_uint change;           /* bumped by returns and pf_pool_notify() */
  atomic_int waiters;           /* threads in pf_pool_wait_change() */

  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint32_t *holders;            /* per slot; 0 = free */
  uint64_t *ticket;             /* per slot; 0 = none (free or redeemed) */
  uint32_t n_free;
  uint32_t n_redeemed;          /* out and ticket spent */
  uint32_t cursor;              /* next slot to try: round robin */
  uint64_t next_id;
  int flushing;
  pf_pool_stats stats;          /* loans, waits, timeouts, cancelled, max */
};

int
pf_pool_slot_stride (uint64_t size, uint64_t * stride)
{
  uint64_t page = pf_page_size ();

  if (stride == NULL || size == 0)
    return -EINVAL;
  if (size > UINT64_MAX - (page - 1))
    return -EOVERFLOW;
  *stride = (size + page - 1) / page * page;
  return 0;
}

int
pf_pool_new (pf_segment * seg, uint64_t slot_stride, uint32_t n_slots,
    pf_pool ** out)
{
  pf_pool *pool;
  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (seg == NULL || n_slots == 0 || slot_stride == 0 ||
      slot_stride % pf_page_size () != 0 ||
      slot_stride > pf_segment_get_size (seg) / n_slots)
    return -EINVAL;

  pool = calloc (1, sizeof (*pool));
  if (pool == NULL)
    return -ENOMEM;
  pool->holders = calloc (n_slots, sizeof (*pool->holders));
  pool->ticket = calloc (n_slots, sizeof (*pool->ticket));
  if (pool->holders == NULL || pool->ticket == NULL) {
    free (pool->holders);
    free (pool->ticket);
    free (pool);
    return -ENOMEM;
  }
  atomic_init (&pool->refcount, 1);
  atomic_init (&pool->change, 0);
  atomic_init (&pool->waiters, 0);
  pool->seg = pf_segment_ref (seg);
  pool->base = pf_segment_get_base (seg);
  pool->slot_stride = slot_stride;
  pool->n_slots = n_slots;
  pool->n_free = n_slots;
  pool->next_id = 1;
  pool->stats.n_slots = n_slots;

  pthread_mutex_init (&pool->lock, NULL);
  pf_cond_init_monotonic (&pool->cond);
  *out = pool;
  return 0;
}

pf_pool *
pf_pool_ref (pf_pool * pool)
{
  if (pool)
    atomic_fetch_add (&pool->refcount, 1);
  return pool;
}

void
pf_pool_unref (pf_pool * pool)
{
  if (pool == NULL || atomic_fetch_sub (&pool->refcount, 1) != 1)
    return;
  pthread_cond_destroy (&pool->cond);
  pthread_mutex_destroy (&pool->lock);
  pf_segment_unref (pool->seg);
  free (pool->holders);
  free (pool->ticket);
  free (pool);
}

/* Conditions of pf_cond_wait_until(), lock held: what each kind of
 * waiter waits for, or flushing. */
static int
slot_free_or_flushing (void *data)
{
  pf_pool *pool = data;

  return pool->flushing || pool->n_free > 0;
}

static int
idle_or_flushing (void *data)
{
  pf_pool *pool = data;

  return pool->flushing || pool->n_redeemed == 0;
}

typedef struct
{
  pf_pool *pool;
  uint32_t seen;
} ChangeWait;

static int
changed_or_flushing (void *data)
{
  ChangeWait *w = data;

  return w->pool->flushing || atomic_load (&w->pool->change) != w->seen;
}

/* Lock held: wakes every waiter after a state change. */
static void
wake_locked (pf_pool * pool)
{
  atomic_fetch_add (&pool->change, 1);
  pthread_cond_broadcast (&pool->cond);
}

static void
take_free_slot_locked (pf_pool * pool, pf_pool_slot * slot)
{
  uint32_t i, s = pool->cursor;

  for (i = 0; i < pool->n_slots; i++) {
    s = (pool->cursor + i) % pool->n_slots;
    if (pool->holders[s] == 0)
      break;
  }
  /* n_free > 0 guarantees a free slot: i < n_slots here. */
  pool->cursor = (s + 1) % pool->n_slots;
  pool->holders[s] = 1;
  pool->ticket[s] = pool->next_id++;
  pool->n_free--;
  pool->stats.loans++;
  if (pool->n_slots - pool->n_free > pool->stats.max_outstanding)
    pool->stats.max_outstanding = pool->n_slots - pool->n_free;

  memset (slot, 0, sizeof (*slot));
  slot->index = s;
  slot->id = pool->ticket[s];
  slot->offset = (uint64_t) s *pool->slot_stride;
  slot->data = pool->base + slot->offset;
  slot->size = pool->slot_stride;
}

int
pf_pool_loan (pf_pool * pool, int timeout_ms, pf_pool_slot * slot)
{
  int res;

  if (pool == NULL || slot == NULL)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  if (timeout_ms != 0 && !slot_free_or_flushing (pool))
    pool->stats.waits++;
  res = pf_cond_wait_until (&pool->cond, &pool->lock, timeout_ms,
      slot_free_or_flushing, pool);
  if (res == 0 && pool->flushing) {
    res = -ECANCELED;
    pool->stats.cancelled++;
  } else if (res < 0) {
    res = timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
    pool->stats.timeouts++;
  } else {
    take_free_slot_locked (pool, slot);
  }
  pthread_mutex_unlock (&pool->lock);
  return res;
}

int
pf_pool_hold (pf_pool * pool, uint32_t index)
{
  int res = -EINVAL;

  if (pool == NULL || index >= pool->n_slots)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  if (pool->holders[index] > 0 && pool->holders[index] < UINT32_MAX) {
    pool->holders[index]++;
    res = 0;
  }
  pthread_mutex_unlock (&pool->lock);
  return res;
}

int
pf_pool_return (pf_pool * pool, uint32_t index)
{
  int res = -EINVAL;

  if (pool == NULL || index >= pool->n_slots)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  if (pool->holders[index] > 0) {
    res = 0;
    if (--pool->holders[index] == 0) {
      if (pool->ticket[index] == 0)
        pool->n_redeemed--;
      pool->ticket[index] = 0;
      pool->n_free++;
      wake_locked (pool);
    }
  }
  pthread_mutex_unlock (&pool->lock);
  return res;
}

int
pf_pool_redeem (pf_pool * pool, uint32_t index, uint64_t id)
{
  int res = -EINVAL;

  if (pool == NULL || index >= pool->n_slots || id == 0)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  if (pool->holders[index] > 0 && pool->ticket[index] == id) {
    pool->ticket[index] = 0;
    pool->n_redeemed++;
    res = 0;
  }
  pthread_mutex_unlock (&pool->lock);
  return res;
}

void
pf_pool_set_flushing (pf_pool * pool, int flushing)
{
  if (pool == NULL)
    return;
  pthread_mutex_lock (&pool->lock);
  pool->flushing = flushing ? 1 : 0;
  wake_locked (pool);
  pthread_mutex_unlock (&pool->lock);
}

int
pf_pool_wait_idle (pf_pool * pool, int timeout_ms)
{
  int res;

  if (pool == NULL)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  res = pf_cond_wait_until (&pool->cond, &pool->lock, timeout_ms,
      idle_or_flushing, pool);
  if (res == 0 && pool->n_redeemed > 0)
    res = -ECANCELED;
  pthread_mutex_unlock (&pool->lock);
  return res;
}

uint32_t
pf_pool_get_change (pf_pool * pool)
{
  return pool ? atomic_load (&pool->change) : 0;
}

/* Lock-free when nobody waits (a broadcast is a futex syscall). A waiter
 * increments @waiters, then reads @change under the lock; we increment
 * @change, then read @waiters: with sequentially consistent atomics one of
 * us sees the other's write, and our broadcast is made under the lock the
 * waiter sleeps with, so it cannot fall between its check and its sleep. */
void
pf_pool_notify (pf_pool * pool)
{
  if (pool == NULL)
    return;
  atomic_fetch_add (&pool->change, 1);
  if (atomic_load (&pool->waiters) > 0) {
    pthread_mutex_lock (&pool->lock);
    pthread_cond_broadcast (&pool->cond);
    pthread_mutex_unlock (&pool->lock);
  }
}

int
pf_pool_wait_change (pf_pool * pool, uint32_t change, int timeout_ms)
{
  ChangeWait w = { pool, change };
  int res;

  if (pool == NULL)
    return -EINVAL;
  pthread_mutex_lock (&pool->lock);
  atomic_fetch_add (&pool->waiters, 1);
  res = pf_cond_wait_until (&pool->cond, &pool->lock, timeout_ms,
      changed_or_flushing, &w);
  atomic_fetch_sub (&pool->waiters, 1);
  if (res == 0 && atomic_load (&pool->change) == change)
    res = -ECANCELED;
  pthread_mutex_unlock (&pool->lock);
  return res;
}

uint32_t
pf_pool_get_n_slots (pf_pool * pool)
{
  return pool ? pool->n_slots : 0;
}

uint64_t
pf_pool_get_slot_stride (pf_pool * pool)
{
  return pool ? pool->slot_stride : 0;
}

pf_segment *
pf_pool_get_segment (pf_pool * pool)
{
  return pool ? pool->seg : NULL;
}

void
pf_pool_get_stats (pf_pool * pool, pf_pool_stats * stats)
{
  if (stats == NULL)
    return;
  memset (stats, 0, sizeof (*stats));
  if (pool == NULL)
    return;
  pthread_mutex_lock (&pool->lock);
  *stats = pool->stats;
  stats->n_free = pool->n_free;
  stats->outstanding = pool->n_slots - pool->n_free;
  stats->redeemed = pool->n_redeemed;
  pthread_mutex_unlock (&pool->lock);
}
