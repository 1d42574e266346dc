/* shm-bench's rounds and tables (issues 13, 35): every transport run in
 * turn, round after round, the median round and the spread of the rounds
 * printed with the ratios to the floor; the CPU and wake-up table; the
 * iceoryx section.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Rounds: for r in rounds, for each transport on: one paced run. A burst
 * of load on the shared machine then falls on one round of one transport,
 * not on the whole comparison; the row printed is the round with the
 * median p50 (or the median CPU per frame, @by_cpu), with the smallest and
 * the largest p50 of the rounds beside it, and a p99 taken over the frames
 * of all rounds together. Called from shm-bench's main thread only.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shm-bench.h"

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static int
cmp_u64 (const void *a, const void *b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

static double
key (const Result * r, gboolean by_cpu)
{
  return by_cpu ? r->cpu_prod_us + r->cpu_cons_us : r->p50_us;
}

void
bench_rounds (bench_run_fn run, const BenchImpl * impls, guint n_impls,
    gint w, gint h, gint fps, gint rounds, gboolean by_cpu, Row * rows)
{
  Result *all = g_new0 (Result, (gsize) n_impls * rounds);
  GArray **pooled = g_new0 (GArray *, n_impls);
  guint i;
  gint r;

  for (i = 0; i < n_impls; i++)
    pooled[i] = g_array_new (FALSE, FALSE, sizeof (guint64));
  for (r = 0; r < rounds; r++)
    for (i = 0; i < n_impls; i++)
      if (impls[i].on)
        all[i * rounds + r] = run (impls[i].impl, w, h, TRUE, fps, pooled[i]);
  for (i = 0; i < n_impls; i++) {
    Result *mine = all + i * rounds;
    double keys[MAX_ROUNDS], p50s[MAX_ROUNDS];
    gint k, got = 0;

    memset (&rows[i], 0, sizeof (Row));
    rows[i].med.cpu_prod_us = rows[i].med.cpu_cons_us = -1;
    if (!impls[i].on)
      continue;
    for (k = 0; k < rounds; k++)
      if (mine[k].frames > WARMUP) {
        keys[got] = key (&mine[k], by_cpu);
        p50s[got++] = mine[k].p50_us;
      }
    rows[i].rounds = got;
    if (got == 0)
      continue;
    qsort (keys, got, sizeof (double), cmp_double);
    qsort (p50s, got, sizeof (double), cmp_double);
    rows[i].p50_min = p50s[0];
    rows[i].p50_max = p50s[got - 1];
    /* the round whose key is the median */
    for (k = 0; k < rounds; k++)
      if (mine[k].frames > WARMUP && key (&mine[k], by_cpu) == keys[got / 2]) {
        rows[i].med = mine[k];
        break;
      }
    if (pooled[i]->len > 0) {
      guint64 *v = (guint64 *) pooled[i]->data;
      guint n = pooled[i]->len;

      qsort (v, n, sizeof (guint64), cmp_u64);
      rows[i].med.p99_us = v[MIN (n - 1, (guint) ceil (n * 0.99) - 1)] / 1e3;
    }
  }
  for (i = 0; i < n_impls; i++)
    g_array_free (pooled[i], TRUE);
  g_free (pooled);
  g_free (all);
}

static double
ratio (double a, double b)
{
  return a > 0 && b > 0 ? a / b : 0;
}

void
print_size_header (void)
{
  printf ("%-10s %-22s %9s %9s %15s %9s %7s %7s %7s %7s %7s %6s %6s\n",
      "size", "transport", "frames/s", "p50 us", "p50 min-max", "p99 us",
      "p50/shm", "p50/flr", "p50/cpy", "cpu p", "cpu c", "wake p", "wake c");
}

