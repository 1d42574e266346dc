/* Cross-process frame transport benchmark: pinnedshmsink -> pinnedshmsrc
 * against GStreamer's shmsink -> shmsrc, against one memcpy of the frame
 * and against the floor (a bare SOCK_SEQPACKET message of the size of the
 * wire FRAME message between the same two processes), for 640x480,
 * 1920x1080 and 3840x2160 RGBA, in the same run.
 *
 *   shm-bench [--frames N] [--latency-frames N] [--rate FPS] [--csv]
 *             [--csv-file FILE] [--cpu-rate FPS] [--busy-poll-us US]
 *             [--delivery-only] [--rounds N] [--appsrc] [--pool-size N]
 *             [--no-iox] [--split-cpus] [--transport NAME [--size WxH]]
 *
 * --csv prints the same figures as CSV rows instead of the tables (one row
 * per size, rate and transport: size,width,height,bytes,transport,rate,
 * frames_per_s,p50_us,p99_us,frames,cpu_us_per_frame,p50_min_us,
 * p50_max_us,rounds,cpu_prod_us,cpu_cons_us,wake_prod,wake_cons,csw_prod,
 * csw_cons; transport is memcpy, pinned, node, iox, pinned-socket,
 * pinned-copy, pinned-busy, shm, unixfd or floor), for bench/plot.py;
 * --csv-file FILE writes them to FILE beside the tables.
 *
 * The pieces: shm-bench-producer.c (the producer processes of the
 * GStreamer pairs and of the floor), shm-bench-node.c (the C node API's
 * hop), shm-bench-roudi.c and shm-bench-iox.c (iceoryx), shm-bench-tables.c
 * (rounds, medians, spread, tables), bench-wakeups.h (context switches).
 *
 * Every transport is measured the same way: a producer process pushes
 * frames into the sink from its pacing thread (gst_pad_push() on a pad
 * linked to the sink: one thread from the frame to the send, as a camera
 * source's streaming thread and as the floor's producer; --appsrc puts an
 * appsrc in between, one more thread hop for every transport, as this
 * benchmark did before); a consumer process (this one) counts the buffers
 * leaving the source pad. The producer writes its
 * CLOCK_MONOTONIC time into each frame just before the push; the consumer's
 * pad probe reads it: latency = producer push -> consumer push.
 *  - throughput: the producer pushes as fast as the transport takes frames;
 *  - latency: paced at --rate frames/s, so nothing queues.
 * The producer writes into memory the sink gave it (the pinned pool for
 * pinnedshmsink, shmsink's allocator for shmsink) unless "copy" is named:
 * then system memory that the sink copies once (the producer then keeps at
 * most 6 frames in flight, reading the sink's stats, since the copy path
 * skips frames instead of blocking).
 * shmsrc never sees EOS on 1.22: every consumer stops after N frames.
 *
 * "unixfd" (issue 23) is GStreamer's own fd-passing pair, unixfdsink ->
 * unixfdsrc (1.24+, gst-plugins-bad): one fd per memory per buffer on the
 * socket, the source mapping each one it receives. The producer writes into
 * buffers of a pool (8 buffers, as pinnedshmsink's pool-size) on the
 * allocator unixfdsink proposes (GstShmAllocator: memfd), so nothing is
 * copied and a memory is sent again once every client released it; the
 * consumer's pipeline connects, then writes SOCKET.ready, and the producer
 * starts its clock when that file exists (unixfdsink has no signal for a
 * client; wait-for-connection covers the accept). Where the plugin is
 * absent (1.22) its rows are left out with a note.
 *
 * The floor ("floor"): the producer process listens on a SOCK_SEQPACKET
 * socket and, paced the same way, sends one message of
 * sizeof (struct pf_msg_frame) bytes per frame carrying its
 * CLOCK_MONOTONIC time; a thread of the consumer process sleeps in recv()
 * and stamps each arrival. No GStreamer on either side: what is left is
 * the kernel's socket path and the wake-up of the receiving thread, which
 * every transport here pays at least once per frame.
 * "pinned" is the zero copy pair as it runs by default: FRAMEs and
 * releases through the frame ring and its socketpair doorbells
 * (docs/protocol.md, section 3.10); "pinned-socket" the same pair with the
 * consumer not asking for the ring (PINNEDFLOW_FRAME_RING=0 while its
 * source connects): FRAMEs and RELEASEs as socket messages.
 * "pinned-busy" is the zero copy pair with pinnedshmsrc's busy-poll-us set
 * (by default one frame period plus 1 ms, so that it spins until the next
 * frame: the most the option can do, at the most CPU).
 *
 * "node" (issue 35): the C node API, pf_node_producer -> pf_node_consumer,
 * no GStreamer: the producer process loans a slot, writes the stamp in
 * place and publishes it from its pacing thread; a thread of this process
 * blocks in pf_node_consumer_next() and releases each frame.
 * "iox" (issue 35): iceoryx 2.0's publisher -> subscriber (C binding), two
 * processes of shm-bench-iox, chunks loaned and written in place, the
 * subscriber asleep in a waitset; RouDi is started by this run with a
 * config sized for 4K frames and stopped at its end (shm-bench-roudi.c).
 * Where shm-bench-iox was not built or iox-roudi is missing, the rows say
 * why and are skipped.
 *
 * --rounds N (issues 13, 35; 5 by default): every paced run is made N
 * times, the transports taking turns (pinned, node, iox, socket, copy,
 * busy, shm, unixfd, floor, pinned, ...); the row printed is the round
 * with the median p50 (the 30/s section: the median CPU per frame), with
 * the smallest and largest p50 of the rounds ("p50 min-max") and the
 * ratios to shmsink and to the floor: on a shared machine a burst of load
 * then falls on one round of one transport, not on the whole comparison.
 *
 * Wake-ups (issue 35): each process also counts its context switches
 * (getrusage ru_nvcsw, the voluntary ones = wake-ups, and ru_nivcsw, the
 * preemptions; every thread) over the same window as its CPU time, and
 * /proc/self/task/TID/status thread by thread; "wake p/c" is per frame for
 * the producer/consumer process, and the 1080p table at --cpu-rate lists
 * them by thread.
 *
 * CPU per frame: each process takes getrusage (RUSAGE_SELF, user + sys)
 * over the run: the producer from the consumer's connection to the moment
 * the consumer has all its frames (it is then told with SIGUSR1 and writes
 * its figure to a file beside the socket), the consumer from its first
 * frame to its last; both divided by the frames received. After the size
 * table (paced at --rate), our two hops, iceoryx, shmsink/shmsrc, unixfd
 * and the floor run paced at --cpu-rate frames/s (30) at every size; the
 * 1920x1080 rows are then printed with the CPU per frame of both
 * processes, its ratio to shmsink's and the floor's, and the wake-ups.
 *
 * Delivery (issue 10): last, the zero-copy pair at 1920x1080 with
 * pinnedshmsrc delivery=every-frame (reliable: the sink's render waits in
 * pf_producer_wait_ready() whenever the consumer holds max-client-buffers
 * frames) and delivery=newest-frame (leaky: the producer skips the
 * consumer at its limit, the consumer drops stale queued frames), each
 * unpaced (frames/s and frames received of those sent) and paced at --rate
 * (latency, CPU per frame), with the ratio of reliable to leaky. The
 * producer is not live, so "pinned" above is every-frame too.
 *
 * --split-cpus: this process (the consumer) on CPU 1, the producer
 * processes on CPU 0, for every thread (iceoryx's are not moved): what a
 * peer's thread woken on the same CPU costs (issue 35).
 *
 * --transport NAME [--size WxH]: only that transport, paced, every round
 * printed (to run it under perf or strace; bench/shm/hop-trace.sh).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 * The p99 printed is taken over the frames of all N rounds together (N x
 * 120 frames): that of one round of 120 frames is its second-worst frame.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <glib/gstdio.h>

/* the wire FRAME message, for the size of the floor's message */
#include <pinnedflow/pf-wire-private.h>

