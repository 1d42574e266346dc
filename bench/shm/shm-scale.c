/* shm-scale: how the cost of the node API's hop grows with the number of
 * producers and consumers (issue 35, item 4).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   shm-scale [--producers 1,2,4,8,16] [--consumers 1,2,4] [--frames N]
 *             [--rate FPS] [--size WxH] [--slots N] [--csv-file FILE]
 *             [--smoke]
 *
 * For every cell of the grid (P producers x C consumers each) this process
 * starts P producer processes and P x C consumer processes of its own
 * program (--role produce / --role consume), all on the C node API:
 * pf_node_producer (a pool of --slots frames of WxH RGBA, mlocked as by
 * default) -> pf_node_consumer (delivery every-frame). A producer fills
 * every slot of its pool once before the run; per frame it only loans a
 * slot, writes 24 bytes in place (frame number, CLOCK_MONOTONIC time of the
 * publish, the time the frame was due) and publishes it, paced at --rate
 * frames/s: so what is measured is the transport, not the making of
 * frames. The producers' clocks are staggered: producer i's frame k is due
 * at T0 + i x period / P + k x period (cameras are not in phase).
 * A consumer process blocks in pf_node_consumer_next(), stamps each frame
 * and releases it. Each cell starts once every producer has all its
 * consumers connected; between cells every child is reaped and the
 * cell's folder (sockets, result files) removed, also when a cell fails
 * and on SIGINT/SIGTERM (the children also die with this process:
 * PR_SET_PDEATHSIG).
 *
 * Per cell (a "hop" = one frame from one producer to one consumer; a cell
 * delivers P x C x frames hops):
 *  - cpu us/hop: user+sys of every process of the cell (all threads,
 *    getrusage RUSAGE_SELF in each: a producer from its first publish to
 *    the end of the cell, a consumer from its first frame to its last)
 *    divided by the hops delivered; "ratio" is that over the 1x1 cell of
 *    the same run (run first, and again last as a check of drift);
 *  - prod us/f, cons us/f: one producer's CPU per frame it published (it
 *    serves C consumers), one consumer's per frame received;
 *  - p50, p99: publish -> consumer's stamp, over every hop of the cell
 *    (the first 5 frames of each consumer left out: they map segments);
 *  - late: hops that arrived more than one frame period after the frame
 *    was due (the pacing time, so a producer that fell behind counts);
 *  - lost: frames a consumer never got (every-frame: must be 0);
 *  - wake/hop: voluntary context switches (wake-ups) of all the processes
 *    over the same windows, per hop;
 *  - cpu%: this cell's processes' CPU over the cell's frames (frames /
 *    rate seconds) as a share of all the machine's CPUs; busy%: the whole
 *    machine's (/proc/stat, every process, the neighbours included) over
 *    the same time.
 * After the grid the run says where the per-hop cost leaves 1.5x the 1x1
 * figure, frames come late or are lost, and how busy the CPUs were there.
 * --csv-file writes the rows for bench/shm/shm-scale-plot.py.
 * --smoke: cells 1x1 and 2x2, 20 small frames: exits 1 unless every
 * consumer counted every frame and none was lost (a test, not a bench: it
 * asserts no time).
 * It is a benchmark: nothing here judges a figure.
 *
 * Threads: each process here is single-threaded except for the
 * pf_producer I/O thread in producers; the orchestrating process only
 * spawns, waits and reads files.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <pinnedflow/pf-node.h>

#include "shm-bench.h"

/* frames of each consumer left out of the latency figures */
#define SCALE_WARMUP 5
#define MAX_CHILDREN 512

static gchar *opt_producers = (gchar *) "1,2,4,8,16";
static gchar *opt_consumers = (gchar *) "1,2,4";
static gint opt_frames = 150;
static gint opt_rate = 30;
static gchar *opt_size = (gchar *) "1920x1080";
static gint opt_slots = 4;
static gchar *opt_csv_file;
static gboolean opt_smoke;
/* child roles */
static gchar *opt_role, *opt_socket, *opt_go, *opt_out;
static gint opt_clients = 1, opt_width, opt_height;
static gint64 opt_phase_ns;
/* how long a process waits for its peers (connection, the start) */
static gint opt_wait_s = 60;

