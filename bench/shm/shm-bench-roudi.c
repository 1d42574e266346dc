/* shm-bench's iceoryx rows (issue 35): RouDi's life and one run of
 * shm-bench-iox's publisher -> subscriber.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * iox_start() writes a RouDi config into a temporary folder, sized for the
 * frames of the bench (a mempool of 8 chunks per frame size, 3840x2160 RGBA
 * the largest, and small pools for iceoryx's own use), starts iox-roudi
 * with it (monitoring off, PR_SET_PDEATHSIG: it goes if shm-bench dies)
 * and waits until it says it is ready. Which /dev/shm entries appeared
 * then are remembered: iox_stop() (also called at exit and on SIGINT,
 * SIGTERM, SIGABRT) kills the publisher and subscriber of a run under way
 * (RouDi would wait for them), stops RouDi with SIGTERM (SIGKILL after
 * 5 s) and removes those entries, the runtimes' and RouDi's files in /tmp
 * and the run's folder if they were left. A SIGKILL of shm-bench cannot be
 * caught: RouDi then gets SIGTERM (PR_SET_PDEATHSIG) and cleans /dev/shm
 * itself; iox_start() removes runtime files of dead pids.
 * iox_stop() from a signal handler is not async-signal-safe (GLib calls):
 * a bench's best effort, on the way out. Without shm-bench-iox beside shm-bench (built only
 * when libiceoryx-binding-c-dev is installed) or without iox-roudi (the
 * iceoryx package), iox_start() says so and the rows are skipped.
 *
 * iox_run(): the subscriber and the publisher are two processes of
 * shm-bench-iox; latencies, CPU and context switches come back through
 * files (see shm-bench-iox.c). RouDi's CPU and wake-ups over the run are
 * read from /proc. Called from shm-bench's main thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "shm-bench.h"

static GPid roudi_pid;
static gchar *roudi_dir;
static gchar *iox_helper;
/* /dev/shm entries RouDi made */
static GPtrArray *roudi_shm;
/* the publisher and subscriber of the run under way (0: none), and the
 * folder of their result files */
static volatile GPid cur_pub, cur_sub;
static gchar *cur_dir;

/* removes @dir and the files "pub" and "sub" in it */
static void
remove_run_dir (const gchar * dir)
{
  gchar *pub = g_build_filename (dir, "pub", NULL);
  gchar *sub = g_build_filename (dir, "sub", NULL);

  g_unlink (pub);
  g_unlink (sub);
  g_rmdir (dir);
  g_free (pub);
  g_free (sub);
}

/* runtime files of an earlier run's sides that were killed (SIGKILL of
 * shm-bench leaves them: nothing can run then); only for pids gone */
static void
unlink_stale_runtime_files (void)
{
  GDir *d = g_dir_open ("/tmp", 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d))) {
    gint64 pid;

    if (!g_str_has_prefix (n, "pfbench-pub-")
        && !g_str_has_prefix (n, "pfbench-sub-"))
      continue;
    pid = g_ascii_strtoll (n + 12, NULL, 10);
    if (pid > 0 && kill ((pid_t) pid, 0) < 0 && errno == ESRCH) {
      gchar *path = g_build_filename ("/tmp", n, NULL);

      g_unlink (path);
      g_free (path);
    }
  }
  if (d)
    g_dir_close (d);
}

/* the runtimes' socket and lock of @pid's side, left when it was killed */
static void
unlink_runtime_files (const gchar * side, GPid pid)
{
  gchar *path = g_strdup_printf ("/tmp/pfbench-%s-%d", side, (gint) pid);
  gchar *lock = g_strconcat (path, ".lock", NULL);

  g_unlink (path);
  g_unlink (lock);
  g_free (path);
  g_free (lock);
}

static const gint frame_sizes[][2] = { {640, 480}, {1920, 1080}, {3840,
    2160}
};

static void
child_dies_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static GHashTable *
list_dev_shm (void)
{
  GHashTable *names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  GDir *d = g_dir_open ("/dev/shm", 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d)))
    g_hash_table_add (names, g_strdup (n));
  if (d)
    g_dir_close (d);
  return names;
}