#include "shm-bench.h"

static gint opt_frames = 300;
static gint opt_latency_frames = 130;
static gint opt_rate = 100;
static gint opt_cpu_rate = 30;
static gint opt_busy_poll_us = -1;
static gchar *opt_role;
static gchar *opt_impl;
static gchar *opt_socket;
static gint opt_width, opt_height;
static gboolean opt_paced;
static gboolean opt_csv;
/* --csv-file: the CSV rows also go there, beside the tables */
static gchar *opt_csv_file;
static FILE *csv_fp;
/* unixfdsink and unixfdsrc are registered (GStreamer 1.24+) */
static gboolean have_unixfd;
static gboolean opt_delivery_only;
/* paced runs per transport and size, interleaved (issue 13) */
static gint opt_rounds = 5;
/* no iceoryx rows (RouDi not started) */
static gboolean opt_no_iox;
/* the consumer process on CPU 1, the producers on CPU 0 (a measurement
 * of what sharing a CPU costs; iceoryx's processes are not moved) */
static gboolean opt_split_cpus;
static gint opt_on_cpu = -1;
/* this program, for the producer processes */
static gchar *bench_self;
/* --transport/--size: one paced transport at one size, every round printed
 * (for profiling it under perf or strace) */
static gchar *opt_transport;
/* the producer pushes through an appsrc (its queue and streaming thread)
 * instead of from its pacing thread */
static gboolean opt_appsrc;
/* pinnedshmsink pool-size = max-client-buffers of the zero-copy runs */
static gint opt_pool_size = 8;
static gchar *opt_size;

