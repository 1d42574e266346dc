/* iceoryx's side of the hop benchmark (issue 35): one publisher process
 * and one subscriber process of the iceoryx C binding (2.0, Debian 12's
 * libiceoryx-binding-c-dev), carrying the frames shm-bench carries, run by
 * shm-bench (which starts and stops RouDi) as two children:
 *
 *   shm-bench-iox pub|sub W H FRAMES RATE PACED OUTFILE
 *
 * pub: loans a chunk of W*H*4 bytes from RouDi's mempools, writes the
 *   frame number and its CLOCK_MONOTONIC time into it in place (the 16
 *   bytes shm-bench's producers write into the sink's memory), publishes
 *   it; paced at RATE frames/s when PACED is 1, else as fast as the
 *   subscriber takes them. The publisher blocks when the subscriber's
 *   queue is full (ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER with the
 *   subscriber's QueueFullPolicy_BLOCK_PRODUCER): no frame is lost, as
 *   with pinnedshm's every-frame delivery. After the last frame it waits
 *   for SIGUSR1 and writes "CPU_NS VOL INVOL" and its threads' switches to
 *   OUTFILE (CPU and context switches since the subscriber was there).
 * sub: a waitset with the subscriber's HAS_DATA state attached; the
 *   thread sleeps in iox_ws_wait() until a chunk is there (no polling),
 *   takes every queued chunk, stamps it (latency = now - the publisher's
 *   time), releases it. After FRAMES frames (or 2 s without one; 10 s for
 *   the first) it writes to OUTFILE: "N T_FIRST T_LAST CPU_NS VOL INVOL",
 *   its threads' switches, then one latency (ns) per line; CPU and
 *   switches from its first frame to its last.
 *
 * Exit status: 0, 2 for bad arguments, 3 when iceoryx fails (no RouDi: the
 * runtime waits for it, shm-bench kills us then).
 * Plain C: one thread of ours per process (iceoryx adds its own).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <iceoryx_binding_c/log.h>
#include <iceoryx_binding_c/runtime.h>
#include <iceoryx_binding_c/publisher.h>
#include <iceoryx_binding_c/subscriber.h>
#include <iceoryx_binding_c/wait_set.h>
#include <iceoryx_binding_c/notification_info.h>
#include <iceoryx_binding_c/chunk.h>

#include "bench-wakeups.h"

static volatile sig_atomic_t stop_requested;
/* the mask before main() blocked SIGUSR1 (in every thread to come) */
static sigset_t unblocked;

static void
on_sigusr1 (int sig)
{
  (void) sig;
  stop_requested = 1;
}

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static uint64_t
cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u
      + (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

static void
sleep_until (uint64_t t)
{
  struct timespec ts = { t / 1000000000u, t % 1000000000u };

  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR);
}

/* "CPU_NS VOL INVOL\n" and the threads' switches (totals, not per frame:
 * shm-bench divides) */
static void
write_side (FILE * f, uint64_t cpu, bw_count c0, const bw_snap * s0)
{
  bw_count c = bw_total ();
  bw_snap s1, d;
  int i;

  bw_snapshot (0, &s1);
  bw_delta (s0, &s1, &d);
  fprintf (f, "%llu %llu %llu\n", (unsigned long long) cpu, c.vol - c0.vol,
      c.invol - c0.invol);
  for (i = 0; i < d.n; i++)
    fprintf (f, "%s%s %llu %llu", i ? "\t" : "", d.t[i].name, d.t[i].c.vol,
        d.t[i].c.invol);
  fprintf (f, "\n");
}

static int
run_pub (uint32_t size, long frames, long rate, int paced, const char *out)
{
  iox_pub_storage_t storage;
  iox_pub_options_t opts;
  iox_pub_t pub;
  uint64_t t0, cpu0, period = 1000000000u / (uint64_t) (rate > 0 ? rate : 1);
  long k, waits = 0;
  bw_count c0;
  bw_snap s0;
  FILE *f;
  char name[64];

  snprintf (name, sizeof (name), "pfbench-pub-%d", (int) getpid ());
  iox_runtime_init (name);
  iox_pub_options_init (&opts);
  opts.historyCapacity = 0;
  opts.subscriberTooSlowPolicy = ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER;
  pub = iox_pub_init (&storage, "pfbench", "hop", "frame", &opts);
  while (!iox_pub_has_subscribers (pub))
    usleep (1000);

  cpu0 = cpu_ns ();
  c0 = bw_total ();
  bw_snapshot (0, &s0);
  t0 = now_ns () + 100 * 1000000u;
  for (k = 0; k < frames; k++) {
    void *chunk = NULL;
    uint64_t stamp[2];
    enum iox_AllocationResult r;

    /* the subscriber holds one chunk and its queue four: the mempool's
     * eight never run out, unless RouDi's config is too small */
    while ((r = iox_pub_loan_aligned_chunk (pub, &chunk, size, 64))
        == AllocationResult_RUNNING_OUT_OF_CHUNKS) {
      waits++;
      usleep (50);
    }
    if (r != AllocationResult_SUCCESS) {
      fprintf (stderr, "shm-bench-iox: loan of %u bytes failed (%d)\n",
          size, (int) r);
      iox_pub_deinit (pub);
      iox_runtime_shutdown ();
      return 3;
    }
    if (paced)
      sleep_until (t0 + k * period);
    stamp[0] = (uint64_t) k;
    stamp[1] = now_ns ();
    memcpy (chunk, stamp, sizeof (stamp));
    iox_pub_publish_chunk (pub, chunk);
  }
  /* sleeps until shm-bench's signal, pending since if it came early */
  while (!stop_requested)
    sigsuspend (&unblocked);
  f = fopen (out, "we");
  if (f) {
    write_side (f, cpu_ns () - cpu0, c0, &s0);
    fclose (f);
  }
  if (waits)
    fprintf (stderr, "shm-bench-iox: %ld loans waited for a chunk\n", waits);
  iox_pub_deinit (pub);
  iox_runtime_shutdown ();
  return 0;
}

