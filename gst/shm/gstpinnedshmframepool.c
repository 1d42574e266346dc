/* GStreamer pinnedflow: pinnedshmsrc's buffers, recycled with their frames'
 * memories
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads and lifetimes: see the header. Inside a pool, each buffer has an
 * entry for its whole life, in pool->entries (the acquiring thread's array;
 * entry structs are freed with the pool, so that a close racing a buffer's
 * return never reads a freed entry). entry->state says who may touch the
 * rest of the entry: FREE (waiting, the pool's: the acquiring thread takes
 * it), BUSY (the acquiring thread's), OUT (downstream's: only the buffer's
 * return touches it, and sets FREE last) and DEAD (its buffer freed). The
 * acquiring thread alone moves FREE to BUSY, except that a return which
 * finds the pool closed after it set FREE races the close for the entry
 * with a compare-and-exchange. No lock on either path.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpinnedshmframepool.h"

#include <gst/pinnedflow/gstpinnedallocator.h>

/* One frame on loan from the producer: released when the last of its
 * memories is freed, on the connection it came from. */
typedef struct _FrameLoan FrameLoan;
struct _FrameLoan
{
  pf_consumer *consumer;
  guint64 seq;
  gint n_memories;
  FrameLoan *next_free;         /* on the free list */
};

/* Loans whose frame went back, kept for the next frames so that receiving
 * a frame allocates none at steady state. Bounded: the rest are freed. */
#define LOAN_FREE_LIST_MAX 64
G_LOCK_DEFINE_STATIC (loan_free_list);
static FrameLoan *loan_free_list;
static guint loan_free_list_len;

static FrameLoan *
frame_loan_new (void)
{
  FrameLoan *loan;

  G_LOCK (loan_free_list);
  loan = loan_free_list;
  if (loan != NULL) {
    loan_free_list = loan->next_free;
    loan_free_list_len--;
  }
  G_UNLOCK (loan_free_list);
  if (loan == NULL)
    loan = g_new (FrameLoan, 1);
  memset (loan, 0, sizeof (*loan));
  return loan;
}

static void
frame_loan_memory_freed (gpointer data)
{
  FrameLoan *loan = data;
  gboolean kept = FALSE;

  if (!g_atomic_int_dec_and_test (&loan->n_memories))
    return;
  /* On a connection that is gone this is a no-op (-EPIPE): the producer
   * reclaimed the frame when we hung up. No consumer: the frame went back
   * when the buffer keeping these memories came back to its pool. */
  if (loan->consumer != NULL) {
    pf_consumer_release (loan->consumer, loan->seq);
    pf_consumer_unref (loan->consumer);
    loan->consumer = NULL;
  }
  G_LOCK (loan_free_list);
  if (loan_free_list_len < LOAN_FREE_LIST_MAX) {
    loan->next_free = loan_free_list;
    loan_free_list = loan;
    loan_free_list_len++;
    kept = TRUE;
  }
  G_UNLOCK (loan_free_list);
  if (!kept)
    g_free (loan);
}

/* Wraps each chunk of the frame in a read-only memory of @buf; the frame
 * goes back to the producer when the last of them is freed (or, when the
 * pool keeps them, when the buffer comes back). FALSE when a chunk cannot
 * be wrapped (the memories made so far stay in @buf). *@loan_out: the
 * loan, alive while the memories are. The loan rides on each memory as its
 * destroy notify, not as qdata: a qdata costs two allocations and makes
 * the buffer's parent link a third. */
static gboolean
wrap_chunks (GstAllocator * allocator, pf_consumer * c, const pf_event * ev,
    GstBuffer * buf, guint64 * total, FrameLoan ** loan_out)
{
  const pf_consumer_frame *f = &ev->frame;
  gboolean ok = TRUE;
  FrameLoan *loan;
  guint i;

  if (f->n_chunks == 0 || f->n_chunks > PF_MAX_CHUNKS)
    return FALSE;
  loan = frame_loan_new ();
  loan->consumer = pf_consumer_ref (c);
  loan->seq = f->seq;
  loan->n_memories = 1;         /* ours until every memory is attached */

  *total = 0;
  for (i = 0; i < f->n_chunks && ok; i++) {
    GstMemory *mem;

    g_atomic_int_inc (&loan->n_memories);
    mem = gst_pinned_allocator_wrap_full (allocator, ev->segments[i],
        f->chunks[i].offset, f->chunks[i].size, loan, frame_loan_memory_freed);
    if (mem == NULL) {
      g_atomic_int_add (&loan->n_memories, -1);
      ok = FALSE;
      break;
    }
    gst_buffer_append_memory (buf, mem);
    *total += f->chunks[i].size;
  }
  *loan_out = loan;
  frame_loan_memory_freed (loan);       /* drop our own count */
  return ok;
}

