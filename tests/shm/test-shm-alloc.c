/* Allocations on the per-frame path of pinnedshmsink and pinnedshmsrc.
 *
 *   test-shm-alloc producer|consumer
 *
 * Two processes (the producer forked: appsrc ! pinnedshmsink; the consumer:
 * pinnedshmsrc ! fakesink) stream 2 x FRAMES frames: the first FRAMES in
 * the sink's pool (zero copy), the next FRAMES in system memory, which the
 * sink copies into its own pinned pool (the copy path). Every malloc (),
 * calloc () and realloc () of each process is counted (this executable
 * defines them over glibc's __libc_* functions, so GLib's and GStreamer's
 * calls come here too; G_SLICE=always-malloc puts g_slice under malloc:
 * set here before GLib starts, re-executing if needed), and apart those
 * made on the element's streaming thread: pinnedshmsink's render (the
 * thread that brings buffers to its sink pad), pinnedshmsrc's create (the
 * thread that pushes from its source pad). Each side counts over windows
 * of steady-state frames (WINDOW frames after WARM ones of each half): the
 * producer, for the process between two pushes and for the sink's
 * streaming thread between two buffers reaching the sink; the consumer,
 * between two buffers leaving the source. The side named on the command
 * line passes (exit 0, else 1; 2: the stream failed) when, in every one of
 * its windows, its process made fewer than ALLOWED allocations (none per
 * frame) and its element's streaming thread made none at all, and (the
 * consumer) no memory leaving pinnedshmsrc wrapped other bytes than when
 * first seen in the window: the source keeps each frame's memories with
 * its buffer for the next frame in the same chunks, instead of wrapping
 * every frame anew in recycled memory structs. The counts are printed
 * either way.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>

#include "pf-test-util.h"

#define WARM 40
#define WINDOW 200
/* allocations a side may make in the window: an allocation made for every
 * frame, or for one frame in ten, is over it; what is left are the rare
 * ones of threads that wake up on their own (0 to 5 seen in the producer
 * over 100 frames: GstBus, task pools), which do not grow with frames */
#define ALLOWED (WINDOW / 20)
#define FRAMES (WARM + WINDOW + 20)

/* ---- counting allocator ---- */

extern void *__libc_malloc (size_t size);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *p, size_t size);

static unsigned long allocations;
/* those of the element's streaming thread (marked by its pad probe) */
static unsigned long stream_allocations;
static __thread int stream_thread;
/* PF_ALLOC_BACKTRACE set: the stack of every streaming-thread allocation
 * in a window goes to stderr (to find what allocates) */
static int trace_stream, in_window;
static __thread int in_trace;

static void
counted (void)
{
  __atomic_fetch_add (&allocations, 1, __ATOMIC_RELAXED);
  if (stream_thread) {
    __atomic_fetch_add (&stream_allocations, 1, __ATOMIC_RELAXED);
    if (trace_stream && __atomic_load_n (&in_window, __ATOMIC_RELAXED)
        && !in_trace) {
      void *frames[32];
      int n;

      in_trace = 1;
      n = backtrace (frames, 32);
      fprintf (stderr, "allocation on the streaming thread:\n");
      backtrace_symbols_fd (frames, n, 2);
      in_trace = 0;
    }
  }
}

void *
malloc (size_t size)
{
  counted ();
  return __libc_malloc (size);
}

void *
calloc (size_t n, size_t size)
{
  counted ();
  return __libc_calloc (n, size);
}

void *
realloc (void *p, size_t size)
{
  counted ();
  return __libc_realloc (p, size);
}

static unsigned long
count (void)
{
  return __atomic_load_n (&allocations, __ATOMIC_RELAXED);
}

static unsigned long
count_stream (void)
{
  return __atomic_load_n (&stream_allocations, __ATOMIC_RELAXED);
}

/* What each side reports: per half (0 zero copy, 1 copy path), the
 * allocations of the process and of the element's streaming thread over
 * the window. */
typedef struct
{
  unsigned long process[2];
  unsigned long stream[2];
  /* memories seen over the window wrapping other bytes than when first
   * seen (checked at the source only) */
  unsigned long rewrapped[2];
} Report;

/* Counts on the streaming thread at WARM and WARM + WINDOW buffers of
 * each half (a pad probe of the element: called on that thread, with
 * frame @k of the stream, before the element's own work on the frame at
 * the sink, after it at the source). */
typedef struct
{
  unsigned frames;
  unsigned long s0[2], s1[2], c0[2], c1[2];
  /* the first memory of each buffer in the window and the bytes it wrapped
   * then: pinnedshmsrc keeps a frame's memories with its buffer for the
   * next frame in the same chunks, so each memory leaving it wraps the same
   * bytes every time (a memory struct recycled for another frame, as
   * before issue 13, would not) */
  GstMemory *mem[64];
  const guint8 *data[64];
  unsigned n_mem;
  unsigned long rewrapped[2];
} Window;