void
print_size_rows (const gchar * size, const BenchImpl * impls, guint n_impls,
    const Result * tp, const Row * rows, guint shm, guint flr, double memcpy_us,
    guint want)
{
  guint i;

  for (i = 0; i < n_impls; i++) {
    const Result *m = &rows[i].med;
    gchar spread[32], fps[32];

    if (!impls[i].on || rows[i].rounds == 0) {
      printf ("%-10s %-22s  (%s)\n", size, impls[i].name, impls[i].on ?
          "no frames" : impls[i].off_reason);
      continue;
    }
    g_snprintf (spread, sizeof (spread), "%.1f-%.1f", rows[i].p50_min,
        rows[i].p50_max);
    if (tp[i].fps > 0)
      g_snprintf (fps, sizeof (fps), "%.0f", tp[i].fps);
    else
      g_snprintf (fps, sizeof (fps), "-");
    printf ("%-10s %-22s %9s %9.1f %15s %9.1f %7.2f %7.2f %7.2f %7.1f "
        "%7.1f %6.2f %6.2f%s\n", size, impls[i].name, fps, m->p50_us,
        spread, m->p99_us, ratio (m->p50_us, rows[shm].med.p50_us),
        ratio (m->p50_us, rows[flr].med.p50_us), ratio (m->p50_us,
            memcpy_us), m->cpu_prod_us, m->cpu_cons_us, m->wake_prod,
        m->wake_cons, want && tp[i].frames < want ? "  (frames skipped)" : "");
  }
}

/* "A / B" ratios of frames/s (unpaced), p50, p99 and CPU per frame */
void
print_ratio (const gchar * size, const gchar * what, const Result * tpa,
    const Row * a, const Result * tpb, const Row * b)
{
  double ca = a->med.cpu_prod_us + a->med.cpu_cons_us;
  double cb = b->med.cpu_prod_us + b->med.cpu_cons_us;

  gchar fps[32];

  if (a->rounds == 0 || b->rounds == 0)
    return;
  if (tpa->fps > 0 && tpb->fps > 0)
    g_snprintf (fps, sizeof (fps), "%.2f", tpa->fps / tpb->fps);
  else
    g_snprintf (fps, sizeof (fps), "-");
  printf ("%-10s %-22s %9s %9.2f %15s %9.2f %23s %15.2f (cpu)\n", size,
      what, fps, ratio (a->med.p50_us, b->med.p50_us),
      "", ratio (a->med.p99_us, b->med.p99_us), "", ratio (ca, cb));
}

void
print_wake_table (const BenchImpl * impls, guint n_impls, const Row * rows,
    guint shm, guint flr)
{
  guint i;

  printf ("%-22s %8s %9s %9s %9s %7s %7s %7s %7s %7s\n", "transport",
      "p50 us", "prod us/f", "cons us/f", "total", "cpu/shm", "cpu/flr",
      "wake p", "wake c", "csw p+c");
  for (i = 0; i < n_impls; i++) {
    const Result *m = &rows[i].med;
    double tot = m->cpu_prod_us + m->cpu_cons_us;

    if (!impls[i].on || rows[i].rounds == 0 || m->cpu_prod_us < 0) {
      printf ("%-22s  (%s)\n", impls[i].name, impls[i].on ? "no figure" :
          impls[i].off_reason);
      continue;
    }
    printf ("%-22s %8.1f %9.1f %9.1f %9.1f %7.2f %7.2f %7.2f %7.2f %7.2f\n",
        impls[i].name, m->p50_us, m->cpu_prod_us, m->cpu_cons_us, tot,
        ratio (tot, rows[shm].med.cpu_prod_us + rows[shm].med.cpu_cons_us),
        ratio (tot, rows[flr].med.cpu_prod_us + rows[flr].med.cpu_cons_us),
        m->wake_prod, m->wake_cons, m->csw_prod + m->csw_cons);
  }
  printf ("\nThread by thread (the median round; voluntary/nonvoluntary "
      "switches per frame; threads with none left out)\n");
  for (i = 0; i < n_impls; i++) {
    const Result *m = &rows[i].med;

    if (!impls[i].on || rows[i].rounds == 0 || m->cpu_prod_us < 0)
      continue;
    printf ("%-22s producer: %s\n%-22s consumer: %s\n", impls[i].name,
        m->threads_prod[0] ? m->threads_prod : "-", "",
        m->threads_cons[0] ? m->threads_cons : "-");
    if (m->wake_roudi >= 0)
      printf ("%-22s RouDi:    %.2f wake-ups, %.1f us CPU per frame\n", "",
          m->wake_roudi, m->cpu_roudi_us);
  }
}