static GOptionEntry entries[] = {
  {"producers", 0, 0, G_OPTION_ARG_STRING, &opt_producers,
      "producer counts of the grid (1,2,4,8,16)", "LIST"},
  {"consumers", 0, 0, G_OPTION_ARG_STRING, &opt_consumers,
      "consumers per producer of the grid (1,2,4)", "LIST"},
  {"frames", 'n', 0, G_OPTION_ARG_INT, &opt_frames,
      "frames per producer per cell (150)", NULL},
  {"rate", 0, 0, G_OPTION_ARG_INT, &opt_rate,
      "frames/s of each producer (30)", NULL},
  {"size", 0, 0, G_OPTION_ARG_STRING, &opt_size,
      "frame size, RGBA (1920x1080)", "WxH"},
  {"slots", 0, 0, G_OPTION_ARG_INT, &opt_slots,
      "frames in each producer's pool (4)", "N"},
  {"csv-file", 0, 0, G_OPTION_ARG_FILENAME, &opt_csv_file,
      "also write the rows to FILE (for shm-scale-plot.py)", "FILE"},
  {"smoke", 0, 0, G_OPTION_ARG_NONE, &opt_smoke,
      "1x1 and 2x2, 20 small frames: exit 1 unless nothing was lost", NULL},
  {"role", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_role, NULL,
      NULL},
  {"socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_socket, NULL,
      NULL},
  {"go", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_go, NULL, NULL},
  {"out", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_out, NULL, NULL},
  {"clients", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_clients, NULL,
      NULL},
  {"width", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_width, NULL, NULL},
  {"height", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_height, NULL,
      NULL},
  {"phase-ns", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT64, &opt_phase_ns,
      NULL, NULL},
  {"wait-s", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_wait_s, NULL,
      NULL},
  {NULL}
};

/* ------------------------------------------------------------------------ */
/* producer process */

static volatile sig_atomic_t stop_requested;

static void
on_stop (int sig)
{
  stop_requested = 1;
}

/* "T0\n" in @path once the orchestrator wrote it (renamed into place) */
static gboolean
wait_go (const gchar * path, guint64 * t0)
{
  gint i;

  for (i = 0; i < opt_wait_s * 1000; i++) {
    gchar *text = NULL;

    if (g_file_get_contents (path, &text, NULL, NULL)) {
      gboolean ok = sscanf (text, "%" G_GUINT64_FORMAT, t0) == 1;

      g_free (text);
      return ok;
    }
    g_usleep (1000);
  }
  return FALSE;
}

/* Writes "PUBLISHED CPU_NS VOL INVOL" to @out. */
static void
write_report (const gchar * out, const gchar * text)
{
  gchar *tmp = g_strconcat (out, ".tmp", NULL);

  if (g_file_set_contents (tmp, text, -1, NULL))
    g_rename (tmp, out);
  g_free (tmp);
}