void
iox_stop (void)
{
  guint i;

  /* a run under way (iox_stop() from a signal): its sides first, or RouDi
   * waits for them before it stops */
  if (cur_pub > 0 || cur_sub > 0) {
    GPid pub = cur_pub, sub = cur_sub;

    cur_pub = cur_sub = 0;
    if (pub > 0) {
      kill (pub, SIGKILL);
      waitpid (pub, NULL, 0);
      unlink_runtime_files ("pub", pub);
    }
    if (sub > 0) {
      kill (sub, SIGKILL);
      waitpid (sub, NULL, 0);
      unlink_runtime_files ("sub", sub);
    }
  }
  if (cur_dir) {
    remove_run_dir (cur_dir);
    cur_dir = NULL;
  }
  if (roudi_pid > 0) {
    kill (roudi_pid, SIGTERM);
    for (i = 0; i < 500 && waitpid (roudi_pid, NULL, WNOHANG) == 0; i++)
      g_usleep (10000);
    if (i == 500) {
      kill (roudi_pid, SIGKILL);
      waitpid (roudi_pid, NULL, 0);
    }
    roudi_pid = 0;
  }
  for (i = 0; roudi_shm && i < roudi_shm->len; i++) {
    gchar *path = g_build_filename ("/dev/shm",
        (const gchar *) g_ptr_array_index (roudi_shm, i), NULL);

    g_unlink (path);
    g_free (path);
  }
  if (roudi_shm) {
    g_ptr_array_free (roudi_shm, TRUE);
    roudi_shm = NULL;
    /* RouDi's socket and lock, left behind when it was killed (no other
     * RouDi runs: iox_start() checked /dev/shm/iceoryx_mgmt) */
    g_unlink ("/tmp/roudi");
    g_unlink ("/tmp/roudi.lock");
    g_unlink ("/tmp/iox-unique-roudi.lock");
  }
  if (roudi_dir) {
    gchar *f = g_build_filename (roudi_dir, "roudi.toml", NULL);
    gchar *l = g_build_filename (roudi_dir, "roudi.log", NULL);

    g_unlink (f);
    g_unlink (l);
    g_rmdir (roudi_dir);
    g_free (f);
    g_free (l);
    g_free (roudi_dir);
    roudi_dir = NULL;
  }
}

static void
on_fatal_signal (int sig)
{
  iox_stop ();
  signal (sig, SIG_DFL);
  raise (sig);
}

