/* Wake-up benchmark (issue 13): what one paced cross-process "a frame is
 * there" costs, by mechanism, without GStreamer or pinnedflow.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   wake-bench [--frames N] [--after-us US] [--rounds R]
 *
 * A producer process wakes every 10 ms (clock_nanosleep, as shm-bench's
 * pacing thread), stamps CLOCK_MONOTONIC into shared memory, signals the
 * consumer process, then keeps its CPU busy for --after-us microseconds
 * (what a GStreamer producer still does after its send: return through
 * basesink and the pad push) before it sleeps again. The consumer sleeps
 * in poll () and stamps its wake-up. Mechanisms:
 *   seqpacket  a 256-byte SOCK_SEQPACKET message (pinnedflow's FRAME
 *              before the frame ring; the floor of shm-bench)
 *   stream     a 24-byte SOCK_STREAM message (what shmsink sends)
 *   eventfd    an eventfd write; the consumer polls the eventfd and reads
 *              it (the frame ring's doorbell)
 *   epoll      the same eventfd, the consumer polling an epoll fd that
 *              holds it and a socket (what pf_consumer_get_fd () returns
 *              with a frame ring)
 * Printed per mechanism (median of --rounds interleaved rounds of N
 * frames): latency p50 and p90 from the stamp to the consumer's wake-up,
 * the producer's signal step (stamp to the end of its send/write, which
 * includes waking the consumer), and the consumer thread's CPU per frame.
 */

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 10000
#define SKIP 10

enum
{ SEQPACKET, STREAM, EVENTFD, EPOLL, N_MODES };
static const char *mode_names[] = { "seqpacket", "stream", "eventfd",
  "epoll"
};

struct shared
{
  volatile uint64_t stamp;
  volatile uint64_t signal_ns[MAX_FRAMES];
};

typedef struct
{
  double p50, p90, signal, cpu;
} result;

static uint64_t
now_ns (void)
{
  struct timespec t;

  clock_gettime (CLOCK_MONOTONIC, &t);
  return (uint64_t) t.tv_sec * 1000000000u + t.tv_nsec;
}

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
thread_cpu_us (void)
{
  struct rusage ru;

  getrusage (RUSAGE_THREAD, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
      ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void
producer (int mode, int fd, int efd, struct shared *sh, int n, int after_us)
{
  static char msg[256];
  uint64_t t0 = now_ns () + 50000000u, one = 1;
  int k;

  for (k = 0; k < n; k++) {
    uint64_t t = t0 + (uint64_t) k * 10000000u, s, e;
    struct timespec ts = { t / 1000000000u, t % 1000000000u };

    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0);
    s = now_ns ();
    sh->stamp = s;
    __atomic_thread_fence (__ATOMIC_SEQ_CST);
    if (mode == EVENTFD || mode == EPOLL) {
      if (write (efd, &one, sizeof (one)) != sizeof (one))
        _exit (1);
    } else if (send (fd, msg, mode == STREAM ? 24 : 256, MSG_NOSIGNAL) < 0) {
      _exit (1);
    }
    sh->signal_ns[k] = now_ns () - s;
    for (e = now_ns () + (uint64_t) after_us * 1000u; now_ns () < e;);
  }
  _exit (0);
}

static result
run (int mode, int n, int after_us)
{
  struct shared *sh = mmap (NULL, sizeof (*sh), PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int sv[2], efd, ep = -1, k;
  uint64_t *lat = calloc (n, sizeof (uint64_t)), *sig = calloc (n,
      sizeof (uint64_t));
  struct pollfd pfd = {.events = POLLIN };
  struct epoll_event e = {.events = EPOLLIN };
  char buf[256];
  double cpu0;
  result r;
  pid_t pid;

  if (sh == MAP_FAILED || lat == NULL || sig == NULL ||
      socketpair (AF_UNIX, mode == STREAM ? SOCK_STREAM : SOCK_SEQPACKET, 0,
          sv) < 0 || (efd = eventfd (0, EFD_SEMAPHORE)) < 0) {
    perror ("setup");
    exit (1);
  }
  if (mode == EPOLL) {
    ep = epoll_create1 (0);
    epoll_ctl (ep, EPOLL_CTL_ADD, efd, &e);
    epoll_ctl (ep, EPOLL_CTL_ADD, sv[1], &e);
  }
  pid = fork ();
  if (pid == 0)
    producer (mode, sv[0], efd, sh, n, after_us);
  pfd.fd = mode == EPOLL ? ep : mode == EVENTFD ? efd : sv[1];
  cpu0 = thread_cpu_us ();
  for (k = 0; k < n; k++) {
    uint64_t v;

    while (poll (&pfd, 1, -1) < 1);
    if (mode == EVENTFD || mode == EPOLL) {
      if (read (efd, &v, sizeof (v)) != sizeof (v))
        break;
    } else if (recv (sv[1], buf, sizeof (buf), 0) <= 0) {
      break;
    }
    lat[k] = now_ns () - sh->stamp;
  }
  r.cpu = (thread_cpu_us () - cpu0) / n;
  waitpid (pid, NULL, 0);
  for (k = 0; k < n; k++)
    sig[k] = sh->signal_ns[k];
  qsort (lat + SKIP, n - SKIP, sizeof (uint64_t), cmp_u64);
  qsort (sig + SKIP, n - SKIP, sizeof (uint64_t), cmp_u64);
  r.p50 = lat[SKIP + (n - SKIP) / 2] / 1000.0;
  r.p90 = lat[SKIP + (n - SKIP) * 9 / 10] / 1000.0;
  r.signal = sig[SKIP + (n - SKIP) / 2] / 1000.0;
  close (sv[0]);
  close (sv[1]);
  close (efd);
  if (ep >= 0)
    close (ep);
  free (lat);
  free (sig);
  munmap (sh, sizeof (*sh));
  return r;
}

int
main (int argc, char **argv)
{
  int n = 300, after_us = 13, rounds = 3, i, m, k;
  static result res[N_MODES][9];

  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp (argv[i], "--frames") == 0)
      n = atoi (argv[i + 1]);
    else if (strcmp (argv[i], "--after-us") == 0)
      after_us = atoi (argv[i + 1]);
    else if (strcmp (argv[i], "--rounds") == 0)
      rounds = atoi (argv[i + 1]);
  }
  if (n <= SKIP || n > MAX_FRAMES || rounds < 1 || rounds > 9 || after_us < 0) {
    fprintf (stderr, "usage: wake-bench [--frames 11..%d] [--after-us US] "
        "[--rounds 1..9]\n", MAX_FRAMES);
    return 2;
  }
  for (k = 0; k < rounds; k++)
    for (m = 0; m < N_MODES; m++)
      res[m][k] = run (m, n, after_us);
  printf ("%d frames at 100/s, the producer busy %d us after signalling; "
      "median of %d interleaved rounds (by p50)\n", n, after_us, rounds);
  printf ("%-10s %9s %9s %11s %11s\n", "mechanism", "p50 us", "p90 us",
      "signal us", "cons cpu/f");
  for (m = 0; m < N_MODES; m++) {
    double p50[9];
    result *pick = &res[m][0];

    for (k = 0; k < rounds; k++)
      p50[k] = res[m][k].p50;
    qsort (p50, rounds, sizeof (double), cmp_double);
    for (k = 0; k < rounds; k++)
      if (res[m][k].p50 == p50[rounds / 2])
        pick = &res[m][k];
    printf ("%-10s %9.1f %9.1f %11.1f %11.1f\n", mode_names[m], pick->p50,
        pick->p90, pick->signal, pick->cpu);
  }
  return 0;
}
