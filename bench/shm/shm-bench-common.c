/* What shm-bench's pieces share: clocks, the consumer's record of a run
 * (probe_record), waiting for a producer's socket, and every producer's
 * report of its CPU time and context switches (bench_producer_start(),
 * bench_producer_report_and_exit(), read back by bench_read_side()).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The bottom of the bench's files: it calls none of them. probe_record()
 * runs on whichever thread receives a frame and takes the Probe's lock;
 * the rest runs on the calling thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "shm-bench.h"

guint64
bench_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

void
bench_sleep_until (guint64 t)
{
  struct timespec ts = { t / 1000000000u, t % 1000000000u };

  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR);
}

guint64
bench_cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return (guint64) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u
      + (guint64) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

void
probe_record (Probe * p, guint64 t, guint64 sent)
{
  g_mutex_lock (&p->lock);
  if (p->n < p->want) {
    if (p->n == 0) {
      p->t_first = t;
      p->cpu_first = bench_cpu_ns ();
      p->cs_first = bw_total ();
      bw_snapshot (0, &p->snap_first);
    }
    p->t_last = t;
    p->lat[p->n++] = t > sent ? t - sent : 0;
    /* the waiting thread is woken at the first frame and the last only
     * (it checks for progress every 2 s on its own): a wake-up per frame
     * in the consumer process would be the benchmark's cost, counted in
     * every transport's CPU */
    if (p->n == p->want) {
      p->cpu_last = bench_cpu_ns ();
      p->cs_last = bw_total ();
      bw_snapshot (0, &p->snap_last);
    }
    if (p->n == 1 || p->n == p->want)
      g_cond_signal (&p->cond);
  }
  g_mutex_unlock (&p->lock);
}

gboolean
bench_wait_socket (const gchar * path, GPid pid)
{
  gint i;

  for (i = 0; i < 1000; i++) {
    if (g_file_test (path, G_FILE_TEST_EXISTS))
      return TRUE;
    if (waitpid (pid, NULL, WNOHANG) == pid)
      return FALSE;
    g_usleep (10000);
  }
  return FALSE;
}

static volatile sig_atomic_t stop_requested;

void
on_sigusr1 (int sig)
{
  stop_requested = 1;
}

/* what the producer process had used when its clock started */
static guint64 prod_cpu0;
sigset_t prod_unblocked;
static bw_count prod_cs0;
static bw_snap prod_snap0;

void
bench_producer_start (void)
{
  prod_cpu0 = bench_cpu_ns ();
  prod_cs0 = bw_total ();
  bw_snapshot (0, &prod_snap0);
}

/* Waits for the consumer's SIGUSR1, writes to SOCKET.cpu the CPU time and
 * the context switches since bench_producer_start() ("CPU_NS VOL INVOL",
 * then "NAME VOL INVOL" per thread, tab-separated) and exits. */
int
bench_producer_report_and_exit (const gchar * socket)
{
  gchar *path = g_strconcat (socket, ".cpu", NULL);
  GString *text = g_string_new (NULL);
  guint64 cpu;
  bw_count c;
  bw_snap s1, d;
  gint i;

  /* sleeps until the signal (no polling: the wait is in the counts);
   * main() blocked SIGUSR1 before any thread existed, so it stays pending
   * until this thread takes it here */
  while (!stop_requested)
    sigsuspend (&prod_unblocked);
  cpu = bench_cpu_ns () - prod_cpu0;
  c = bw_total ();
  bw_snapshot (0, &s1);
  bw_delta (&prod_snap0, &s1, &d);
  g_string_append_printf (text, "%" G_GUINT64_FORMAT " %llu %llu\n", cpu,
      c.vol - prod_cs0.vol, c.invol - prod_cs0.invol);
  for (i = 0; i < d.n; i++)
    g_string_append_printf (text, "%s%s %llu %llu", i ? "\t" : "",
        d.t[i].name, d.t[i].c.vol, d.t[i].c.invol);
  g_string_append (text, "\n");
  g_file_set_contents (path, text->str, -1, NULL);
  g_string_free (text, TRUE);
  g_free (path);
  _exit (0);
}

/* "NAME VOL INVOL\t..." (totals) to "NAME vol/invol, ..." per frame */
static void
threads_per_frame (const gchar * line, guint frames, gchar * out, gsize len)
{
  gchar **parts = g_strsplit (line, "\t", -1);
  bw_snap d = { 0, };
  gint i;

  for (i = 0; parts[i] && d.n < BW_MAX_THREADS; i++) {
    bw_thread *t = &d.t[d.n];

    if (sscanf (parts[i], "%19s %llu %llu", t->name, &t->c.vol,
            &t->c.invol) == 3)
      d.n++;
  }
  g_strfreev (parts);
  bw_format (&d, frames, out, len);
}

gboolean
bench_read_side (const gchar * path, guint frames, Result * res)
{
  gchar *text = NULL, **lines;
  guint64 cpu;
  unsigned long long vol, invol;
  gboolean ok = FALSE;

  if (!g_file_get_contents (path, &text, NULL, NULL) || frames == 0) {
    g_free (text);
    return FALSE;
  }
  lines = g_strsplit (text, "\n", 3);
  if (lines[0] && sscanf (lines[0], "%" G_GUINT64_FORMAT " %llu %llu", &cpu,
          &vol, &invol) == 3) {
    res->cpu_prod_us = cpu / 1000.0 / frames;
    res->wake_prod = (double) vol / frames;
    res->csw_prod = (double) (vol + invol) / frames;
    if (lines[1])
      threads_per_frame (lines[1], frames, res->threads_prod,
          sizeof (res->threads_prod));
    ok = TRUE;
  }
  g_strfreev (lines);
  g_free (text);
  return ok;
}