gboolean
gst_pinned_shm_frame_wrap_chunks (GstAllocator * allocator, pf_consumer * c,
    const pf_event * ev, GstBuffer * buf, guint64 * total)
{
  FrameLoan *loan;

  return wrap_chunks (allocator, c, ev, buf, total, &loan);
}

/* ---- the pool ----
 *
 * A buffer comes back when its last reference drops: its GstMiniObject
 * dispose function is ours (the documented way to revive a mini object;
 * the one GstBuffer had is put back before the buffer is freed), and its
 * entry rides on it as qdata, set once when the buffer is made. Issue 13:
 * GstBufferPool's acquire and release (type checks, a reference on the
 * pool per buffer, its outstanding count, the default reset walking the
 * metas, the entry records copied in and out of lists under a mutex) were
 * a quarter of the instructions of receiving a frame.
 *
 * Frames come from the same few slots of the producer's pool, so a buffer
 * keeps the memories of its last frame when it comes back (removing them,
 * freeing them and wrapping the next frame's were a third of the
 * instructions of receiving a frame): the frame goes back to the producer
 * then, as if its memories had been freed, and a later frame in the same
 * chunks (the same segment, offset and size) takes the buffer and the
 * memories as they are, on a new loan. The memories are kept only when the
 * buffer alone still holds them, unchanged (no copy, share or replacement
 * of them downstream); otherwise they are removed, and the frame goes back
 * when the last of them is freed. The video meta is kept (flagged POOLED)
 * for the next frame to fill in; any other meta is removed.
 *
 * The kept memories hold their segments mapped: a buffer no frame matched
 * in FRAME_POOL_AGE acquisitions gives them up (a segment the producer
 * removed), and a new connection or new caps drop them all (those of
 * buffers out then are dropped when they come back). The pool makes up to
 * FRAME_POOL_KEEP buffers to keep one per slot; past that a frame no
 * buffer matches takes the oldest waiting one and replaces its memories;
 * with FRAME_POOL_MAX out, a frame gets a buffer of its own. */

#define FRAME_POOL_MAX 64
#define FRAME_POOL_KEEP 32
#define FRAME_POOL_AGE 128
/* The entry that last wrapped a chunk, by (segment, offset) hashed: the
 * frame's buffer found without a scan of the pool. A hint (checked; a
 * collision just misses), so of any size. */
#define FRAME_POOL_HINTS 64
/* Every this many acquisitions, the waiting buffers are scanned for one
 * unused for FRAME_POOL_AGE (the lookup above sees none but its own). */
#define FRAME_POOL_AGE_SCAN 16

enum
{
  ENTRY_FREE,
  ENTRY_BUSY,
  ENTRY_OUT,
  ENTRY_DEAD,
};

/* A buffer of the pool with, while it keeps them, its frame's memories. */
typedef struct
{
  GstBuffer *buf;
  GstPinnedShmFramePool *pool;
  GstMiniObjectDisposeFunction buffer_dispose;  /* GstBuffer's own */
  gint state;                   /* atomic, see the top of the file */
  guint generation;             /* the pool's when it went out */
  guint64 last_used;            /* the acquisition count when last taken */
  FrameLoan *loan;              /* of the kept memories, else NULL */
  guint n_mem;
  GstMemory *mem[PF_MAX_CHUNKS];        /* buf's, borrowed */
  gpointer seg[PF_MAX_CHUNKS];  /* held by mem[] */
  guint64 offset[PF_MAX_CHUNKS], size[PF_MAX_CHUNKS];   /* mem[]'s */
} FrameEntry;

