/* pinnedflow: deadlines for timed waits (private, not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Condition variables in libpinnedflow wait on CLOCK_MONOTONIC
 * (pf_cond_init_monotonic); these helpers build and read the deadlines.
 * Timeout convention of every waiting call: 0 polls, < 0 waits forever,
 * > 0 is milliseconds.
 */
#ifndef __PF_TIME_PRIVATE_H__
#define __PF_TIME_PRIVATE_H__

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
static inline void
pf_cond_init_monotonic (pthread_cond_t * cond)
{
  pthread_condattr_t ca;

  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (cond, &ca);
  pthread_condattr_destroy (&ca);
}

/* @ts = now (CLOCK_MONOTONIC) + @timeout_ms. */
static inline void
pf_deadline_after (struct timespec *ts, int timeout_ms)
{
  clock_gettime (CLOCK_MONOTONIC, ts);
  ts->tv_sec += timeout_ms / 1000;
  ts->tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* Milliseconds left until @deadline, 0 when past. */
static inline int
pf_deadline_remaining_ms (const struct timespec *deadline)
{
  struct timespec now;
  int64_t ms;

  clock_gettime (CLOCK_MONOTONIC, &now);
  ms = (int64_t) (deadline->tv_sec - now.tv_sec) * 1000 +
      (deadline->tv_nsec - now.tv_nsec) / 1000000;
  if (ms < 0)
    return 0;
  return ms > INT_MAX ? INT_MAX : (int) ms;
}

/* With @lock held, waits on @cond until @done (@data) is true. Returns 0,
 * or -ETIMEDOUT when @timeout_ms passed (at once for 0) with it false. */
static inline int
pf_cond_wait_until (pthread_cond_t * cond, pthread_mutex_t * lock,
    int timeout_ms, int (*done) (void *data), void *data)
{
  struct timespec deadline;

  if (timeout_ms > 0)
    pf_deadline_after (&deadline, timeout_ms);
  while (!done (data)) {
    if (timeout_ms == 0)
      return -ETIMEDOUT;
    if (timeout_ms < 0)
      pthread_cond_wait (cond, lock);
    else if (pthread_cond_timedwait (cond, lock, &deadline) == ETIMEDOUT)
      return done (data) ? 0 : -ETIMEDOUT;
  }
  return 0;
}

#endif /* __PF_TIME_PRIVATE_H__ */