gboolean
iox_start (const gchar * self, gchar ** reason)
{
  gchar *bindir = g_path_get_dirname (self);
  gchar *roudi = g_find_program_in_path ("iox-roudi");
  gchar *toml = NULL, *log = NULL, *text = NULL, *cmd;
  GString *config;
  GHashTable *before;
  GError *err = NULL;
  gchar *argv[] = { (gchar *) "/bin/sh", (gchar *) "-c", NULL, NULL };
  guint i;

  *reason = NULL;
  iox_helper = g_build_filename (bindir, "shm-bench-iox", NULL);
  g_free (bindir);
  if (!g_file_test (iox_helper, G_FILE_TEST_IS_EXECUTABLE)) {
    *reason = g_strdup ("shm-bench-iox not built: libiceoryx-binding-c-dev "
        "was not installed when the build was configured (apt-get install "
        "iceoryx libiceoryx-binding-c-dev, then meson setup --reconfigure)");
    g_free (roudi);
    return FALSE;
  }
  if (roudi == NULL) {
    *reason = g_strdup ("iox-roudi not found (Debian package iceoryx)");
    return FALSE;
  }
  if (g_file_test ("/dev/shm/iceoryx_mgmt", G_FILE_TEST_EXISTS)) {
    *reason = g_strdup ("/dev/shm/iceoryx_mgmt exists: another RouDi runs "
        "on this machine (or a killed one left it)");
    g_free (roudi);
    return FALSE;
  }

  /* chunk = iceoryx's chunk header + padding to the 64-byte payload
   * alignment + the frame: 4 KiB over the frame is room enough */
  config = g_string_new ("# shm-bench's RouDi config (bench/shm)\n"
      "[general]\nversion = 1\n\n[[segment]]\n\n"
      "[[segment.mempool]]\nsize = 128\ncount = 1000\n\n"
      "[[segment.mempool]]\nsize = 1024\ncount = 200\n\n"
      "[[segment.mempool]]\nsize = 16384\ncount = 100\n");
  for (i = 0; i < G_N_ELEMENTS (frame_sizes); i++) {
    guint64 sz = (guint64) frame_sizes[i][0] * frame_sizes[i][1] * 4 + 4096;

    g_string_append_printf (config, "\n[[segment.mempool]]\nsize = %"
        G_GUINT64_FORMAT "\ncount = 8\n", (sz + 4095) / 4096 * 4096);
  }
  roudi_dir = g_dir_make_tmp ("shm-bench-roudi-XXXXXX", NULL);
  toml = g_build_filename (roudi_dir, "roudi.toml", NULL);
  log = g_build_filename (roudi_dir, "roudi.log", NULL);
  g_file_set_contents (toml, config->str, -1, NULL);
  g_string_free (config, TRUE);

  unlink_stale_runtime_files ();
  signal (SIGINT, on_fatal_signal);
  signal (SIGTERM, on_fatal_signal);
  signal (SIGABRT, on_fatal_signal);
  atexit (iox_stop);
  before = list_dev_shm ();
  cmd = g_strdup_printf ("exec '%s' -c '%s' -m off -l warning >'%s' 2>&1",
      roudi, toml, log);
  argv[2] = cmd;
  if (!g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
          child_dies_with_parent, NULL, &roudi_pid, &err)) {
    *reason = g_strdup_printf ("cannot start iox-roudi: %s", err->message);
    g_clear_error (&err);
    roudi_pid = 0;
  }
  g_free (cmd);
  for (i = 0; roudi_pid && i < 1000; i++) {
    g_free (text);
    text = NULL;
    g_file_get_contents (log, &text, NULL, NULL);
    if (text && strstr (text, "RouDi is ready for clients"))
      break;
    if (waitpid (roudi_pid, NULL, WNOHANG) == roudi_pid) {
      roudi_pid = 0;
      *reason = g_strdup_printf ("iox-roudi exited: %s", text ? g_strstrip
          (text) : "(no output)");
    } else {
      g_usleep (10000);
    }
  }
  if (roudi_pid && i == 1000)
    *reason = g_strdup ("iox-roudi not ready after 10 s");
  /* whatever it made, even if it failed to come up */
  {
    GHashTable *after = list_dev_shm ();
    GHashTableIter it;
    gpointer name;

    roudi_shm = g_ptr_array_new_with_free_func (g_free);
    g_hash_table_iter_init (&it, after);
    while (g_hash_table_iter_next (&it, &name, NULL))
      if (!g_hash_table_contains (before, name))
        g_ptr_array_add (roudi_shm, g_strdup (name));
    g_hash_table_unref (after);
  }
  g_hash_table_unref (before);
  g_free (text);
  g_free (toml);
  g_free (log);
  g_free (roudi);
  if (*reason) {
    iox_stop ();
    return FALSE;
  }
  return TRUE;
}

/* RouDi's CPU (ns, /proc/PID/task/TID/schedstat: time on a CPU) and
 * voluntary switches, all its threads */
static void
roudi_usage (guint64 * cpu, guint64 * vol)
{
  bw_snap s;
  gint i;

  *cpu = *vol = 0;
  bw_snapshot (roudi_pid, &s);
  for (i = 0; i < s.n; i++) {
    gchar *path = g_strdup_printf ("/proc/%d/task/%d/schedstat", roudi_pid,
        s.t[i].tid), *text = NULL;

    if (g_file_get_contents (path, &text, NULL, NULL))
      *cpu += g_ascii_strtoull (text, NULL, 10);
    g_free (text);
    g_free (path);
    *vol += s.t[i].c.vol;
  }
}

