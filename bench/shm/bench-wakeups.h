/* Context switches of this process, in total and thread by thread, for
 * the hop benchmarks (issue 35): plain C, no GLib, shared by shm-bench and
 * shm-bench-iox.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A voluntary context switch is a thread going to sleep (a wait in poll,
 * recv, a futex, nanosleep); each one is followed by a wake-up, so the
 * voluntary count over a run is the number of wake-ups of the process. A
 * nonvoluntary one is a preemption (the thread still had work): on a
 * loaded machine it says how often the scheduler took the core away.
 *  - bw_total(): getrusage (RUSAGE_SELF) ru_nvcsw / ru_nivcsw, which
 *    counts every thread of the process, those that exited included.
 *  - bw_snapshot(): /proc/self/task/TID/status, thread by thread with its
 *    name (comm), for the breakdown of where a side's wake-ups come from;
 *    a thread that exited between two snapshots is missing from it (the
 *    total still has it). The main thread is named "main"; the others
 *    keep their comm (a thread nobody named has the program's).
 * Single-threaded use: the caller owns the structs.
 */
#ifndef __BENCH_WAKEUPS_H__
#define __BENCH_WAKEUPS_H__

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define BW_MAX_THREADS 64

typedef struct
{
  unsigned long long vol, invol;
} bw_count;

typedef struct
{
  int tid;
  char name[20];
  bw_count c;
} bw_thread;

typedef struct
{
  int n;
  bw_thread t[BW_MAX_THREADS];
} bw_snap;

static inline bw_count
bw_total (void)
{
  struct rusage ru;
  bw_count c = { 0, 0 };

  if (getrusage (RUSAGE_SELF, &ru) == 0) {
    c.vol = (unsigned long long) ru.ru_nvcsw;
    c.invol = (unsigned long long) ru.ru_nivcsw;
  }
  return c;
}

/* Reads /proc/@pid/task/ (pid 0: self). Returns the number of threads
 * read (0 when /proc cannot be read). */
static inline int
bw_snapshot (int pid, bw_snap * s)
{
  char path[64], line[128];
  struct dirent *d;
  DIR *dir;
  int self = pid > 0 ? pid : (int) getpid ();

  s->n = 0;
  if (pid > 0)
    snprintf (path, sizeof (path), "/proc/%d/task", pid);
  else
    snprintf (path, sizeof (path), "/proc/self/task");
  dir = opendir (path);
  if (dir == NULL)
    return 0;
  while ((d = readdir (dir)) != NULL && s->n < BW_MAX_THREADS) {
    bw_thread *t = &s->t[s->n];
    char file[384];
    FILE *f;

    if (d->d_name[0] < '0' || d->d_name[0] > '9')
      continue;
    snprintf (file, sizeof (file), "%s/%s/status", path, d->d_name);
    f = fopen (file, "re");
    if (f == NULL)
      continue;
    memset (t, 0, sizeof (*t));
    t->tid = atoi (d->d_name);
    while (fgets (line, sizeof (line), f)) {
      if (strncmp (line, "Name:", 5) == 0) {
        char *p = line + 5;

        while (*p == ' ' || *p == '\t')
          p++;
        size_t l = strcspn (p, "\n");

        if (l >= sizeof (t->name))
          l = sizeof (t->name) - 1;
        memcpy (t->name, p, l);
        t->name[l] = '\0';
        /* one word: the bench passes "NAME VOL INVOL" between processes */
        for (l = 0; t->name[l]; l++)
          if (t->name[l] == ' ' || t->name[l] == '\t')
            t->name[l] = '_';
      } else if (strncmp (line, "voluntary_ctxt_switches:", 24) == 0) {
        t->c.vol = strtoull (line + 24, NULL, 10);
      } else if (strncmp (line, "nonvoluntary_ctxt_switches:", 27) == 0) {
        t->c.invol = strtoull (line + 27, NULL, 10);
      }
    }
    fclose (f);
    /* the main thread by its role: the others often share its comm */
    if (t->tid == self)
      snprintf (t->name, sizeof (t->name), "main");
    s->n++;
  }
  closedir (dir);
  return s->n;
}

/* @end less @start thread by thread (a thread new since @start counts
 * from 0), into @out; threads with no switch in between are left out. */
static inline void
bw_delta (const bw_snap * start, const bw_snap * end, bw_snap * out)
{
  int i, j;

  out->n = 0;
  for (i = 0; i < end->n; i++) {
    bw_thread t = end->t[i];

    for (j = 0; j < start->n; j++)
      if (start->t[j].tid == t.tid) {
        t.c.vol -= start->t[j].c.vol;
        t.c.invol -= start->t[j].c.invol;
        break;
      }
    if (t.c.vol + t.c.invol > 0)
      out->t[out->n++] = t;
  }
}

/* One line: "name vol/invol name vol/invol ..." per thread of @d, the
 * counts divided by @frames. */
static inline void
bw_format (const bw_snap * d, unsigned frames, char *buf, size_t len)
{
  size_t at = 0;
  int i;

  buf[0] = '\0';
  for (i = 0; i < d->n && at + 1 < len; i++) {
    int r = snprintf (buf + at, len - at, "%s%s %.2f/%.2f", i ? ", " : "",
        d->t[i].name, frames ? (double) d->t[i].c.vol / frames : 0.0,
        frames ? (double) d->t[i].c.invol / frames : 0.0);

    if (r < 0)
      break;
    at += (size_t) r;
  }
}

#endif /* __BENCH_WAKEUPS_H__ */