static int
scale_produce (void)
{
  pf_node_producer_config config = { 0, };
  pf_node_producer *p = NULL;
  pf_node_loan *fill;
  guint64 t0, period = 1000000000u / (guint) MAX (opt_rate, 1), cpu0;
  gchar *ready, *text;
  bw_count cs0, cs1;
  sigset_t block, old;
  gint k, res, published = 0, filled = 0;

  /* SIGUSR1 (the end of the cell) blocked in every thread to come */
  signal (SIGUSR1, on_stop);
  sigemptyset (&block);
  sigaddset (&block, SIGUSR1);
  pthread_sigmask (SIG_BLOCK, &block, &old);

  config.socket_path = opt_socket;
  config.n_slots = (guint) MAX (opt_slots, 1);
  config.slot_size = (guint64) opt_width *opt_height * 4;
  if ((res = pf_node_producer_new (&config, &p)) < 0
      || (res = pf_node_producer_set_video (p, "RGBA", opt_width,
              opt_height, 0, 1)) < 0) {
    g_printerr ("shm-scale producer %s: %s\n", opt_socket,
        pf_node_strerror (res));
    return 1;
  }
  /* every slot filled once: no frame is made per frame */
  fill = g_new0 (pf_node_loan, config.n_slots);
  for (k = 0; k < (gint) config.n_slots; k++) {
    if (pf_node_producer_loan_video (p, 0, &fill[k]) < 0)
      break;
    memset (fill[k].data, 0x80 + k, fill[k].size);
    filled++;
  }
  for (k = 0; k < filled; k++)
    pf_node_producer_discard (p, &fill[k]);
  g_free (fill);
  if ((res = pf_node_producer_wait_clients (p, (guint) opt_clients,
              opt_wait_s * 1000)) < 0) {
    g_printerr ("shm-scale producer %s: %d consumers did not come: %s\n",
        opt_socket, opt_clients, pf_node_strerror (res));
    pf_node_producer_free (p);
    return 1;
  }
  ready = g_strconcat (opt_socket, ".ready", NULL);
  g_file_set_contents (ready, "", 0, NULL);
  g_free (ready);
  if (!wait_go (opt_go, &t0)) {
    pf_node_producer_free (p);
    return 1;
  }
  t0 += (guint64) opt_phase_ns;
  cpu0 = bench_cpu_ns ();
  cs0 = bw_total ();
  for (k = 0; k < opt_frames; k++) {
    pf_node_loan loan;
    guint64 stamp[3];

    if ((res = pf_node_producer_loan_video (p, 5000, &loan)) < 0) {
      g_printerr ("shm-scale producer %s: loan: %s\n", opt_socket,
          pf_node_strerror (res));
      break;
    }
    bench_sleep_until (t0 + k * period);
    stamp[0] = (guint64) k;
    stamp[1] = bench_now_ns ();
    stamp[2] = t0 + k * period;
    memcpy (loan.data, stamp, sizeof (stamp));
    if ((res = pf_node_producer_publish (p, &loan)) < 0) {
      g_printerr ("shm-scale producer %s: publish: %s\n", opt_socket,
          pf_node_strerror (res));
      break;
    }
    published++;
  }
  /* the releases keep coming: counted until the orchestrator ends the
   * cell (after every consumer of it exited) */
  while (!stop_requested)
    sigsuspend (&old);
  cs1 = bw_total ();
  text = g_strdup_printf ("%d %" G_GUINT64_FORMAT " %llu %llu\n", published,
      bench_cpu_ns () - cpu0, cs1.vol - cs0.vol, cs1.invol - cs0.invol);
  write_report (opt_out, text);
  g_free (text);
  pf_node_producer_free (p);
  /* what was not published shows as lost in the consumers' reports */
  return 0;
}

/* ------------------------------------------------------------------------ */
/* consumer process */

/* Writes "RECEIVED LOST LATE CPU_NS VOL INVOL OUT_OF_ORDER" then one
 * latency (ns) per line to @opt_out. */
static int
scale_consume (void)
{
  pf_node_consumer *c = NULL;
  guint64 period = 1000000000u / (guint) MAX (opt_rate, 1);
  guint64 cpu_first = 0, cpu_last = 0, *lat = g_new0 (guint64, opt_frames);
  gint64 last_seq = -1;
  guint received = 0, late = 0, disorder = 0, n_lat = 0, i;
  bw_count cs_first = { 0, 0 }, cs_last = { 0, 0 };
  GString *text;
  gint res;

  res = pf_node_consumer_new_with (opt_socket, opt_wait_s * 1000,
      PF_DELIVERY_EVERY_FRAME, &c);
  if (res < 0) {
    g_printerr ("shm-scale consumer %s: %s\n", opt_socket,
        pf_node_strerror (res));
    g_free (lat);
    return 1;
  }
  for (;;) {
    pf_node_frame *f = NULL;
    guint64 stamp[3], t;

    /* the first frame waits for every process of the cell to connect */
    res = pf_node_consumer_next (c, received ? 3000 : opt_wait_s * 1500, &f);
    if (res != 1)
      break;
    t = bench_now_ns ();
    if (f->n_chunks != 1 || f->size < sizeof (stamp)) {
      pf_node_frame_release (f);
      continue;
    }
    memcpy (stamp, f->data, sizeof (stamp));
    pf_node_frame_release (f);
    if (stamp[0] >= (guint64) opt_frames)
      continue;
    if ((gint64) stamp[0] <= last_seq)
      disorder++;
    last_seq = (gint64) stamp[0];
    if (received == 0) {
      cpu_first = bench_cpu_ns ();
      cs_first = bw_total ();
    }
    received++;
    cpu_last = bench_cpu_ns ();
    cs_last = bw_total ();
    if (t > stamp[2] + period)
      late++;
    if (stamp[0] >= SCALE_WARMUP)
      lat[n_lat++] = t > stamp[1] ? t - stamp[1] : 0;
    if (stamp[0] + 1 == (guint64) opt_frames)
      break;
  }
  pf_node_consumer_free (c);
  text = g_string_new (NULL);
  g_string_append_printf (text, "%u %u %u %" G_GUINT64_FORMAT " %llu %llu "
      "%u\n", received, (guint) opt_frames - MIN (received,
          (guint) opt_frames), late, cpu_last - cpu_first,
      cs_last.vol - cs_first.vol, cs_last.invol - cs_first.invol, disorder);
  for (i = 0; i < n_lat; i++)
    g_string_append_printf (text, "%" G_GUINT64_FORMAT "\n", lat[i]);
  write_report (opt_out, text->str);
  g_string_free (text, TRUE);
  g_free (lat);
  /* frames missing are in the report (lost), not in the exit status */
  return 0;
}