static GOptionEntry entries[] = {
  {"frames", 'n', 0, G_OPTION_ARG_INT, &opt_frames,
      "frames per throughput run", NULL},
  {"latency-frames", 0, 0, G_OPTION_ARG_INT, &opt_latency_frames,
      "frames per latency run", NULL},
  {"rate", 0, 0, G_OPTION_ARG_INT, &opt_rate, "latency run frames/s", NULL},
  {"cpu-rate", 0, 0, G_OPTION_ARG_INT, &opt_cpu_rate,
      "frames/s of the 1080p CPU-per-frame runs (30)", NULL},
  {"busy-poll-us", 0, 0, G_OPTION_ARG_INT, &opt_busy_poll_us,
      "pinnedshmsrc busy-poll-us of the pinned-busy rows (default: one "
        "frame period + 1 ms)", NULL},
  {"csv-file", 0, 0, G_OPTION_ARG_FILENAME, &opt_csv_file,
      "also write the CSV rows to FILE (the tables still print)", "FILE"},
  {"csv", 0, 0, G_OPTION_ARG_NONE, &opt_csv,
      "CSV rows instead of the table (for bench/plot.py)", NULL},
  {"rounds", 0, 0, G_OPTION_ARG_INT, &opt_rounds,
      "paced runs of each transport per size (and at --cpu-rate), "
        "interleaved, the median reported (1, at most 9)", NULL},
  {"split-cpus", 0, 0, G_OPTION_ARG_NONE, &opt_split_cpus,
      "this (consumer) process on CPU 1, the GStreamer, node and floor "
        "producers on CPU 0", NULL},
  {"on-cpu", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_on_cpu, NULL,
      NULL},
  {"no-iox", 0, 0, G_OPTION_ARG_NONE, &opt_no_iox,
      "no iceoryx rows (RouDi is not started)", NULL},
  {"delivery-only", 0, 0, G_OPTION_ARG_NONE, &opt_delivery_only,
        "only the delivery section (every-frame vs newest-frame at 1080p)",
      NULL},
  {"transport", 0, 0, G_OPTION_ARG_STRING, &opt_transport,
        "only this transport, paced (pinned, pinned-socket, pinned-copy, "
        "pinned-busy, shm, " "floor, unixfd), each of --rounds printed",
      "NAME"},
  {"pool-size", 0, 0, G_OPTION_ARG_INT, &opt_pool_size,
      "pinnedshmsink pool-size and max-client-buffers (8)", "N"},
  {"appsrc", 0, 0, G_OPTION_ARG_NONE, &opt_appsrc,
      "the producer pushes through an appsrc (one more thread hop, the "
        "same for every transport) instead of from its pacing thread", NULL},
  {"size", 0, 0, G_OPTION_ARG_STRING, &opt_size,
      "with --transport: the frame size (1920x1080)", "WxH"},
  /* internal: the producer process */
  {"role", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_role, NULL,
      NULL},
  {"impl", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_impl, NULL,
      NULL},
  {"socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_socket, NULL,
      NULL},
  {"width", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_width, NULL, NULL},
  {"height", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &opt_height, NULL,
      NULL},
  {"paced", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_paced, NULL,
      NULL},
  {NULL}
};

/* ------------------------------------------------------------------------ */
/* consumer (this process) */


static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Probe *p = data;
  guint64 stamp[2], t = bench_now_ns ();

  if (gst_buffer_extract (GST_PAD_PROBE_INFO_BUFFER (info), 0, stamp,
          sizeof (stamp)) != sizeof (stamp))
    return GST_PAD_PROBE_OK;
  probe_record (p, t, stamp[1]);
  return GST_PAD_PROBE_OK;
}


static int
cmp_u64 (const void *a, const void *b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}


/* shmsink's areas ("/dev/shm/shmpipe.%5d.%5d", its pid first) stay when
 * its process exits without stopping the pipeline, as the producer here
 * does: removed after each run */
static void
unlink_shmpipe (GPid pid)
{
  gchar *prefix = g_strdup_printf ("shmpipe.%5d.", (gint) pid);
  GDir *d = g_dir_open ("/dev/shm", 0, NULL);
  const gchar *n;

  while (d && (n = g_dir_read_name (d)))
    if (g_str_has_prefix (n, prefix)) {
      gchar *path = g_build_filename ("/dev/shm", n, NULL);

      g_unlink (path);
      g_free (path);
    }
  if (d)
    g_dir_close (d);
  g_free (prefix);
}

/* @samples: if not NULL, gets the latencies (ns, warm-up left out) of a
 * paced run appended */