/* Notes the bytes the first memory of @buf wraps in @w (window @half). */
static void
note_memory (Window * w, unsigned half, GstBuffer * buf)
{
  GstMemory *mem = gst_buffer_n_memory (buf) ? gst_buffer_peek_memory (buf,
      0) : NULL;
  GstMapInfo map;
  unsigned i;

  if (mem == NULL || !gst_memory_map (mem, &map, GST_MAP_READ))
    return;
  for (i = 0; i < w->n_mem && w->mem[i] != mem; i++);
  if (i < w->n_mem) {
    if (w->data[i] != map.data)
      w->rewrapped[half]++;
    w->data[i] = map.data;
  } else if (w->n_mem < G_N_ELEMENTS (w->mem)) {
    w->mem[w->n_mem] = mem;
    w->data[w->n_mem++] = map.data;
  }
  gst_memory_unmap (mem, &map);
}

static GstPadProbeReturn
on_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Window *w = data;
  unsigned half = w->frames / FRAMES, k = w->frames % FRAMES;

  stream_thread = 1;
  if (half < 2 && k == WARM) {
    w->n_mem = 0;
    __atomic_store_n (&in_window, 1, __ATOMIC_RELAXED);
    w->s0[half] = count_stream ();
    w->c0[half] = count ();
  }
  if (half < 2 && k == WARM + WINDOW) {
    __atomic_store_n (&in_window, 0, __ATOMIC_RELAXED);
    w->s1[half] = count_stream ();
    w->c1[half] = count ();
  }
  if (half < 2 && k >= WARM && k < WARM + WINDOW)
    note_memory (w, half, GST_PAD_PROBE_INFO_BUFFER (info));
  w->frames++;
  return GST_PAD_PROBE_OK;
}

/* Whether @r passes; prints it for @side. */
static int
check (const char *side, const Report * r, int check_rewrapped)
{
  static const char *halves[] = { "zero copy", "copy path" };
  int h, ok = 1;

  for (h = 0; h < 2; h++) {
    printf ("%s, %s: %lu allocations over %d steady-state frames (%.2f per "
        "frame), %lu of them on the streaming thread\n", side, halves[h],
        r->process[h], WINDOW, (double) r->process[h] / WINDOW, r->stream[h]);
    if (r->process[h] >= ALLOWED || r->stream[h] != 0)
      ok = 0;
    if (check_rewrapped) {
      printf ("%s, %s: %lu of its memories wrapped other bytes than before\n",
          side, halves[h], r->rewrapped[h]);
      if (r->rewrapped[h] != 0)
        ok = 0;
    }
  }
  return ok;
}

/* ---- producer (child) ---- */

static int
run_producer (const char *sock, int report_fd)
{
  GstElement *pipeline, *src, *sink;
  GstCaps *caps;
  GstQuery *query;
  GstBufferPool *pool = NULL, *sysmem_pool;
  GstStructure *config;
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;
  Window w = { 0, };
  Report r = { {0,}, };
  unsigned long c0[2] = { 0, }, c1[2] = { 0, };
  int k, h, ok = 0;

  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "RGBA",
      "width", G_TYPE_INT, 320, "height", G_TYPE_INT, 240,
      "framerate", GST_TYPE_FRACTION, 0, 1, NULL);
  pipeline = gst_pipeline_new (NULL);
  src = gst_element_factory_make ("appsrc", NULL);
  sink = gst_element_factory_make ("pinnedshmsink", NULL);
  if (src == NULL || sink == NULL)
    return 2;
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE,
      "max-buffers", (guint64) 2, NULL);
  g_object_set (sink, "socket-path", sock, "pool-size", 8,
      "max-client-buffers", 8, "wait-for-connection", TRUE, "sync", FALSE,
      "async", FALSE, NULL);
  gst_bin_add_many (GST_BIN (pipeline), src, sink, NULL);
  gst_element_link (src, sink);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  pad = gst_element_get_static_pad (src, "src");
  query = gst_query_new_allocation (caps, TRUE);
  if (gst_pad_peer_query (pad, query)
      && gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, NULL, NULL);
  gst_query_unref (query);
  gst_object_unref (pad);
  if (pool == NULL || !gst_buffer_pool_set_active (pool, TRUE)) {
    fprintf (stderr, "producer: pinnedshmsink proposed no usable pool\n");
    return 2;
  }
  /* the second half: system memory, recycled as a real producer's would
   * be; the sink copies it */
  sysmem_pool = gst_buffer_pool_new ();
  config = gst_buffer_pool_get_config (sysmem_pool);
  gst_buffer_pool_config_set_params (config, caps, 320 * 240 * 4, 4, 0);
  if (!gst_buffer_pool_set_config (sysmem_pool, config)
      || !gst_buffer_pool_set_active (sysmem_pool, TRUE)) {
    fprintf (stderr, "producer: no system memory pool\n");
    return 2;
  }
  /* the sink's streaming thread, counted apart */
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &w, NULL);
  gst_object_unref (pad);

  for (k = 0; k < 2 * FRAMES; k++) {
    GstBufferPool *from = k < FRAMES ? pool : sysmem_pool;
    GstBuffer *buf = NULL;

    if (k % FRAMES == WARM)
      c0[k / FRAMES] = count ();
    if (k % FRAMES == WARM + WINDOW)
      c1[k / FRAMES] = count ();
    if (gst_buffer_pool_acquire_buffer (from, &buf, NULL) != GST_FLOW_OK)
      break;
    GST_BUFFER_PTS (buf) = k * GST_MSECOND;
    gst_buffer_memset (buf, 0, k & 0xff, 64);
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  ok = k == 2 * FRAMES;
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (msg == NULL || GST_MESSAGE_TYPE (msg) != GST_MESSAGE_EOS)
    ok = 0;
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  if (w.frames != 2 * FRAMES)
    ok = 0;
  if (ok) {
    for (h = 0; h < 2; h++) {
      r.process[h] = c1[h] - c0[h];
      r.stream[h] = w.s1[h] - w.s0[h];
    }
    if (write (report_fd, &r, sizeof (r)) != sizeof (r))
      ok = 0;
  }
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  gst_buffer_pool_set_active (sysmem_pool, FALSE);
  gst_object_unref (sysmem_pool);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  gst_caps_unref (caps);
  return ok ? 0 : 2;
}

