/* pinnedflow bridge benchmarks: small helpers shared by bench-bridge.c and
 * bench-dora1872.c (header only, plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sorting latencies and pacing a producer; each benchmark keeps its own
 * percentile rule (its figures in docs/results.md were measured with it).
 */
#ifndef __PF_BENCH_UTIL_H__
#define __PF_BENCH_UTIL_H__

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline int
bench_cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

/* Sorts @n values ascending. */
static inline void
bench_sort_u64 (uint64_t * v, unsigned int n)
{
  qsort (v, n, sizeof (*v), bench_cmp_u64);
}

/* Sleeps until @t, CLOCK_MONOTONIC nanoseconds (pf_monotonic_ns()'s
 * clock); at once when that is past. */
static inline void
bench_sleep_until (uint64_t t)
{
  struct timespec ts = { (time_t) (t / 1000000000ull),
    (long) (t % 1000000000ull)
  };
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR);
}

#endif /* __PF_BENCH_UTIL_H__ */