static Result
run_pair (const gchar * self, const gchar * impl, gint w, gint h,
    gboolean paced, gint fps, GArray * samples)
{
  Result res = { 0, };
  gchar *dir = g_dir_make_tmp ("shm-bench-XXXXXX", NULL);
  gchar *sock = g_build_filename (dir, "s", NULL);
  gchar *ws = g_strdup_printf ("%d", w), *hs = g_strdup_printf ("%d", h);
  gchar *nf = g_strdup_printf ("%d", opt_frames);
  gchar *nl = g_strdup_printf ("%d", opt_latency_frames);
  gchar *rate = g_strdup_printf ("%d", fps);
  gchar *ps = g_strdup_printf ("%d", opt_pool_size);
  gchar *cpu_path = g_strconcat (sock, ".cpu", NULL);
  gchar *argv[] = { (gchar *) self, (gchar *) "--role", (gchar *) "produce",
    (gchar *) "--impl", (gchar *) impl, (gchar *) "--socket", sock,
    (gchar *) "--width", ws, (gchar *) "--height", hs, (gchar *) "--frames",
    nf, (gchar *) "--latency-frames", nl, (gchar *) "--rate", rate,
    (gchar *) "--pool-size", ps, (gchar *) "--on-cpu",
    (gchar *) (opt_split_cpus ? "0" : "-1"),
    opt_appsrc ? (gchar *) "--appsrc" : paced ? (gchar *) "--paced" : NULL,
    opt_appsrc && paced ? (gchar *) "--paced" : NULL, NULL
  };
  gboolean pinned = g_str_has_prefix (impl, "pinned");
  gboolean floor_ = strcmp (impl, "floor") == 0;
  gboolean node = strcmp (impl, "node") == 0;
  gboolean unixfd = strcmp (impl, "unixfd") == 0;
  gchar *ready_path = g_strconcat (sock, ".ready", NULL);
  /* the zero copy pair without the frame ring: FRAMEs and releases as
   * socket messages (the consumer reads this when it connects) */
  gboolean socket_path = strcmp (impl, "pinned-socket") == 0;
  const gchar *delivery = strcmp (impl, "pinned-newest") == 0 ?
      "newest-frame" : strcmp (impl, "pinned-every") == 0 ? "every-frame" :
      "auto";
  GstElement *pipeline = NULL;
  GstElement *src = NULL;
  GThread *thread = NULL;
  GstPad *pad;
  GError *err = NULL;
  GPid pid;
  Probe p = { 0, };
  GPid shm_pid;
  gchar *desc;
  gint64 deadline;
  gint i;

  if (!g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
          G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pid, &err))
    g_error ("spawn: %s", err->message);

  p.want = paced ? opt_latency_frames : opt_frames;
  p.lat = g_new0 (guint64, p.want);
  g_mutex_init (&p.lock);
  g_cond_init (&p.cond);

  if (floor_) {
    p.sock = sock;
    p.pid = pid;
    thread = g_thread_new ("floor", floor_receive, &p);
    desc = NULL;
  } else if (node) {
    p.sock = sock;
    p.pid = pid;
    thread = g_thread_new ("node", node_receive, &p);
    desc = NULL;
  } else if (pinned) {
    gint busy = 0;

    if (strcmp (impl, "pinned-busy") == 0)
      busy = opt_busy_poll_us >= 0 ? opt_busy_poll_us :
          1000000 / MAX (fps, 1) + 1000;
    desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
        "connect-timeout=-1 busy-poll-us=%d delivery=%s ! fakesink "
        "sync=false async=false", sock, busy, delivery);
  } else {
    /* shmsrc and unixfdsrc need the socket to exist when they start */
    if (!bench_wait_socket (sock, pid))
      g_error ("%s did not start", unixfd ? "unixfdsink" : "shmsink");
    desc = unixfd ? g_strdup_printf ("unixfdsrc name=src socket-path=%s ! "
        "fakesink sync=false async=false", sock) :
        g_strdup_printf ("shmsrc name=src socket-path=%s is-live=true ! "
        "fakesink sync=false async=false", sock);
  }
  if (socket_path)
    g_setenv ("PINNEDFLOW_FRAME_RING", "0", TRUE);
  if (desc) {
    pipeline = gst_parse_launch (desc, &err);
    g_free (desc);
    if (pipeline == NULL)
      g_error ("%s", err->message);
    src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
    pad = gst_element_get_static_pad (src, "src");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &p, NULL);
    gst_object_unref (pad);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    /* unixfdsrc connected in its start (READY -> PAUSED): tell the
     * producer, which has no signal for it */
    if (unixfd)
      g_file_set_contents (ready_path, "", 0, NULL);
  }

  /* shmsrc never ends by itself on 1.22, and a transport may skip frames:
   * stop at the count, or after 2 s without a new frame (10 s for the
   * first, which waits for the producer process to start) */
  g_mutex_lock (&p.lock);
  while (p.n < p.want) {
    guint before = p.n;

    deadline = g_get_monotonic_time () +
        (before == 0 ? 10 : 2) * G_TIME_SPAN_SECOND;
    if (!g_cond_wait_until (&p.cond, &p.lock, deadline) && p.n == before)
      break;
  }
  if (p.n < p.want && p.n > 0) {
    p.cpu_last = bench_cpu_ns ();
    p.cs_last = bw_total ();
    bw_snapshot (0, &p.snap_last);
  }
  g_mutex_unlock (&p.lock);

  /* the producer's CPU time, then it goes */
  res.cpu_prod_us = res.cpu_cons_us = -1;
  shm_pid = strcmp (impl, "shm") == 0 ? pid : 0;
  kill (pid, SIGUSR1);
  for (i = 0; i < 2000; i++) {
    if (waitpid (pid, NULL, WNOHANG) == pid) {
      pid = 0;
      break;
    }
    g_usleep (1000);
  }
  if (pid) {
    kill (pid, SIGKILL);
    waitpid (pid, NULL, 0);
  }
  if (shm_pid)
    unlink_shmpipe (shm_pid);
  res.wake_prod = res.csw_prod = res.wake_cons = res.csw_cons = -1;
  res.cpu_roudi_us = res.wake_roudi = -1;
  if (p.n > 0 && bench_read_side (cpu_path, p.n, &res)) {
    bw_snap d;

    res.cpu_cons_us = (p.cpu_last - p.cpu_first) / 1000.0 / p.n;
    res.wake_cons = (double) (p.cs_last.vol - p.cs_first.vol) / p.n;
    res.csw_cons = (double) (p.cs_last.vol + p.cs_last.invol -
        p.cs_first.vol - p.cs_first.invol) / p.n;
    bw_delta (&p.snap_first, &p.snap_last, &d);
    bw_format (&d, p.n, res.threads_cons, sizeof (res.threads_cons));
  }
  g_unlink (cpu_path);
  g_free (cpu_path);
  if (thread)
    g_thread_join (thread);
  if (pipeline) {
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (src);
    gst_object_unref (pipeline);
  }
  if (socket_path)
    g_unsetenv ("PINNEDFLOW_FRAME_RING");

  res.frames = p.n;
  if (p.n > 1)
    res.fps = (p.n - 1) * 1e9 / (double) (p.t_last - p.t_first);
  if (p.n > WARMUP) {
    /* the first frames also pay for mapping the segments: not per frame */
    guint64 *l = p.lat + WARMUP;
    guint n = p.n - WARMUP;

    qsort (l, n, sizeof (guint64), cmp_u64);
    if (samples != NULL)
      g_array_append_vals (samples, l, n);
    res.p50_us = l[n / 2] / 1000.0;
    res.p99_us = l[MIN (n - 1, (guint) ceil (n * 0.99) - 1)] / 1000.0;
  }
  g_free (p.lat);
  g_mutex_clear (&p.lock);
  g_cond_clear (&p.cond);
  g_unlink (ready_path);
  g_free (ready_path);
  g_unlink (sock);
  g_rmdir (dir);
  g_free (sock);
  g_free (dir);
  g_free (ws);
  g_free (hs);
  g_free (nf);
  g_free (nl);
  g_free (rate);
  g_free (ps);
  return res;
}