/* ------------------------------------------------------------------------ */
/* orchestrator (this process) */

/* the children of the cell under way and its folder: what the signal
 * handler and the failure paths clean up */
static GPid children[MAX_CHILDREN];
static gint n_children;
static gchar *cell_dir;

static void
remove_dir (const gchar * dir)
{
  GDir *d;
  const gchar *n;

  if (dir == NULL || (d = g_dir_open (dir, 0, NULL)) == NULL)
    return;
  while ((n = g_dir_read_name (d))) {
    gchar *path = g_build_filename (dir, n, NULL);

    g_unlink (path);
    g_free (path);
  }
  g_dir_close (d);
  g_rmdir (dir);
}

/* SIGKILLs and reaps whatever is left of the cell, removes its folder */
static void
kill_children (void)
{
  gint i;

  for (i = 0; i < n_children; i++)
    if (children[i] > 0) {
      kill (children[i], SIGKILL);
      waitpid (children[i], NULL, 0);
      children[i] = 0;
    }
  n_children = 0;
  remove_dir (cell_dir);
  g_free (cell_dir);
  cell_dir = NULL;
}

static void
on_signal (int sig)
{
  /* not async-signal-safe throughout (g_dir_*): this process only waits
   * when a signal comes, and is ending */
  kill_children ();
  signal (sig, SIG_DFL);
  raise (sig);
}

static GPid
spawn (gchar ** argv)
{
  GError *err = NULL;
  GPid pid;

  if (n_children == MAX_CHILDREN)
    return 0;
  if (!g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
          G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pid, &err)) {
    g_printerr ("shm-scale: spawn: %s\n", err->message);
    g_error_free (err);
    return 0;
  }
  children[n_children++] = pid;
  return pid;
}

/* TRUE when @pid has exited (then reaped: kill_children() leaves it) */
static gboolean
exited (GPid pid)
{
  gint i;

  if (pid <= 0 || waitpid (pid, NULL, WNOHANG) != pid)
    return FALSE;
  for (i = 0; i < n_children; i++)
    if (children[i] == pid)
      children[i] = 0;
  return TRUE;
}

/* Waits for @pid until @deadline (monotonic us); kills it past it.
 * Returns its exit status (-1: killed or not exited normally). */