struct _GstPinnedShmFramePool
{
  gint refcount;                /* atomic: the owner's, one per buffer */
  gint closed;                  /* atomic */
  gint generation;              /* atomic; + 1 by each _forget () */
  /* the acquiring thread's */
  FrameEntry *entries[FRAME_POOL_MAX];
  guint n_entries;
  guint64 tick;                 /* acquisitions */
  FrameEntry *hints[FRAME_POOL_HINTS];
};

static GQuark entry_quark;

static void
pool_unref (GstPinnedShmFramePool * pool)
{
  guint i;

  if (!g_atomic_int_dec_and_test (&pool->refcount))
    return;
  for (i = 0; i < pool->n_entries; i++)
    g_free (pool->entries[i]);
  g_free (pool);
}

static inline guint
hint_index (gconstpointer seg, guint64 offset)
{
  guint64 h = ((guint64) (guintptr) seg >> 4) ^ (offset >> 12) ^ offset;

  h ^= h >> 17;
  h *= G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  return (guint) (h >> 58) % FRAME_POOL_HINTS;
}

/* Whether @e keeps memories of exactly @ev's chunks. */
static inline gboolean
entry_matches (const FrameEntry * e, const pf_event * ev)
{
  const pf_consumer_frame *f = &ev->frame;
  guint i;

  if (e->n_mem != f->n_chunks)
    return FALSE;
  for (i = 0; i < e->n_mem; i++)
    if (e->seg[i] != (gpointer) ev->segments[i]
        || e->offset[i] != f->chunks[i].offset
        || e->size[i] != f->chunks[i].size)
      return FALSE;
  return TRUE;
}

/* Whether @buffer coming back still holds @e's memories, and alone. */
static gboolean
entry_reusable (const FrameEntry * e, GstBuffer * buffer)
{
  guint i;

  if (e->loan == NULL || gst_buffer_n_memory (buffer) != e->n_mem
      || g_atomic_int_get (&e->loan->n_memories) != (gint) e->n_mem)
    return FALSE;
  for (i = 0; i < e->n_mem; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);

    if (mem != e->mem[i] || mem->parent != NULL
        || GST_MINI_OBJECT_REFCOUNT_VALUE (mem) != 1
        || mem->offset != e->offset[i] || mem->size != e->size[i])
      return FALSE;
  }
  return TRUE;
}

/* @e's buffer without its memories (the frame goes back when the last of
 * them is freed). The entry is not FREE. */
static void
entry_drop_memories (FrameEntry * e)
{
  if (gst_buffer_n_memory (e->buf) > 0)
    gst_buffer_remove_all_memory (e->buf);
  e->loan = NULL;
  e->n_mem = 0;
}

/* Frees @e's buffer (its memories with it). The entry is not FREE. */
static void
entry_free_buffer (FrameEntry * e)
{
  GstPinnedShmFramePool *pool = e->pool;
  GstBuffer *buf = e->buf;

  GST_MINI_OBJECT_CAST (buf)->dispose = e->buffer_dispose;
  e->buf = NULL;
  e->loan = NULL;
  g_atomic_int_set (&e->state, ENTRY_DEAD);
  gst_buffer_unref (buf);
  pool_unref (pool);
}

static gboolean
remove_unpooled (GstBuffer * buffer, GstMeta ** meta, gpointer user_data)
{
  if (!GST_META_FLAG_IS_SET (*meta, GST_META_FLAG_POOLED)) {
    GST_META_FLAG_UNSET (*meta, GST_META_FLAG_LOCKED);
    *meta = NULL;
  }
  return TRUE;
}

/* What GstBufferPool's default reset does, but for the memories: the
 * caller's. Only the metas others added are walked. */
static inline void
reset_buffer (GstBuffer * buf)
{
  gpointer state = NULL;
  GstMeta *meta;

  GST_BUFFER_FLAGS (buf) = 0;
  GST_BUFFER_PTS (buf) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buf) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET (buf) = GST_BUFFER_OFFSET_NONE;
  GST_BUFFER_OFFSET_END (buf) = GST_BUFFER_OFFSET_NONE;
  meta = gst_buffer_iterate_meta (buf, &state);
  if (meta == NULL || (GST_META_FLAG_IS_SET (meta, GST_META_FLAG_POOLED)
          && gst_buffer_iterate_meta (buf, &state) == NULL))
    return;
  gst_buffer_foreach_meta (buf, remove_unpooled, NULL);
}

