/* pinnedflow: a bounded pool of page-aligned slots in one segment, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * N slots of one pf_segment, slot i at offset i * slot_stride. A slot is
 * loaned to one caller (pf_pool_loan(), waiting up to a timeout when every
 * slot is out); more holders may join it (pf_pool_hold()); it goes back to
 * the pool when its last holder lets go (pf_pool_return()), never before,
 * so a slot is never handed out twice while anyone still reads it.
 *
 * Every loan carries an id (never 0, unique in the pool's life): the
 * loaner's ticket. pf_pool_redeem() spends it exactly once, so that two
 * threads cannot both hand the same loan on (publish it twice).
 *
 * Flushing (pf_pool_set_flushing()) wakes every waiter and fails loans with
 * -ECANCELED until it is cleared; holds and returns go on as usual.
 *
 * The faces built on it: GstPinnedBufferPool (gst-libs/gst/pinnedflow: a
 * slot per GstMemory, returned when the memory is freed), the node producer
 * (pf-node-producer.c: loan, publish, returned when every consumer
 * released it) and pinnedcudaupload's bounce buffer (ext/cuda).
 *
 * Lifecycle: refcounted (pf_pool_new/_ref/_unref). The pool holds one
 * reference on its segment. Thread-safe: every function may be called from
 * any thread; one mutex per pool, never held while calling out.
 */
#ifndef __PF_POOL_H__
#define __PF_POOL_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Since: 0.1 */
typedef struct pf_pool pf_pool;

/* A loaned slot (a plain value filled by pf_pool_loan()).
 * Since: 0.1
 */
typedef struct {
  uint32_t index;               /* slot number, < n_slots */
  uint32_t reserved;
  uint64_t id;                  /* the loan's ticket, never 0 */
  void *data;                   /* first byte, page-aligned */
  uint64_t offset;              /* in the segment: index * slot_stride */
  uint64_t size;                /* slot_stride */
} pf_pool_slot;

/* Counters (pf_pool_get_stats()), read together under the pool's lock.
 * Since: 0.1
 */
typedef struct {
  uint32_t n_slots;
  uint32_t n_free;              /* slots no one holds */
  uint32_t outstanding;         /* n_slots - n_free */
  uint32_t max_outstanding;     /* highest outstanding ever seen */
  uint32_t redeemed;            /* outstanding slots whose ticket was spent */
  uint32_t reserved;
  uint64_t loans;               /* successful loans */
  uint64_t waits;               /* loans that found no free slot and waited */
  uint64_t timeouts;            /* loans failed with -EAGAIN / -ETIMEDOUT */
  uint64_t cancelled;           /* loans failed with -ECANCELED (flushing) */
} pf_pool_stats;

/**
 * pf_pool_slot_stride:
 * @size: bytes one slot must hold (> 0)
 * @stride: (out): @size rounded up to a page
 *
 * Returns: 0, -EINVAL or -EOVERFLOW.
 *
 * Since: 0.1
 */
PF_API int pf_pool_slot_stride (uint64_t size, uint64_t * stride);

/**
 * pf_pool_new:
 * @seg: the segment; the pool takes a reference
 * @slot_stride: bytes between slot starts, a page multiple
 * @n_slots: >= 1, with @n_slots * @slot_stride <= the segment's size
 *
 * A pool whose every slot is free. Returns 0, -EINVAL, -ENOMEM.
 *
 * Since: 0.1
 */
PF_API int pf_pool_new (pf_segment * seg, uint64_t slot_stride,
    uint32_t n_slots, pf_pool ** out);

/* Since: 0.1 */
PF_API pf_pool *pf_pool_ref (pf_pool * pool);
/* Since: 0.1 */
PF_API void pf_pool_unref (pf_pool * pool);