static int
run_sub (long frames, const char *out)
{
  iox_sub_storage_t storage;
  iox_sub_options_t opts;
  iox_ws_storage_t ws_storage;
  iox_notification_info_t info[4];
  iox_sub_t sub;
  iox_ws_t ws;
  uint64_t *lat = calloc ((size_t) frames, sizeof (uint64_t));
  uint64_t t_first = 0, t_last = 0, cpu_first = 0, cpu_last = 0;
  long n = 0, i;
  bw_count c0 = { 0, 0 }, c1 = { 0, 0 };
  bw_snap s0, s1, d;
  FILE *f;
  char name[64];

  if (lat == NULL)
    return 3;
  snprintf (name, sizeof (name), "pfbench-sub-%d", (int) getpid ());
  iox_runtime_init (name);
  iox_sub_options_init (&opts);
  opts.queueCapacity = 4;
  opts.historyRequest = 0;
  opts.queueFullPolicy = QueueFullPolicy_BLOCK_PRODUCER;
  sub = iox_sub_init (&storage, "pfbench", "hop", "frame", &opts);
  ws = iox_ws_init (&ws_storage);
  if (iox_ws_attach_subscriber_state (ws, sub, SubscriberState_HAS_DATA, 0,
          NULL) != WaitSetResult_SUCCESS) {
    fprintf (stderr, "shm-bench-iox: cannot attach the subscriber\n");
    return 3;
  }
  memset (&s1, 0, sizeof (s1));
  while (n < frames) {
    struct timespec timeout = { n == 0 ? 10 : 2, 0 };
    uint64_t missed = 0, got;
    const void *chunk;

    got = iox_ws_timed_wait (ws, timeout, info, 4, &missed);
    if (got == 0)
      break;
    while (n < frames && iox_sub_take_chunk (sub, &chunk) ==
        ChunkReceiveResult_SUCCESS) {
      uint64_t stamp[2], t = now_ns ();

      memcpy (stamp, chunk, sizeof (stamp));
      if (n == 0) {
        t_first = t;
        cpu_first = cpu_ns ();
        c0 = bw_total ();
        bw_snapshot (0, &s0);
      }
      t_last = t;
      lat[n++] = t > stamp[1] ? t - stamp[1] : 0;
      if (n == frames) {
        cpu_last = cpu_ns ();
        c1 = bw_total ();
        bw_snapshot (0, &s1);
      }
      iox_sub_release_chunk (sub, chunk);
    }
  }
  if (n > 0 && n < frames) {
    cpu_last = cpu_ns ();
    c1 = bw_total ();
    bw_snapshot (0, &s1);
  }
  f = fopen (out, "we");
  if (f) {
    fprintf (f, "%ld %llu %llu %llu %llu %llu\n", n,
        (unsigned long long) t_first, (unsigned long long) t_last,
        (unsigned long long) (cpu_last - cpu_first), c1.vol - c0.vol,
        c1.invol - c0.invol);
    if (n > 0) {
      bw_delta (&s0, &s1, &d);
      for (i = 0; i < d.n; i++)
        fprintf (f, "%s%s %llu %llu", i ? "\t" : "", d.t[i].name,
            d.t[i].c.vol, d.t[i].c.invol);
    }
    fprintf (f, "\n");
    for (i = 0; i < n; i++)
      fprintf (f, "%llu\n", (unsigned long long) lat[i]);
    fclose (f);
  }
  free (lat);
  iox_ws_detach_subscriber_state (ws, sub, SubscriberState_HAS_DATA);
  iox_ws_deinit (ws);
  iox_sub_deinit (sub);
  iox_runtime_shutdown ();
  return f ? 0 : 3;
}

int
main (int argc, char **argv)
{
  long w, h, frames, rate;
  int paced;

  if (argc != 8 || (strcmp (argv[1], "pub") && strcmp (argv[1], "sub"))) {
    fprintf (stderr, "usage: shm-bench-iox pub|sub W H FRAMES RATE PACED "
        "OUTFILE (run by shm-bench)\n");
    return 2;
  }
  w = strtol (argv[2], NULL, 10);
  h = strtol (argv[3], NULL, 10);
  frames = strtol (argv[4], NULL, 10);
  rate = strtol (argv[5], NULL, 10);
  paced = atoi (argv[6]);
  if (w <= 0 || h <= 0 || w * h * 4 > (long) UINT32_MAX || frames <= 0) {
    fprintf (stderr, "shm-bench-iox: bad frame size or count\n");
    return 2;
  }
  /* warnings and errors only: the bench's output is its tables */
  iox_set_loglevel (Iceoryx_LogLevel_Warn);
  /* shm-bench's child: go with it */
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  signal (SIGUSR1, on_sigusr1);
  {
    sigset_t block;

    sigemptyset (&block);
    sigaddset (&block, SIGUSR1);
    pthread_sigmask (SIG_BLOCK, &block, &unblocked);
  }
  if (strcmp (argv[1], "pub") == 0)
    return run_pub ((uint32_t) (w * h * 4), frames, rate, paced, argv[7]);
  return run_sub (frames, argv[7]);
}
