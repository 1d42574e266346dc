/* pinnedflow bridge benchmarks: small helpers shared by bench-bridge.c and
 * bench-dora1872.c (header only, plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sorting latencies, pacing, and the pf-node producer process both run;
 * each benchmark keeps its own percentile rule (its figures in
 * docs/results.md were measured with it).
 */
#ifndef __PF_BENCH_UTIL_H__
#define __PF_BENCH_UTIL_H__

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <pinnedflow/pf-node.h>

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

#define BENCH_FRAME_NS 33333333ull      /* 30 Hz */

/* The producer process of both benchmarks (call in a fork()ed child; it
 * dies with its parent): a pf-node producer on @path with @n_slots slots of
 * @w x @h RGBA, which waits for one consumer, then writes every byte of
 * @frames frames on the CPU (memset) and publishes them, 30 Hz when @paced
 * (else as fast as the consumer releases; framerate 0/1), then EOS. Exits
 * 0, or 1 when the library fails. */
static inline void
bench_node_producer (const char *path, unsigned int n_slots, unsigned int w,
    unsigned int h, unsigned int frames, int paced)
    __attribute__((noreturn));

static inline void
bench_node_producer (const char *path, unsigned int n_slots, unsigned int w,
    unsigned int h, unsigned int frames, int paced)
{
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *p;
  pf_node_loan loan;
  uint64_t start, n;

  prctl (PR_SET_PDEATHSIG, SIGKILL);
  cfg.socket_path = path;
  cfg.n_slots = n_slots;
  cfg.slot_size = (uint64_t) w *h * 4;
  if (pf_node_producer_new (&cfg, &p) < 0)
    _exit (1);
  pf_node_producer_set_video (p, "RGBA", w, h, paced ? 30 : 0, 1);
  pf_node_producer_wait_clients (p, 1, -1);
  start = pf_monotonic_ns ();
  for (n = 0; n < frames; n++) {
    if (pf_node_producer_loan_video (p, 5000, &loan) < 0)
      _exit (1);
    memset (loan.data, (int) (n & 0xff), loan.size);
    loan.pts = n * BENCH_FRAME_NS;
    if (pf_node_producer_publish (p, &loan) < 0)
      _exit (1);
    if (paced)
      bench_sleep_until (start + (n + 1) * BENCH_FRAME_NS);
  }
  pf_node_producer_send_eos (p);
  pf_node_producer_wait_idle (p, 5000);
  pf_node_producer_free (p);
  _exit (0);
}

#endif /* __PF_BENCH_UTIL_H__ */
