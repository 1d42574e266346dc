/* GStreamer pinnedflow: the elements' single-writer counters
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The counters pinnedshmsink and pinnedshmsrc keep without a lock: one
 * thread at a time writes each (the streaming thread, or a state change
 * while it is stopped), any thread reads it.
 */
#ifndef __GST_PINNED_SHM_COUNTER_H__
#define __GST_PINNED_SHM_COUNTER_H__

/* A counter that one thread at a time writes: a relaxed load and store (no
 * locked instruction), so that other threads read whole values. */
#define COUNTER_ADD(c, n) \
  __atomic_store_n (&(c), __atomic_load_n (&(c), __ATOMIC_RELAXED) + (n), \
      __ATOMIC_RELAXED)
#define COUNTER_GET(c) __atomic_load_n (&(c), __ATOMIC_RELAXED)
#define COUNTER_SET(c, v) __atomic_store_n (&(c), (v), __ATOMIC_RELAXED)

#endif /* __GST_PINNED_SHM_COUNTER_H__ */