/* run_pair(), or iceoryx's publisher and subscriber ("iox") */
static Result
run_transport (const gchar * self, const gchar * impl, gint w, gint h,
    gboolean paced, gint fps, GArray * samples)
{
  if (strcmp (impl, "iox") == 0)
    return iox_run (w, h, paced, fps, paced ? opt_latency_frames :
        opt_frames, samples);
  return run_pair (self, impl, w, h, paced, fps, samples);
}

/* run_transport() as a bench_run_fn */
static Result
bench_run (const gchar * impl, gint w, gint h, gboolean paced, gint fps,
    GArray * samples)
{
  return run_transport (bench_self, impl, w, h, paced, fps, samples);
}

static Result
run_memcpy (gint w, gint h)
{
  gsize size = (gsize) w * h * 4;
  guint8 *a = g_malloc (size), *b = g_malloc (size);
  guint n = opt_frames, i;
  guint64 *lat = g_new (guint64, n), t0;
  Result res = { 0, };

  memset (a, 1, size);
  memset (b, 2, size);
  for (i = 0; i < n; i++) {
    t0 = bench_now_ns ();
    memcpy (b, a, size);
    a[i % size] = b[(i * 7) % size];    /* keep the copy */
    lat[i] = bench_now_ns () - t0;
  }
  res.frames = n;
  qsort (lat, n, sizeof (guint64), cmp_u64);
  res.p50_us = lat[n / 2] / 1000.0;
  /* from the median: a shared machine adds outliers to the mean */
  res.fps = lat[n / 2] ? 1e9 / (double) lat[n / 2] : 0;
  res.p99_us = lat[MIN (n - 1, (guint) ceil (n * 0.99) - 1)] / 1000.0;
  g_free (lat);
  g_free (a);
  g_free (b);
  return res;
}

/* Reliable (every-frame) against leaky (newest-frame) delivery, zero
 * copy at 1920x1080, in this run. */
static void
print_delivery (const gchar * self)
{
  static const gchar *impls[] = { "pinned-every", "pinned-newest" };
  static const gchar *names[] = { "every-frame (reliable)",
    "newest-frame (leaky)"
  };
  Result tp[2], lt[2];
  guint i;

  for (i = 0; i < 2; i++) {
    tp[i] = run_transport (self, impls[i], 1920, 1080, FALSE, opt_rate, NULL);
    lt[i] = run_transport (self, impls[i], 1920, 1080, TRUE, opt_rate, NULL);
  }
  printf ("\nDelivery, 1920x1080 RGBA zero copy: unpaced over %d frames "
      "(frames/s, frames received), paced at %d/s over %d frames (latency, "
      "CPU of both processes per frame)\n", opt_frames, opt_rate,
      opt_latency_frames);
  printf ("%-24s %9s %9s %10s %10s %10s\n", "delivery", "frames/s",
      "received", "p50 us", "p99 us", "cpu us/f");
  for (i = 0; i < 2; i++)
    printf ("%-24s %9.0f %9u %10.1f %10.1f %10.1f\n", names[i], tp[i].fps,
        tp[i].frames, lt[i].p50_us, lt[i].p99_us,
        lt[i].cpu_prod_us + lt[i].cpu_cons_us);
  printf ("%-24s %9.2f %9s %10.2f %10.2f %10.2f\n", "reliable / leaky",
      tp[1].fps > 0 ? tp[0].fps / tp[1].fps : 0, "",
      lt[1].p50_us > 0 ? lt[0].p50_us / lt[1].p50_us : 0,
      lt[1].p99_us > 0 ? lt[0].p99_us / lt[1].p99_us : 0,
      (lt[1].cpu_prod_us + lt[1].cpu_cons_us) > 0 ?
      (lt[0].cpu_prod_us + lt[0].cpu_cons_us) / (lt[1].cpu_prod_us +
          lt[1].cpu_cons_us) : 0);
  fflush (stdout);
}