static gint
cmp_ns (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

/* waits up to @ms for @pid, then kills it; always reaps it */
static void
reap (GPid pid, gint ms)
{
  gint i;

  for (i = 0; i < ms; i++) {
    if (waitpid (pid, NULL, WNOHANG) == pid)
      return;
    g_usleep (1000);
  }
  kill (pid, SIGKILL);
  waitpid (pid, NULL, 0);
}

Result
iox_run (gint w, gint h, gboolean paced, gint fps, gint frames,
    GArray * samples)
{
  Result res = { 0, };
  gchar *dir, *pub_path, *sub_path, *text = NULL, **lines = NULL;
  gchar *ws = g_strdup_printf ("%d", w), *hs = g_strdup_printf ("%d", h);
  gchar *nf = g_strdup_printf ("%d", frames);
  gchar *rate = g_strdup_printf ("%d", fps);
  GPid pub = 0, sub = 0;
  GError *err = NULL;
  guint64 rcpu0, rvol0, rcpu1, rvol1, t_first = 0, t_last = 0, cpu = 0;
  unsigned long long vol = 0, invol = 0;
  guint n = 0, i;

  res.cpu_prod_us = res.cpu_cons_us = -1;
  res.wake_prod = res.csw_prod = res.wake_cons = res.csw_cons = -1;
  res.cpu_roudi_us = res.wake_roudi = -1;
  if (roudi_pid <= 0)
    return res;
  dir = g_dir_make_tmp ("shm-bench-iox-XXXXXX", NULL);
  cur_dir = dir;
  pub_path = g_build_filename (dir, "pub", NULL);
  sub_path = g_build_filename (dir, "sub", NULL);
  {
    gchar *pargv[] = { iox_helper, (gchar *) "pub", ws, hs, nf, rate,
      (gchar *) (paced ? "1" : "0"), pub_path, NULL
    };
    gchar *sargv[] = { iox_helper, (gchar *) "sub", ws, hs, nf, rate,
      (gchar *) (paced ? "1" : "0"), sub_path, NULL
    };

    roudi_usage (&rcpu0, &rvol0);
    if (!g_spawn_async (NULL, sargv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
            G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &sub, &err)
        || !g_spawn_async (NULL, pargv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
            G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pub, &err))
      g_error ("spawn shm-bench-iox: %s", err->message);
    cur_pub = pub;
    cur_sub = sub;
  }
  /* the subscriber ends on its own: at the count, or 2 s without a frame
   * (10 s for the first) */
  reap (sub, 15000 + frames * (paced ? 1000 / MAX (fps, 1) : 50));
  roudi_usage (&rcpu1, &rvol1);
  kill (pub, SIGUSR1);
  reap (pub, 2000);
  cur_pub = cur_sub = 0;

  if (g_file_get_contents (sub_path, &text, NULL, NULL))
    lines = g_strsplit (text, "\n", -1);
  if (lines && lines[0] && sscanf (lines[0], "%u %" G_GUINT64_FORMAT " %"
          G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %llu %llu", &n, &t_first,
          &t_last, &cpu, &vol, &invol) == 6 && n > 0 && lines[1]) {
    GArray *lat = g_array_new (FALSE, FALSE, sizeof (guint64));
    gchar **parts = g_strsplit (lines[1], "\t", -1);
    bw_snap d = { 0, };

    res.frames = n;
    res.cpu_cons_us = cpu / 1000.0 / n;
    res.wake_cons = (double) vol / n;
    res.csw_cons = (double) (vol + invol) / n;
    for (i = 0; parts[i] && d.n < BW_MAX_THREADS; i++)
      if (sscanf (parts[i], "%19s %llu %llu", d.t[d.n].name,
              &d.t[d.n].c.vol, &d.t[d.n].c.invol) == 3)
        d.n++;
    g_strfreev (parts);
    bw_format (&d, n, res.threads_cons, sizeof (res.threads_cons));
    for (i = 0; lines[2 + i] && i < n; i++) {
      guint64 v = g_ascii_strtoull (lines[2 + i], NULL, 10);

      if (i >= WARMUP)
        g_array_append_val (lat, v);
    }
    if (n > 1 && t_last > t_first)
      res.fps = (n - 1) * 1e9 / (double) (t_last - t_first);
    if (lat->len > 0) {
      guint64 *l = (guint64 *) lat->data;

      g_array_sort (lat, cmp_ns);
      if (samples)
        g_array_append_vals (samples, l, lat->len);
      res.p50_us = l[lat->len / 2] / 1000.0;
      res.p99_us = l[MIN (lat->len - 1, (guint) (lat->len * 0.99 + 0.999999)
              - 1)] / 1000.0;
    }
    g_array_free (lat, TRUE);
    if (!bench_read_side (pub_path, n, &res))
      res.cpu_prod_us = -1;
    res.cpu_roudi_us = (rcpu1 - rcpu0) / 1000.0 / n;
    res.wake_roudi = (double) (rvol1 - rvol0) / n;
  }
  g_strfreev (lines);
  g_free (text);
  cur_dir = NULL;
  remove_run_dir (dir);
  /* the runtimes' sockets, left when a side was killed */
  unlink_runtime_files ("pub", pub);
  unlink_runtime_files ("sub", sub);
  g_free (pub_path);
  g_free (sub_path);
  g_free (dir);
  g_free (ws);
  g_free (hs);
  g_free (nf);
  g_free (rate);
  return res;
}