static gint
reap (GPid pid, gint64 deadline)
{
  gint status, i;

  for (;;) {
    pid_t r = waitpid (pid, &status, WNOHANG);

    if (r == pid)
      break;
    if (r < 0 && errno != EINTR)
      return -1;
    if (g_get_monotonic_time () > deadline) {
      kill (pid, SIGKILL);
      waitpid (pid, &status, 0);
      status = -1;
      break;
    }
    g_usleep (2000);
  }
  for (i = 0; i < n_children; i++)
    if (children[i] == pid)
      children[i] = 0;
  return status >= 0 && WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* busy and total jiffies of the whole machine */
static void
proc_stat (guint64 * busy, guint64 * total)
{
  gchar *text = NULL;
  unsigned long long v[10] = { 0, };

  *busy = *total = 0;
  if (!g_file_get_contents ("/proc/stat", &text, NULL, NULL))
    return;
  if (sscanf (text, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
          &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
    gint i;

    for (i = 0; i < 8; i++)
      *total += v[i];
    /* idle and iowait are not busy */
    *busy = *total - v[3] - v[4];
  }
  g_free (text);
}

typedef struct
{
  gint producers, consumers;
  guint64 hops, lost, late, disorder, vol;
  double cpu_hop_us, prod_us_f, cons_us_f, p50_us, p99_us, wake_hop;
  double cpu_pct, busy_pct;
  gboolean ok;                  /* every process started and reported */
} Cell;

static int
cmp_u64 (const void *a, const void *b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

static gchar *self_path;

/* One cell: P producers, C consumers each. */
static Cell
run_cell (gint P, gint C, gint w, gint h)
{
  Cell cell = { P, C, 0, };
  guint64 period = 1000000000u / (guint) MAX (opt_rate, 1);
  guint64 busy0, tot0, busy1, tot1, t0, prod_cpu = 0, cons_cpu = 0;
  guint64 prod_frames = 0;
  GArray *lat = g_array_new (FALSE, FALSE, sizeof (guint64));
  gchar *go, *go_tmp, *text, *ws = g_strdup_printf ("%d", w);
  gchar *hs = g_strdup_printf ("%d", h), *nf = g_strdup_printf ("%d",
      opt_frames);
  gchar *rs = g_strdup_printf ("%d", opt_rate), *cs = g_strdup_printf ("%d",
      C), *ss = g_strdup_printf ("%d", opt_slots);
  gchar *wt = g_strdup_printf ("%d", opt_wait_s);
  GPid *prod = g_new0 (GPid, P), *cons = g_new0 (GPid, P * C);
  gint64 deadline;
  gboolean failed = FALSE;
  gint i, j;

  cell_dir = g_dir_make_tmp ("shm-scale-XXXXXX", NULL);
  go = g_build_filename (cell_dir, "go", NULL);
  go_tmp = g_build_filename (cell_dir, "go.tmp", NULL);
  for (i = 0; i < P && !failed; i++) {
    gchar *sock = g_strdup_printf ("%s/p%d", cell_dir, i);
    gchar *out = g_strdup_printf ("%s/p%d.res", cell_dir, i);
    gchar *phase = g_strdup_printf ("%" G_GUINT64_FORMAT, i * period / P);
    gchar *argv[] = { self_path, (gchar *) "--role", (gchar *) "produce",
      (gchar *) "--socket", sock, (gchar *) "--go", go, (gchar *) "--out",
      out, (gchar *) "--clients", cs, (gchar *) "--width", ws,
      (gchar *) "--height", hs, (gchar *) "--frames", nf, (gchar *) "--rate",
      rs, (gchar *) "--slots", ss, (gchar *) "--phase-ns", phase,
      (gchar *) "--wait-s", wt, NULL
    };

    failed = (prod[i] = spawn (argv)) == 0;
    for (j = 0; j < C && !failed; j++) {
      gchar *cout = g_strdup_printf ("%s/c%d.%d", cell_dir, i, j);
      gchar *cargv[] = { self_path, (gchar *) "--role", (gchar *) "consume",
        (gchar *) "--socket", sock, (gchar *) "--out", cout,
        (gchar *) "--frames", nf, (gchar *) "--rate", rs,
        (gchar *) "--wait-s", wt, NULL
      };

      failed = (cons[i * C + j] = spawn (cargv)) == 0;
      g_free (cout);
    }
    g_free (sock);
    g_free (out);
    g_free (phase);
  }
  /* every producer has its consumers: then the clocks start */
  deadline = g_get_monotonic_time () + 2 * opt_wait_s * G_TIME_SPAN_SECOND;
  for (i = 0; i < P && !failed; i++) {
    gchar *ready = g_strdup_printf ("%s/p%d.ready", cell_dir, i);

    while (!g_file_test (ready, G_FILE_TEST_EXISTS) && !failed) {
      /* a producer or a consumer that is gone will not make it ready */
      for (j = 0; j < P * C + P && !failed; j++)
        failed = exited (j < P ? prod[j] : cons[j - P]);
      if (failed || g_get_monotonic_time () > deadline) {
        g_printerr ("shm-scale: %dx%d: a process exited before producer %d "
            "had its %d consumers, or it waited too long\n", P, C, i, C);
        failed = TRUE;
      }
      g_usleep (2000);
    }
    g_free (ready);
  }
  proc_stat (&busy0, &tot0);
  t0 = bench_now_ns () + 200 * 1000000u;
  text = g_strdup_printf ("%" G_GUINT64_FORMAT "\n", t0);
  if (!failed && (!g_file_set_contents (go_tmp, text, -1, NULL)
          || g_rename (go_tmp, go) < 0))
    failed = TRUE;
  g_free (text);

  /* the consumers end at their last frame (or 3 s without one) */
  deadline =
      g_get_monotonic_time () +
      (gint64) opt_frames *G_TIME_SPAN_SECOND / MAX (opt_rate,
      1) + (2 * opt_wait_s + 10) * G_TIME_SPAN_SECOND;
  for (i = 0; i < P * C && !failed; i++)
    if (reap (cons[i], deadline) != 0)
      failed = TRUE;
  proc_stat (&busy1, &tot1);
  for (i = 0; i < P && !failed; i++) {
    kill (prod[i], SIGUSR1);
    if (reap (prod[i], g_get_monotonic_time () + 5 * G_TIME_SPAN_SECOND) != 0)
      failed = TRUE;
  }

  /* the reports */
  for (i = 0; i < P && !failed; i++) {
    gchar *path = g_strdup_printf ("%s/p%d.res", cell_dir, i);
    gchar *t = NULL;
    guint64 cpu;
    unsigned long long vol, invol;
    gint published;

    if (!g_file_get_contents (path, &t, NULL, NULL) || sscanf (t,
            "%d %" G_GUINT64_FORMAT " %llu %llu", &published, &cpu, &vol,
            &invol) != 4)
      failed = TRUE;
    else {
      prod_cpu += cpu;
      prod_frames += (guint) published;
      cell.vol += vol;
    }
    g_free (t);
    g_free (path);
  }
  for (i = 0; i < P * C && !failed; i++) {
    gchar *path = g_strdup_printf ("%s/c%d.%d", cell_dir, i / C, i % C);
    gchar *t = NULL, **lines = NULL;
    guint recv, lost, late, dis;
    guint64 cpu;
    unsigned long long vol, invol;

    if (!g_file_get_contents (path, &t, NULL, NULL)) {
      failed = TRUE;
    } else {
      lines = g_strsplit (t, "\n", -1);
      if (sscanf (lines[0], "%u %u %u %" G_GUINT64_FORMAT " %llu %llu %u",
              &recv, &lost, &late, &cpu, &vol, &invol, &dis) != 7)
        failed = TRUE;
      else {
        cell.hops += recv;
        cell.lost += lost;
        cell.late += late;
        cell.disorder += dis;
        cell.vol += vol;
        cons_cpu += cpu;
        for (j = 1; lines[j] && lines[j][0]; j++) {
          guint64 v = g_ascii_strtoull (lines[j], NULL, 10);

          g_array_append_val (lat, v);
        }
      }
    }
    g_strfreev (lines);
    g_free (t);
    g_free (path);
  }
  /* whatever happened, nothing of the cell is left */
  kill_children ();

  cell.ok = !failed && cell.hops > 0;
  if (cell.ok) {
    guint64 *v = (guint64 *) lat->data;
    double secs = (double) opt_frames / MAX (opt_rate, 1);

    qsort (v, lat->len, sizeof (guint64), cmp_u64);
    if (lat->len > 0) {
      cell.p50_us = v[lat->len / 2] / 1e3;
      cell.p99_us = v[MIN (lat->len - 1,
              (guint) ceil (lat->len * 0.99) - 1)] / 1e3;
    }
    cell.cpu_hop_us = (prod_cpu + cons_cpu) / 1e3 / cell.hops;
    cell.prod_us_f = prod_frames ? prod_cpu / 1e3 / prod_frames : 0;
    cell.cons_us_f = cons_cpu / 1e3 / cell.hops;
    cell.wake_hop = (double) cell.vol / cell.hops;
    cell.cpu_pct = (prod_cpu + cons_cpu) / 1e9 / secs /
        MAX (1, (gint) g_get_num_processors ()) * 100;
    cell.busy_pct = tot1 > tot0 ? 100.0 * (busy1 - busy0) / (tot1 - tot0) : 0;
    /* a producer that could not publish them all lost them for everyone */
    cell.lost += (guint64) P *opt_frames * C - MIN ((guint64) P * opt_frames *
        C, cell.hops + cell.lost);
  } else {
    cell.lost = (guint64) P *C * opt_frames;
  }
  g_array_free (lat, TRUE);
  g_free (prod);
  g_free (cons);
  g_free (go);
  g_free (go_tmp);
  g_free (ws);
  g_free (hs);
  g_free (nf);
  g_free (rs);
  g_free (cs);
  g_free (ss);
  g_free (wt);
  return cell;
}

static GArray *
parse_list (const gchar * s)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (gint));
  gchar **parts = g_strsplit (s, ",", -1);
  gint i;

  for (i = 0; parts[i]; i++) {
    gint v = atoi (parts[i]);

    if (v > 0)
      g_array_append_val (a, v);
  }
  g_strfreev (parts);
  return a;
}

static void
print_cell (const Cell * c, double base, FILE * csv, gint w, gint h)
{
  double ratio = base > 0 ? c->cpu_hop_us / base : 0;

  if (!c->ok) {
    printf ("%3d x %-3d %7d  (failed: a process did not start, report or "
        "finish; see above)\n", c->producers, c->consumers,
        c->producers * c->consumers * opt_rate);
  } else {
    printf ("%3d x %-3d %7d %9.1f %6.2f %9.1f %9.1f %8.1f %8.1f %6.2f%% "
        "%5" G_GUINT64_FORMAT " %8.2f %6.1f %6.1f\n", c->producers,
        c->consumers, c->producers * c->consumers * opt_rate, c->cpu_hop_us,
        ratio, c->prod_us_f, c->cons_us_f, c->p50_us, c->p99_us,
        c->hops ? 100.0 * c->late / c->hops : 0, c->lost, c->wake_hop,
        c->cpu_pct, c->busy_pct);
  }
  fflush (stdout);
  if (csv)
    fprintf (csv, "%d,%d,%d,%d,%d,%d,%d,%" G_GUINT64_FORMAT ",%.2f,%.3f,%.2f,"
        "%.2f,%.2f,%.2f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%.3f,"
        "%.2f,%.2f\n", c->producers, c->consumers, opt_rate, w, h,
        opt_frames, c->ok, c->hops, c->cpu_hop_us, ratio, c->prod_us_f,
        c->cons_us_f, c->p50_us, c->p99_us, c->late, c->lost, c->wake_hop,
        c->cpu_pct, c->busy_pct);
}

int
main (int argc, char **argv)
{
  GOptionContext *ctx = g_option_context_new (NULL);
  GError *err = NULL;
  GArray *ps, *cs;
  Cell *cells, again;
  FILE *csv = NULL;
  double base = 0, la[3] = { 0, };
  gint w = 0, h = 0, bad = 0;
  guint i, j, n = 0, stop = G_MAXUINT;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  if (opt_role) {
    /* a child of the run: goes with it */
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () == 1)
      return 1;
    if (strcmp (opt_role, "produce") == 0 && opt_socket && opt_go && opt_out)
      return scale_produce ();
    if (strcmp (opt_role, "consume") == 0 && opt_socket && opt_out)
      return scale_consume ();
    g_printerr ("shm-scale: bad role\n");
    return 2;
  }
  if (opt_smoke) {
    opt_producers = (gchar *) "1,2";
    opt_consumers = (gchar *) "1,2";
    opt_frames = 20;
    opt_rate = 100;
    opt_wait_s = 10;
    opt_size = (gchar *) "320x240";
  }
  if (sscanf (opt_size, "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0
      || opt_frames <= SCALE_WARMUP || opt_rate <= 0) {
    g_printerr ("shm-scale: bad --size, --frames or --rate\n");
    return 2;
  }
  ps = parse_list (opt_producers);
  cs = parse_list (opt_consumers);
  if (ps->len == 0 || cs->len == 0) {
    g_printerr ("shm-scale: empty --producers or --consumers\n");
    return 2;
  }
  self_path = g_file_read_link ("/proc/self/exe", NULL);
  signal (SIGINT, on_signal);
  signal (SIGTERM, on_signal);
  if (opt_csv_file && (csv = fopen (opt_csv_file, "we")) == NULL) {
    g_printerr ("%s: %s\n", opt_csv_file, g_strerror (errno));
    return 2;
  }
  if (csv)
    fprintf (csv, "producers,consumers,rate,width,height,frames,ok,hops,"
        "cpu_us_per_hop,ratio,prod_us_per_frame,cons_us_per_frame,p50_us,"
        "p99_us,late,lost,wake_per_hop,cpu_pct,busy_pct\n");
  if (getloadavg (la, 3) == 3)
    printf ("load average at start: %.2f %.2f %.2f; %d CPUs\n", la[0], la[1],
        la[2], (gint) g_get_num_processors ());
  printf ("node API (pf_node_producer -> pf_node_consumer, every-frame), "
      "%dx%d RGBA, %d slots per producer filled once, each producer paced "
      "at %d/s (staggered), %d frames per producer per cell\n", w, h,
      opt_slots, opt_rate, opt_frames);
  printf ("hop = one frame from one producer to one consumer; cpu/hop: "
      "user+sys of every process of the cell per hop; ratio: to the 1x1 "
      "cell; late: arrived more than one period (%.1f ms) after it was "
      "due; cpu%%: the cell's processes, busy%%: the whole machine "
      "(/proc/stat), both of all CPUs\n", 1000.0 / opt_rate);
  printf ("%-9s %7s %9s %6s %9s %9s %8s %8s %7s %5s %8s %6s %6s\n", "P x C",
      "hops/s", "cpu us/hop", "ratio", "prod us/f", "cons us/f", "p50 us",
      "p99 us", "late", "lost", "wake/hop", "cpu%", "busy%");

  /* the 1x1 cell first: the baseline of the ratios */
  cells = g_new0 (Cell, ps->len * cs->len + 1);
  cells[n] = run_cell (1, 1, w, h);
  base = cells[n].ok ? cells[n].cpu_hop_us : 0;
  print_cell (&cells[n++], base, csv, w, h);
  for (i = 0; i < ps->len; i++)
    for (j = 0; j < cs->len; j++) {
      gint P = g_array_index (ps, gint, i), C = g_array_index (cs, gint, j);

      if (P == 1 && C == 1)
        continue;
      if (P + P * C > MAX_CHILDREN) {
        printf ("%3d x %-3d  (more than %d processes: skipped)\n", P, C,
            MAX_CHILDREN);
        continue;
      }
      cells[n] = run_cell (P, C, w, h);
      print_cell (&cells[n++], base, csv, w, h);
    }
  /* and 1x1 again: how far the machine drifted over the run */
  again = run_cell (1, 1, w, h);
  printf ("1x1 again at the end: %.1f us/hop (ratio %.2f to the first)\n",
      again.cpu_hop_us, base > 0 ? again.cpu_hop_us / base : 0);

  for (i = 0; i < n; i++) {
    const Cell *c = &cells[i];

    /* what --smoke checks: every frame counted by every consumer */
    if (!c->ok || c->lost > 0 || c->disorder > 0 || c->hops !=
        (guint64) c->producers * c->consumers * opt_frames)
      bad++;
    /* the 1x1 cell is the baseline: a late frame there is the machine's */
    if (i > 0 && stop == G_MAXUINT && (!c->ok || c->lost > 0
            || c->cpu_hop_us > 1.5 * base || c->late * 100 > c->hops))
      stop = i;
  }
  if (cells[0].ok && cells[0].late * 100 > cells[0].hops)
    printf ("the 1x1 cell itself had %.1f%% of its frames late (the machine "
        "%.1f%% busy): the neighbours' load, not the cell's\n",
        100.0 * cells[0].late / cells[0].hops, cells[0].busy_pct);
  if (stop == G_MAXUINT) {
    const Cell *c = &cells[n - 1];

    printf ("scaling: every cell within 1.5x the 1x1 cost per hop, under "
        "1%% late, nothing lost, up to %d x %d (%d hops/s: the cell's "
        "processes %.1f%% of the CPUs, the machine %.1f%% busy)\n",
        c->producers, c->consumers, c->producers * c->consumers * opt_rate,
        c->cpu_pct, c->busy_pct);
  } else if (!cells[stop].ok) {
    printf ("scaling: the %d x %d cell failed (a process did not start, "
        "report or finish: see above)\n", cells[stop].producers,
        cells[stop].consumers);
  } else {
    const Cell *c = &cells[stop];

    printf ("scaling stops at %d x %d (%d hops/s): %s%s%s; there the cell's "
        "processes used %.1f%% of the CPUs and the machine was %.1f%% busy "
        "(%s)\n", c->producers, c->consumers,
        c->producers * c->consumers * opt_rate, c->lost > 0 ? "frames lost "
        : "", c->cpu_hop_us > 1.5 * base ? "cost per hop above 1.5x the 1x1 "
        : "", c->late * 100 > c->hops ? "over 1% of the frames late" : "",
        c->cpu_pct, c->busy_pct, c->cpu_pct > 80 ?
        "the cell saturates the CPUs itself" : c->busy_pct > 85 ?
        "the CPUs are saturated, mostly by other processes than the cell's" :
        "the CPUs are not saturated: see the wake-ups per hop");
  }
  if (csv)
    fclose (csv);
  g_array_free (ps, TRUE);
  g_array_free (cs, TRUE);
  g_free (cells);
  g_free (self_path);
  /* every child was reaped: nothing is left to wait for */
  if (waitpid (-1, NULL, WNOHANG) != -1 || errno != ECHILD) {
    g_printerr ("shm-scale: a child was left behind\n");
    bad++;
  }
  if (opt_smoke)
    printf ("smoke: %s (%u cells; every consumer counts its %d frames, "
        "none lost, in order; every child reaped, folders removed)\n",
        bad ? "FAILED" : "ok", n, opt_frames);
  return opt_smoke && bad ? 1 : 0;
}