/* One size: memcpy, every transport unpaced (frames/s), then the paced
 * rounds (bench_rounds()) of those in @only (all when NULL), printed as
 * rows with their spread and ratios, and the ratios of our hops to
 * iceoryx and unixfd. @unpaced: also the unpaced runs (else frames/s is
 * left out). @keep: gets the rows, if not NULL. */
static void
run_size (const BenchImpl * all, guint n_all, const guint * only,
    guint n_only, gint w, gint h, gint fps, gboolean unpaced, guint pinned,
    guint node, guint iox, guint shm, guint unixfd, guint flr, Row * keep)
{
  BenchImpl sel[16];
  Result tp[16], tpa[16];
  Row rows[16], rowa[16];
  guint map[16], n = 0, i;
  Result mc = run_memcpy (w, h);
  gchar *size = g_strdup_printf ("%dx%d", w, h);

  for (i = 0; i < n_all && n < G_N_ELEMENTS (sel); i++) {
    guint k;
    gboolean want = only == NULL;

    for (k = 0; only && k < n_only; k++)
      want |= only[k] == i;
    if (want) {
      map[n] = i;
      sel[n++] = all[i];
    }
  }
  memset (tp, 0, sizeof (tp));
  for (i = 0; i < n; i++)
    if (unpaced && sel[i].on)
      tp[i] = bench_run (sel[i].impl, w, h, FALSE, fps, NULL);
  bench_rounds (bench_run, sel, n, w, h, fps, opt_rounds, !unpaced, rows);
  /* the same, indexed as @all */
  memset (tpa, 0, sizeof (tpa));
  memset (rowa, 0, sizeof (rowa));
  for (i = 0; i < n; i++) {
    tpa[map[i]] = tp[i];
    rowa[map[i]] = rows[i];
  }
  if (keep)
    memcpy (keep, rowa, n_all * sizeof (Row));
  if (csv_fp) {
    gsize bytes = (gsize) w * h * 4;

    /* the memcpy once per size: with the first (unpaced) section */
    if (unpaced)
      fprintf (csv_fp,
          "%s,%d,%d,%" G_GSIZE_FORMAT ",memcpy,0,%.1f,%.2f,%.2f,%u,,,,,,,"
          ",,,\n", size, w, h, bytes, mc.fps, mc.p50_us, mc.p99_us, mc.frames);
    for (i = 0; i < n; i++) {
      const Result *m = &rows[i].med;

      if (!sel[i].on || rows[i].rounds == 0)
        continue;
      fprintf (csv_fp, "%s,%d,%d,%" G_GSIZE_FORMAT ",%s,%d,%.1f,%.2f,%.2f,"
          "%u,%.1f,"
          "%.2f,%.2f,%d,%.1f,%.1f,%.2f,%.2f,%.2f,%.2f\n", size, w, h, bytes,
          sel[i].impl, fps, tp[i].fps, m->p50_us, m->p99_us, m->frames,
          m->cpu_prod_us + m->cpu_cons_us, rows[i].p50_min, rows[i].p50_max,
          rows[i].rounds, m->cpu_prod_us, m->cpu_cons_us, m->wake_prod,
          m->wake_cons, m->csw_prod, m->csw_cons);
    }
    fflush (csv_fp);
  }
  if (!opt_csv) {
    guint s_i = 0, f_i = 0;

    for (i = 0; i < n; i++) {
      if (map[i] == shm)
        s_i = i;
      if (map[i] == flr)
        f_i = i;
    }
    if (!unpaced)
      printf ("%-10s at %d/s (frames/s column: not measured here)\n", size,
          fps);
    else
      printf ("%-10s %-22s %9.0f %9.1f %15s %9.1f %7s %7s %7.2f\n", size,
          "memcpy (1 copy)", mc.fps, mc.p50_us, "", mc.p99_us, "", "", 1.0);
    print_size_rows (size, sel, n, tp, rows, s_i, f_i, mc.p50_us,
        unpaced ? (guint) opt_frames : 0);
    if (all[iox].on) {
      print_ratio (size, "pinnedshm / iceoryx", &tpa[pinned], &rowa[pinned],
          &tpa[iox], &rowa[iox]);
      print_ratio (size, "node API / iceoryx", &tpa[node], &rowa[node],
          &tpa[iox], &rowa[iox]);
    }
    if (all[unixfd].on)
      print_ratio (size, "pinnedshm / unixfd", &tpa[pinned], &rowa[pinned],
          &tpa[unixfd], &rowa[unixfd]);
  }
  fflush (stdout);
  g_free (size);
}