/**
 * pf_pool_loan:
 * @timeout_ms: when no slot is free: 0 fails at once with -EAGAIN, < 0
 *   waits as long as it takes, > 0 fails with -ETIMEDOUT after that long
 * @slot: (out): the slot, with one holder (the caller) and a fresh ticket
 *
 * Free slots are taken round robin, so successive loans rotate through the
 * segment. Returns 0, -EAGAIN, -ETIMEDOUT, or -ECANCELED (flushing, now or
 * while waiting).
 *
 * Since: 0.1
 */
PF_API int pf_pool_loan (pf_pool * pool, int timeout_ms, pf_pool_slot * slot);

/**
 * pf_pool_hold:
 *
 * One more holder of a slot that is out. Returns 0 or -EINVAL (free slot,
 * bad index).
 *
 * Since: 0.1
 */
PF_API int pf_pool_hold (pf_pool * pool, uint32_t index);

/**
 * pf_pool_return:
 *
 * One holder fewer; the last one returns the slot to the pool (its ticket
 * dies) and wakes the waiters. Returns 0 or -EINVAL (free slot, bad index).
 *
 * Since: 0.1
 */
PF_API int pf_pool_return (pf_pool * pool, uint32_t index);

/**
 * pf_pool_redeem:
 *
 * Spends the ticket @id of slot @index: 0 the first time for the current
 * loan of that slot, -EINVAL otherwise (spent, stale, never loaned). The
 * holders do not change: whoever redeemed now owns the loan's hold.
 *
 * Since: 0.1
 */
PF_API int pf_pool_redeem (pf_pool * pool, uint32_t index, uint64_t id);

/**
 * pf_pool_set_flushing:
 *
 * While set, loans fail with -ECANCELED and every waiter (pf_pool_loan(),
 * pf_pool_wait_idle(), pf_pool_wait_change()) wakes and fails the same
 * way. A new pool is not flushing.
 *
 * Since: 0.1
 */
PF_API void pf_pool_set_flushing (pf_pool * pool, int flushing);

/**
 * pf_pool_wait_idle:
 * @timeout_ms: as for pf_pool_loan() (0 only checks)
 *
 * Waits until every slot whose ticket was redeemed came back (loans not yet
 * redeemed are the loaner's own and not waited for). Returns 0, -ETIMEDOUT
 * or -ECANCELED.
 *
 * Since: 0.1
 */
PF_API int pf_pool_wait_idle (pf_pool * pool, int timeout_ms);

/**
 * pf_pool_get_change:
 *
 * A counter bumped by every return and every pf_pool_notify(): for a face
 * that keeps its own cache of loaned slots (GstBufferPool's queue of
 * buffers) and must wait for either a slot or a cached one. Read it before
 * trying, then pf_pool_wait_change() with the value read: nothing that
 * happens after the read is missed.
 *
 * Since: 0.1
 */
PF_API uint32_t pf_pool_get_change (pf_pool * pool);

/**
 * pf_pool_notify:
 *
 * Bumps the change counter and wakes pf_pool_wait_change(). Lock-free (two
 * atomics) when nobody waits.
 *
 * Since: 0.1
 */
PF_API void pf_pool_notify (pf_pool * pool);

/**
 * pf_pool_wait_change:
 *
 * Waits until the change counter differs from @change. Returns 0,
 * -ETIMEDOUT, or -ECANCELED (flushing).
 *
 * Since: 0.1
 */
PF_API int pf_pool_wait_change (pf_pool * pool, uint32_t change,
    int timeout_ms);

/* Geometry; fixed for the pool's life.
 * Since: 0.1
 */
PF_API uint32_t pf_pool_get_n_slots (pf_pool * pool);
/* Since: 0.1 */
PF_API uint64_t pf_pool_get_slot_stride (pf_pool * pool);
/* The segment (no reference added).
 * Since: 0.1
 */
PF_API pf_segment *pf_pool_get_segment (pf_pool * pool);

/* Since: 0.1 */
PF_API void pf_pool_get_stats (pf_pool * pool, pf_pool_stats * stats);

#ifdef __cplusplus
}
#endif
#endif /* __PF_POOL_H__ */