/* ---- consumer (this process) ---- */

int
main (int argc, char **argv)
{
  char dir[256], sock[300];
  int fds[2], status, side_consumer, h, ret = 2;
  Report prod = { {0,}, }, cons = { {0,}, };
  Window w = { 0, };
  GstElement *pipeline, *src;
  GstBus *bus;
  GstMessage *msg;
  GstPad *pad;
  gchar *desc;
  pid_t pid;

  if (argc != 2 || (strcmp (argv[1], "producer") != 0
          && strcmp (argv[1], "consumer") != 0)) {
    fprintf (stderr, "usage: %s producer|consumer\n", argv[0]);
    return 2;
  }
  side_consumer = strcmp (argv[1], "consumer") == 0;
  /* g_slice must go through malloc to be counted; GLib reads G_SLICE
   * once, before main () (meson's environment sets it; run by hand, this
   * re-executes itself with it) */
  if (g_strcmp0 (getenv ("G_SLICE"), "always-malloc") != 0) {
    setenv ("G_SLICE", "always-malloc", 1);
    execv ("/proc/self/exe", argv);
    fprintf (stderr, "re-exec: %s\n", strerror (errno));
    return 2;
  }

  /* is the counter in the path? valgrind, for one, replaces malloc in
   * this executable too: then nothing can be counted here */
  {
    void *(*volatile m) (size_t) = malloc;
    unsigned long before = count ();
    void *p = m (16);

    free (p);
    if (count () == before) {
      printf ("SKIP: malloc () is not this executable's here (valgrind?): "
          "allocations cannot be counted\n");
      return 77;
    }
  }

  if (getenv ("PF_ALLOC_BACKTRACE") != NULL) {
    void *frame;

    backtrace (&frame, 1);      /* loads what it needs now, not in malloc */
    trace_stream = 1;
  }

  if (pf_test_make_tmpdir (dir, sizeof (dir), "shm-alloc") < 0
      || pipe (fds) < 0)
    return 2;
  snprintf (sock, sizeof (sock), "%s/s", dir);

  pid = pf_test_fork ();
  if (pid < 0)
    return 2;
  if (pid == 0) {
    close (fds[0]);
    gst_init (NULL, NULL);
    _exit (run_producer (sock, fds[1]));
  }
  close (fds[1]);

  gst_init (NULL, NULL);
  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=-1 ! fakesink sync=false", sock);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  if (pipeline == NULL) {
    pf_test_kill_children ();
    goto out;
  }
  /* on the source's streaming thread, after its create () */
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  pad = gst_element_get_static_pad (src, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &w, NULL);
  gst_object_unref (pad);
  gst_object_unref (src);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS
      && w.frames == 2 * FRAMES)
    ret = 0;
  else
    fprintf (stderr, "consumer: %u of %d frames, %s\n", w.frames, 2 * FRAMES,
        msg ? GST_MESSAGE_TYPE_NAME (msg) : "timed out");
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);

out:
  if (read (fds[0], &prod, sizeof (prod)) != sizeof (prod))
    ret = 2;
  close (fds[0]);
  status = pf_test_wait (pid);
  if (pf_test_exit_code (status) != 0) {
    fprintf (stderr, "producer exited with %d\n", pf_test_exit_code (status));
    ret = 2;
  }
  pf_test_remove_tree (dir);
  if (ret != 0)
    return ret;

  for (h = 0; h < 2; h++) {
    cons.process[h] = w.c1[h] - w.c0[h];
    cons.stream[h] = w.s1[h] - w.s0[h];
    cons.rewrapped[h] = w.rewrapped[h];
  }
  /* both printed, the side asked for decides */
  if (side_consumer) {
    check ("producer (not checked)", &prod, 0);
    return check ("consumer", &cons, 1) ? 0 : 1;
  }
  check ("consumer (not checked)", &cons, 1);
  return check ("producer", &prod, 0) ? 0 : 1;
}
