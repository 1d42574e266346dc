/* ThreadSanitizer annotations for GLib and GStreamer (tools/tsan.sh)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Debian's GLib and GStreamer are not built with TSan. GRecMutex and
 * GRWLock are pthread locks, which TSan intercepts; but Debian 12's GLib
 * (2.74) implements GMutex and GCond natively on Linux (a lock cmpxchg and
 * a futex, no pthread call: see g_mutex_lock's code), so TSan sees neither
 * GST_OBJECT_LOCK nor our elements' self->lock, nor the hand-offs
 * GStreamer makes with its own atomics: GstMiniObject refcounts (a buffer
 * or message is freed by whichever thread drops the last reference) and
 * GstAtomicQueue (bus messages, buffer pools). Unseen, every access they
 * order shows as a race: 736 reports in test-shm-transfer alone without
 * this file, none with it. This preloaded library
 * (LD_PRELOAD, set by tools/tsan.sh for the tests) wraps those calls and
 * tells TSan the order they give, with its own interface
 * (__tsan_acquire (addr): what was released on addr happens before
 * this; __tsan_release (addr)):
 *  - g_mutex_lock/trylock acquire the mutex, g_mutex_unlock releases it,
 *    g_cond_wait/wait_until release it while they wait;
 *  - gst_mini_object_unref releases the object, and the unref that drops
 *    the last reference acquires it first (the shared_ptr annotation):
 *    whoever frees a buffer or message sees every write made by its
 *    earlier owners;
 *  - gst_atomic_queue_push releases the queue, a pop (or peek) that got
 *    something acquires it.
 * The wrappers call the real functions (dlsym (RTLD_NEXT)). GStreamer's
 * calls and ours go through them; GLib's calls to itself do not (bound
 * inside the library): GAsyncQueue and GThreadPool hand-offs stay unseen,
 * and GstTask's threads are ordered by its GRecMutex stream lock.
 *
 * Not instrumented itself, and linked against nothing but libdl: the
 * __tsan_* functions are looked up at run time, so a program that is not
 * instrumented (a shell a test spawns) loads it and runs unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef void (*tsan_fn) (void *addr);
typedef int gboolean;
typedef long gint64;

/* GStreamer's own layout: { GType type; gint refcount; ... } */
struct mini_object
{
  unsigned long type;
  int refcount;
};

static tsan_fn tsan_acquire, tsan_release;

#define REAL(name) \
  static __typeof__ (name) *real; \
  if (real == NULL) \
    real = (__typeof__ (name) *) dlsym (RTLD_NEXT, #name)

static void
annotate_init (void)
{
  if (tsan_acquire == NULL) {
    tsan_acquire = (tsan_fn) dlsym (RTLD_DEFAULT, "__tsan_acquire");
    tsan_release = (tsan_fn) dlsym (RTLD_DEFAULT, "__tsan_release");
  }
}

static void
acquire (void *addr)
{
  annotate_init ();
  if (tsan_acquire != NULL)
    tsan_acquire (addr);
}

static void
release (void *addr)
{
  annotate_init ();
  if (tsan_release != NULL)
    tsan_release (addr);
}

void g_mutex_lock (void *mutex);
void g_mutex_unlock (void *mutex);
gboolean g_mutex_trylock (void *mutex);
void g_cond_wait (void *cond, void *mutex);
gboolean g_cond_wait_until (void *cond, void *mutex, gint64 end_time);
void gst_mini_object_unref (void *obj);
void gst_atomic_queue_push (void *queue, void *data);
void *gst_atomic_queue_pop (void *queue);
void *gst_atomic_queue_peek (void *queue);

void
g_mutex_lock (void *mutex)
{
  REAL (g_mutex_lock);
  real (mutex);
  acquire (mutex);
}

gboolean
g_mutex_trylock (void *mutex)
{
  gboolean res;
  REAL (g_mutex_trylock);

  res = real (mutex);
  if (res)
    acquire (mutex);
  return res;
}

void
g_mutex_unlock (void *mutex)
{
  REAL (g_mutex_unlock);
  release (mutex);
  real (mutex);
}

void
g_cond_wait (void *cond, void *mutex)
{
  REAL (g_cond_wait);
  release (mutex);
  real (cond, mutex);
  acquire (mutex);
}

gboolean
g_cond_wait_until (void *cond, void *mutex, gint64 end_time)
{
  gboolean res;
  REAL (g_cond_wait_until);

  release (mutex);
  res = real (cond, mutex, end_time);
  acquire (mutex);
  return res;
}

void
gst_mini_object_unref (void *obj)
{
  REAL (gst_mini_object_unref);
  release (obj);
  if (__atomic_load_n (&((struct mini_object *) obj)->refcount,
          __ATOMIC_ACQUIRE) == 1)
    acquire (obj);
  real (obj);
}

void
gst_atomic_queue_push (void *queue, void *data)
{
  REAL (gst_atomic_queue_push);
  release (queue);
  real (queue, data);
}

void *
gst_atomic_queue_pop (void *queue)
{
  void *res;
  REAL (gst_atomic_queue_pop);

  res = real (queue);
  if (res != NULL)
    acquire (queue);
  return res;
}

void *
gst_atomic_queue_peek (void *queue)
{
  void *res;
  REAL (gst_atomic_queue_peek);

  res = real (queue);
  if (res != NULL)
    acquire (queue);
  return res;
}