/* The buffer's last reference dropped, on any thread: back to the pool,
 * or freed when the pool is closed. */
static gboolean
entry_buffer_dispose (GstMiniObject * obj)
{
  GstBuffer *buf = (GstBuffer *) obj;
  FrameEntry *e = gst_mini_object_get_qdata (obj, entry_quark);
  GstPinnedShmFramePool *pool = e->pool;

  if (g_atomic_int_get (&pool->closed)) {
    obj->dispose = e->buffer_dispose;
    e->buf = NULL;
    g_atomic_int_set (&e->state, ENTRY_DEAD);
    pool_unref (pool);
    return obj->dispose == NULL || obj->dispose (obj);
  }

  gst_buffer_ref (buf);         /* revived: the pool's now */
  if (e->generation == (guint) g_atomic_int_get (&pool->generation)
      && entry_reusable (e, buf)) {
    /* the frame goes back now, its memories stay */
    pf_consumer *c = e->loan->consumer;

    e->loan->consumer = NULL;
    pf_consumer_release (c, e->loan->seq);
    pf_consumer_unref (c);
  } else {
    entry_drop_memories (e);
  }
  reset_buffer (buf);
  g_atomic_int_set (&e->state, ENTRY_FREE);

  /* closed while we were at it: the close may have missed this entry */
  if (G_UNLIKELY (g_atomic_int_get (&pool->closed))
      && g_atomic_int_compare_and_exchange (&e->state, ENTRY_FREE, ENTRY_BUSY))
    entry_free_buffer (e);
  return FALSE;
}

GstPinnedShmFramePool *
gst_pinned_shm_frame_pool_new (void)
{
  static gsize once = 0;
  GstPinnedShmFramePool *pool;

  if (g_once_init_enter (&once)) {
    entry_quark = g_quark_from_static_string ("GstPinnedShmFramePoolEntry");
    g_once_init_leave (&once, 1);
  }
  pool = g_new0 (GstPinnedShmFramePool, 1);
  pool->refcount = 1;
  return pool;
}

/* A new entry, BUSY, with an empty buffer; NULL when FRAME_POOL_MAX are
 * made. */
static FrameEntry *
pool_add_entry (GstPinnedShmFramePool * pool)
{
  FrameEntry *e;

  if (pool->n_entries >= FRAME_POOL_MAX)
    return NULL;
  e = g_new0 (FrameEntry, 1);
  e->buf = gst_buffer_new ();
  e->pool = pool;
  e->state = ENTRY_BUSY;
  g_atomic_int_inc (&pool->refcount);
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (e->buf), entry_quark, e,
      NULL);
  e->buffer_dispose = GST_MINI_OBJECT_CAST (e->buf)->dispose;
  GST_MINI_OBJECT_CAST (e->buf)->dispose = entry_buffer_dispose;
  pool->entries[pool->n_entries++] = e;
  return e;
}

/* The entry for @ev (BUSY): the one that carried these chunks last
 * (*@again TRUE), else an empty one, else (enough made) the one unused for
 * longest, else a new one; NULL when FRAME_POOL_MAX are out. */