int
main (int argc, char **argv)
{
  static const gint sizes[][2] = { {640, 480}, {1920, 1080}, {3840, 2160} };
  enum
  { PINNED, NODE, IOX, PINNED_SOCKET, PINNED_COPY, PINNED_BUSY, SHM, UNIXFD,
    FLOOR, N_IMPLS
  };
  BenchImpl impls[N_IMPLS] = {
    {"pinned", "pinnedshm (zero copy)", TRUE, NULL},
    {"node", "node API (pf_node)", TRUE, NULL},
    {"iox", "iceoryx (C binding)", FALSE, NULL},
    {"pinned-socket", "pinnedshm (socket)", TRUE, NULL},
    {"pinned-copy", "pinnedshm (copy path)", TRUE, NULL},
    {"pinned-busy", "pinnedshm (busy-poll)", TRUE, NULL},
    {"shm", "shmsink/shmsrc", TRUE, NULL},
    {"unixfd", "unixfdsink/unixfdsrc", FALSE,
        "unixfdsink/unixfdsrc not registered: GStreamer 1.24+"},
    {"floor", "floor (SEQPACKET)", TRUE, NULL},
  };
  /* the 30 frames/s section: our two hops, iceoryx, shmsink, the floor */
  static const guint slow[] = { PINNED, NODE, IOX, SHM, UNIXFD, FLOOR };
  gchar *iox_reason = NULL;
  GOptionContext *ctx = g_option_context_new (NULL);
  GError *err = NULL;
  guint s, i;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  opt_rounds = CLAMP (opt_rounds, 1, MAX_ROUNDS);
  if (opt_split_cpus || opt_on_cpu >= 0) {
    /* before any thread: they all inherit it */
    cpu_set_t set;

    CPU_ZERO (&set);
    CPU_SET (opt_on_cpu >= 0 ? opt_on_cpu : 1, &set);
    if (sched_setaffinity (0, sizeof (set), &set) < 0)
      g_printerr ("shm-bench: sched_setaffinity: %s\n", g_strerror (errno));
  }
  if (opt_role && strcmp (opt_role, "produce") == 0) {
    sigset_t block;

    /* blocked in every thread to come; bench_producer_report_and_exit()
     * waits for it */
    signal (SIGUSR1, on_sigusr1);
    sigemptyset (&block);
    sigaddset (&block, SIGUSR1);
    pthread_sigmask (SIG_BLOCK, &block, &prod_unblocked);
  }
  gst_init (NULL, NULL);

  if (opt_role && strcmp (opt_role, "produce") == 0) {
    ProducerArgs a = { opt_impl, opt_socket, opt_width, opt_height,
      opt_paced ? opt_latency_frames : opt_frames, opt_rate, opt_pool_size,
      opt_paced, opt_appsrc
    };

    if (strcmp (opt_impl, "node") == 0)
      return node_produce (opt_socket, opt_width, opt_height, a.frames,
          opt_rate, opt_paced, opt_pool_size);
    if (strcmp (opt_impl, "floor") == 0)
      return floor_produce (&a);
    return gst_produce (&a);
  }

  bench_self = g_file_read_link ("/proc/self/exe", NULL);
  if (gst_element_factory_find ("pinnedshmsink") == NULL
      || gst_element_factory_find ("shmsink") == NULL)
    g_error ("pinnedshmsink or shmsink missing (GST_PLUGIN_PATH?)");
  have_unixfd = gst_element_factory_find ("unixfdsink") != NULL
      && gst_element_factory_find ("unixfdsrc") != NULL;
  impls[UNIXFD].on = have_unixfd;

  if (opt_transport) {
    gint w = 1920, h = 1080, r;

    if (opt_size && sscanf (opt_size, "%dx%d", &w, &h) != 2)
      g_error ("--size %s: not WxH", opt_size);
    if (strcmp (opt_transport, "iox") == 0 && !iox_start (bench_self,
            &iox_reason))
      g_error ("iceoryx: %s", iox_reason);
    bench_run (opt_transport, 320, 240, FALSE, opt_rate, NULL);
    for (r = 0; r < opt_rounds; r++) {
      Result res = bench_run (opt_transport, w, h, TRUE, opt_rate, NULL);

      printf ("%s %dx%d at %d/s round %d: p50 %.1f us p99 %.1f us, "
          "cpu %.1f + %.1f us/f, wake-ups %.2f + %.2f per frame, %u "
          "frames\n  producer threads: %s\n  consumer threads: %s\n",
          opt_transport, w, h, opt_rate, r, res.p50_us, res.p99_us,
          res.cpu_prod_us, res.cpu_cons_us, res.wake_prod, res.wake_cons,
          res.frames, res.threads_prod, res.threads_cons);
      fflush (stdout);
    }
    iox_stop ();
    g_free (bench_self);
    return 0;
  }

  if (opt_delivery_only) {
    /* warm-up, not reported */
    bench_run ("pinned", 320, 240, FALSE, opt_rate, NULL);
    print_delivery (bench_self);
    g_free (bench_self);
    return 0;
  }

  /* iceoryx's rows need RouDi: started once for the run, stopped at the
   * end (and at exit, on a signal) */
  if (opt_no_iox)
    iox_reason = g_strdup ("--no-iox");
  else
    impls[IOX].on = iox_start (bench_self, &iox_reason);
  impls[IOX].off_reason = iox_reason;

  csv_fp = opt_csv ? stdout : NULL;
  if (opt_csv_file && (csv_fp = fopen (opt_csv_file, "we")) == NULL)
    g_error ("%s: %s", opt_csv_file, g_strerror (errno));
  if (csv_fp)
    fprintf (csv_fp, "size,width,height,bytes,transport,rate,frames_per_s,"
        "p50_us,p99_us,frames,cpu_us_per_frame,p50_min_us,p50_max_us,rounds,"
        "cpu_prod_us,cpu_cons_us,wake_prod,wake_cons,csw_prod,csw_cons\n");
  if (!opt_csv) {
    double la[3] = { 0, };
    gchar *version = gst_version_string ();

    if (getloadavg (la, 3) == 3)
      printf ("load average at start: %.2f %.2f %.2f\n", la[0], la[1], la[2]);
    printf ("cross-process RGBA frames: throughput over %d frames (unpaced), "
        "latency over %d frames at %d/s\n", opt_frames, opt_latency_frames,
        opt_rate);
    printf ("paced runs: %d rounds of every transport, interleaved; each row "
        "is the round with the median p50 (the 30/s section: the median CPU "
        "per frame), p50 min-max the spread of the rounds, p99 over the "
        "frames of all %d rounds\n", opt_rounds, opt_rounds);
    printf ("latency = producer push -> consumer source push "
        "(CLOCK_MONOTONIC), first %d frames left out; memcpy = one memcpy "
        "of the frame, in process (frames/s from its median); floor = one "
        "%" G_GSIZE_FORMAT "-byte SOCK_SEQPACKET message (the FRAME "
        "message), same pacing; cpu p/c = user+sys per frame of the "
        "producer/consumer process in the paced run; wake p/c = voluntary "
        "context switches (wake-ups) per frame of all the threads of the "
        "producer/consumer process\n", WARMUP, sizeof (struct pf_msg_frame));
    printf ("node = pf_node_producer -> pf_node_consumer (C API, no "
        "GStreamer); iceoryx = iox publisher -> subscriber, chunks loaned "
        "and written in place, subscriber asleep in a waitset: %s\n",
        impls[IOX].on ? "RouDi started by this run" : iox_reason);
    printf ("%s; %s\n\n", version, have_unixfd ?
        "unixfd = unixfdsink -> unixfdsrc, memfd buffers of a pool on the "
        "sink's allocator" : "unixfdsink/unixfdsrc not registered (GStreamer "
        "1.24+, gst-plugins-bad): no unixfd rows");
    g_free (version);
    print_size_header ();
  }

  /* warm-up, not reported: loads the plugins and pages in the code of
   * both processes */
  for (i = 0; i < N_IMPLS; i++)
    if (impls[i].on)
      bench_run (impls[i].impl, 320, 240, FALSE, opt_rate, NULL);

  for (s = 0; s < G_N_ELEMENTS (sizes); s++)
    run_size (impls, N_IMPLS, NULL, 0, sizes[s][0], sizes[s][1], opt_rate,
        TRUE, PINNED, NODE, IOX, SHM, UNIXFD, FLOOR, NULL);

  {
    /* the 30/s section: iceoryx beside our hops at every size, the CPU
     * and wake-ups of each side; the 1080p rows' thread by thread */
    Row rows1080[N_IMPLS];

    if (!opt_csv)
      printf ("\nPaced at %d/s (the median CPU round of %d): our hops, "
          "iceoryx, shmsink, the floor\n", opt_cpu_rate, opt_rounds);
    for (s = 0; s < G_N_ELEMENTS (sizes); s++)
      run_size (impls, N_IMPLS, slow, G_N_ELEMENTS (slow), sizes[s][0],
          sizes[s][1], opt_cpu_rate, FALSE, PINNED, NODE, IOX, SHM, UNIXFD,
          FLOOR, sizes[s][1] == 1080 ? rows1080 : NULL);
    if (!opt_csv) {
      BenchImpl sel[N_IMPLS];
      Row r[N_IMPLS];
      guint n = 0, shm = 0, flr = 0;

      for (i = 0; i < G_N_ELEMENTS (slow); i++) {
        if (slow[i] == SHM)
          shm = n;
        if (slow[i] == FLOOR)
          flr = n;
        sel[n] = impls[slow[i]];
        r[n++] = rows1080[slow[i]];
      }
      printf ("\nCPU and wake-ups per frame, 1920x1080 RGBA at %d/s "
          "(getrusage user+sys and ru_nvcsw/ru_nivcsw of each process, every "
          "thread: producer from the consumer's connection to the last frame "
          "received, consumer from its first frame to its last)\n",
          opt_cpu_rate);
      print_wake_table (sel, n, r, shm, flr);
      print_delivery (bench_self);
    }
  }
  iox_stop ();
  if (csv_fp && csv_fp != stdout)
    fclose (csv_fp);
  g_free (iox_reason);
  g_free (bench_self);
  return 0;
}