static FrameEntry *
pool_take (GstPinnedShmFramePool * pool, const pf_event * ev, gboolean * again)
{
  FrameEntry *take, *match = NULL, *empty = NULL, *oldest = NULL;
  guint i;

  pool->tick++;
  /* the usual case: the buffer of the producer's slot, waiting */
  match = pool->hints[hint_index (ev->segments[0], ev->frame.chunks[0].offset)];
  if (match != NULL && g_atomic_int_get (&match->state) == ENTRY_FREE
      && match->loan != NULL && entry_matches (match, ev)) {
    *again = TRUE;
    if (pool->tick % FRAME_POOL_AGE_SCAN != 0) {
      g_atomic_int_set (&match->state, ENTRY_BUSY);
      match->last_used = pool->tick;
      return match;
    }
  } else {
    match = NULL;
  }
  for (i = 0; i < pool->n_entries; i++) {
    FrameEntry *e = pool->entries[i];

    if (g_atomic_int_get (&e->state) != ENTRY_FREE)
      continue;
    if (e == match)
      continue;
    if (e->loan == NULL)
      empty = e;
    else if (match == NULL && entry_matches (e, ev))
      match = e;
    else if (oldest == NULL || e->last_used < oldest->last_used)
      oldest = e;
  }
  *again = match != NULL;
  if (match != NULL)
    take = match;
  else if (empty != NULL)
    take = empty;
  else if (oldest != NULL && pool->n_entries >= FRAME_POOL_KEEP)
    take = oldest;              /* the caller replaces its memories */
  else
    take = pool_add_entry (pool);
  if (take != NULL) {
    g_atomic_int_set (&take->state, ENTRY_BUSY);
    take->last_used = pool->tick;
  }
  /* the one unused for longest, matched by no frame for long: its
   * memories go */
  if (oldest != NULL && oldest != take
      && pool->tick - oldest->last_used > FRAME_POOL_AGE) {
    g_atomic_int_set (&oldest->state, ENTRY_BUSY);
    entry_drop_memories (oldest);
    g_atomic_int_set (&oldest->state, ENTRY_FREE);
  }
  return take;
}

gboolean
gst_pinned_shm_frame_pool_wrap (GstPinnedShmFramePool * pool,
    GstAllocator * allocator, pf_consumer * c, const pf_event * ev,
    GstBuffer ** out, guint64 * total)
{
  const pf_consumer_frame *f = &ev->frame;
  gboolean again = FALSE;
  FrameEntry *e;
  guint i;

  e = pool_take (pool, ev, &again);
  if (G_UNLIKELY (e == NULL)) {
    /* all out: a buffer of its own */
    *out = gst_buffer_new ();
    return gst_pinned_shm_frame_wrap_chunks (allocator, c, ev, *out, total);
  }
  *out = e->buf;
  e->generation = (guint) g_atomic_int_get (&pool->generation);

  if (again) {
    /* the chunks of this buffer's last frame: lent again */
    e->loan->consumer = pf_consumer_ref (c);
    e->loan->seq = f->seq;
    *total = 0;
    for (i = 0; i < f->n_chunks; i++)
      *total += f->chunks[i].size;
  } else {
    if (e->loan != NULL)
      entry_drop_memories (e);
    if (!wrap_chunks (allocator, c, ev, e->buf, total, &e->loan)) {
      /* not kept when it comes back */
      e->loan = NULL;
      g_atomic_int_set (&e->state, ENTRY_OUT);
      return FALSE;
    }
    e->n_mem = f->n_chunks;
    for (i = 0; i < f->n_chunks; i++) {
      e->mem[i] = gst_buffer_peek_memory (e->buf, i);
      e->seg[i] = ev->segments[i];
      e->offset[i] = f->chunks[i].offset;
      e->size[i] = f->chunks[i].size;
    }
    pool->hints[hint_index (e->seg[0], e->offset[0])] = e;
  }
  g_atomic_int_set (&e->state, ENTRY_OUT);
  return TRUE;
}

void
gst_pinned_shm_frame_pool_forget (GstPinnedShmFramePool * pool)
{
  guint i;

  /* those out now will not be kept either */
  g_atomic_int_inc (&pool->generation);
  for (i = 0; i < pool->n_entries; i++) {
    FrameEntry *e = pool->entries[i];

    if (g_atomic_int_compare_and_exchange (&e->state, ENTRY_FREE, ENTRY_BUSY)) {
      if (e->loan != NULL)
        entry_drop_memories (e);
      g_atomic_int_set (&e->state, ENTRY_FREE);
    }
  }
}

void
gst_pinned_shm_frame_pool_close (GstPinnedShmFramePool * pool)
{
  guint i;

  if (pool == NULL)
    return;
  g_atomic_int_set (&pool->closed, 1);
  /* the entries structs stay until the pool is freed: a buffer coming
   * back now frees itself, or loses the entry to us */
  for (i = 0; i < pool->n_entries; i++) {
    FrameEntry *e = pool->entries[i];

    if (g_atomic_int_compare_and_exchange (&e->state, ENTRY_FREE, ENTRY_BUSY))
      entry_free_buffer (e);
  }
  pool_unref (pool);
}
