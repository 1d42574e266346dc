/* pinnedflow CUDA tests: helpers shared by test-cuda.c and
 * test-cuda-interop.c (see cuda-test-util.h)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda-test-util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gst/app/gstappsrc.h>

/* ------------------------------------------------------------ frames */

guint8
cuda_test_pattern (guint seed, guint plane, guint row, guint col)
{
  return (guint8) (seed * 31u + plane * 71u + row * 13u + col * 7u +
      (col >> 8) * 3u);
}

static void
fill_frame (GstVideoFrame * frame, const GstPinnedCudaLayout * l, guint seed)
{
  guint p, r, c;

  for (p = 0; p < l->n_planes; p++) {
    guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
    for (r = 0; r < l->rows[p]; r++) {
      for (c = 0; c < l->width_bytes[p]; c++)
        d[r * stride + c] = cuda_test_pattern (seed, p, r, c);
      /* Padding gets junk that must not be copied over the frame. */
      for (; c < (guint) stride; c++)
        d[r * stride + c] = 0xEE;
    }
  }
}

gboolean
cuda_test_fill_buffer (GstBuffer * buf, const GstVideoInfo * info,
    const GstPinnedCudaLayout * l, guint seed)
{
  GstVideoFrame frame;

  if (!gst_video_frame_map (&frame, info, buf, GST_MAP_WRITE))
    return FALSE;
  fill_frame (&frame, l, seed);
  gst_video_frame_unmap (&frame);
  return TRUE;
}

guint
cuda_test_check_plane (const guint8 * data, gsize stride,
    const GstPinnedCudaLayout * l, guint p, guint seed)
{
  guint r, c, bad = 0;

  for (r = 0; r < l->rows[p]; r++)
    for (c = 0; c < l->width_bytes[p]; c++)
      bad += data[r * stride + c] != cuda_test_pattern (seed, p, r, c);
  return bad;
}

guint
cuda_test_check_frame (GstVideoFrame * frame, const GstPinnedCudaLayout * l,
    guint seed)
{
  guint p, bad = 0;

  for (p = 0; p < l->n_planes; p++)
    bad += cuda_test_check_plane (GST_VIDEO_FRAME_PLANE_DATA (frame, p),
        GST_VIDEO_FRAME_PLANE_STRIDE (frame, p), l, p, seed);
  return bad;
}

GstCaps *
cuda_test_make_caps (const gchar * format, gint w, gint h)
{
  return gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, format,
      "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
}

/* ------------------------------------------------------------ pipelines */

gchar *
cuda_test_wait_eos_or_error_full (GstElement * pipeline, guint * warnings,
    gchar ** warning)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  gchar *res = NULL;

  for (;;) {
    GError *err = NULL;

    msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
    if (msg == NULL || GST_MESSAGE_TYPE (msg) != GST_MESSAGE_WARNING)
      break;
    gst_message_parse_warning (msg, &err, NULL);
    if (warnings && (*warnings)++ == 0 && warning)
      *warning = g_strdup (err->message);
    g_error_free (err);
    gst_message_unref (msg);
  }
  if (msg == NULL) {
    gst_object_unref (bus);
    return g_strdup ("timeout: neither EOS nor an error within 60 s");
  }
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    res = g_strdup_printf ("%s | %s", err->message, dbg ? dbg : "");
    GST_INFO ("error: %s", res);
    g_error_free (err);
    g_free (dbg);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  return res;
}

gchar *
cuda_test_wait_eos_or_error (GstElement * pipeline)
{
  return cuda_test_wait_eos_or_error_full (pipeline, NULL, NULL);
}

/* ------------------------------------------------------------ emulator */

gboolean
cuda_test_emu_load (CudaTestEmu * emu, const gchar * path)
{
  void *h = path ? dlopen (path, RTLD_NOW | RTLD_LOCAL) : NULL;

  if (h == NULL)
    return FALSE;
  emu->query = dlsym (h, "pfemu_query");
  emu->reset = dlsym (h, "pfemu_reset");
  emu->live_total = dlsym (h, "pfemu_live_total");
  emu->leak_report = dlsym (h, "pfemu_leak_report");
  return emu->query && emu->reset && emu->live_total && emu->leak_report;
}

/* ------------------------------------------------------ process rule */

/* libcuda.so mapped in this process: on a real runtime, CUDA may have
 * been initialised (nvcodec's plugin_init calls cuInit). */
static gboolean
libcuda_loaded (void)
{
  gchar *maps = NULL;
  gboolean loaded = g_file_get_contents ("/proc/self/maps", &maps, NULL,
      NULL) && strstr (maps, "/libcuda.so") != NULL;

  g_free (maps);
  return loaded;
}

gboolean
cuda_test_probe_in_child (gchar * (*probe) (void), const CudaTestEmu * emu,
    gchar ** answer)
{
  GString *out;
  int fds[2], status = 0;
  gboolean ok = FALSE;
  char buf[512];
  ssize_t n;
  pid_t pid;

  *answer = NULL;
  if (emu == NULL && libcuda_loaded ()) {
    *answer = probe ();
    return TRUE;
  }
  out = g_string_new (NULL);
  if (pipe (fds) != 0) {
    *answer = g_strdup_printf ("pipe: %s", g_strerror (errno));
    g_string_free (out, TRUE);
    return FALSE;
  }
  pid = fork ();
  if (pid == 0) {
    gchar *res;

    close (fds[0]);
    res = probe ();
    /* 'A' and the answer, or 'N' for none */
    if (write (fds[1], res ? "A" : "N", 1) == 1 && res)
      n = write (fds[1], res, strlen (res));
    _exit (0);
  }
  close (fds[1]);
  if (pid < 0) {
    close (fds[0]);
    *answer = g_strdup_printf ("fork: %s", g_strerror (errno));
    g_string_free (out, TRUE);
    return FALSE;
  }
  while ((n = read (fds[0], buf, sizeof (buf))) > 0 ||
      (n < 0 && errno == EINTR))
    if (n > 0)
      g_string_append_len (out, buf, n);
  close (fds[0]);
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0 || out->len == 0) {
    *answer = g_strdup_printf ("the probe process %s %d", WIFSIGNALED (status)
        ? "died of signal" : "exited with", WIFSIGNALED (status) ?
        WTERMSIG (status) : WEXITSTATUS (status));
  } else {
    ok = TRUE;
    if (out->str[0] == 'A')
      *answer = g_strdup (out->str + 1);
  }
  g_string_free (out, TRUE);
  return ok;
}

gboolean
cuda_test_check_fork (const gchar * suite, const CudaTestEmu * emu)
{
  if (emu != NULL) {
    if (emu->query ("driver.initialized") == 0)
      return TRUE;
    g_printerr ("FAIL: %s: CUDA was initialised in main(), before the "
        "suite forks its tests: they could not use it\n", suite);
    return FALSE;
  }
  if (libcuda_loaded () && g_strcmp0 (g_getenv ("CK_FORK"), "no") != 0) {
    g_print ("%s: libcuda.so is loaded in the main process (CUDA may be "
        "initialised: a registry scan without the plugin scanner?): the "
        "tests run without forking (CK_FORK=no)\n", suite);
    g_setenv ("CK_FORK", "no", TRUE);
  }
  return TRUE;
}

void
cuda_test_load_features (const gchar * const *names)
{
  for (; *names; names++) {
    GstPluginFeature *f = gst_registry_lookup_feature (gst_registry_get (),
        *names);
    GstPluginFeature *loaded;

    if (f == NULL)
      continue;
    loaded = gst_plugin_feature_load (f);
    if (loaded)
      gst_object_unref (loaded);
    gst_object_unref (f);
  }
}

/* ------------------------------------------------------------ producer */

#define PRODUCER_ARG "--producer"

gboolean
cuda_test_spawn_producer (const gchar * sock, const gchar * format, gint w,
    gint h, guint n, GPid * pid, GError ** error)
{
  gchar *exe = g_file_read_link ("/proc/self/exe", error);
  gchar *wstr = g_strdup_printf ("%d", w);
  gchar *hstr = g_strdup_printf ("%d", h);
  gchar *nstr = g_strdup_printf ("%u", n);
  gchar *argv[] = { exe, (gchar *) PRODUCER_ARG, (gchar *) sock,
    (gchar *) format, wstr, hstr, nstr, NULL
  };
  gboolean ok = exe != NULL &&
      g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
      pid, error);

  g_free (exe);
  g_free (wstr);
  g_free (hstr);
  g_free (nstr);
  return ok;
}

/* Frames of the pattern written into pinnedshmsink's pool (as an upstream
 * element would after its ALLOCATION query): a slot comes back only when
 * the consumer released it (max-client-buffers above the pool size), so
 * the producer waits instead of the sink dropping. */
static int
run_producer (const gchar * sock, const gchar * format, gint w, gint h, guint n)
{
  GstElement *pipeline, *src;
  GstBufferPool *pool = NULL;
  GstCaps *caps = cuda_test_make_caps (format, w, h);
  GstVideoInfo info;
  GstPinnedCudaLayout layout;
  GstPad *pad;
  GstQuery *query;
  gchar *desc, *err;
  guint i;

  gst_video_info_from_caps (&info, caps);
  gst_pinned_cuda_layout_init (&layout, &info);
  desc = g_strdup_printf ("appsrc name=src format=time ! pinnedshmsink "
      "socket-path=%s wait-for-connection=true pool-size=6 "
      "max-client-buffers=64 sync=false", sock);
  pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  if (pipeline == NULL)
    return 2;
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  g_object_set (src, "caps", caps, NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  pad = gst_element_get_static_pad (src, "src");
  query = gst_query_new_allocation (caps, TRUE);
  if (gst_pad_peer_query (pad, query) &&
      gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, NULL, NULL, NULL);
  gst_query_unref (query);
  gst_object_unref (pad);
  if (pool == NULL || !gst_buffer_pool_set_active (pool, TRUE)) {
    g_printerr ("producer: pinnedshmsink proposed no usable pool\n");
    return 3;
  }
  for (i = 0; i < n; i++) {
    GstBuffer *buf = NULL;
    if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
      break;
    cuda_test_fill_buffer (buf, &info, &layout, i);
    GST_BUFFER_PTS (buf) = i * GST_MSECOND;
    GST_BUFFER_DURATION (buf) = GST_MSECOND;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  err = cuda_test_wait_eos_or_error (pipeline);
  if (err)
    g_printerr ("producer: %s\n", err);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  gst_object_unref (src);
  gst_object_unref (pipeline);
  gst_caps_unref (caps);
  if (err == NULL)
    return 0;
  g_free (err);
  return 1;
}

int
cuda_test_producer_main (int argc, char **argv)
{
  if (argc != 7 || strcmp (argv[1], PRODUCER_ARG) != 0)
    return -1;
  gst_init (NULL, NULL);
  return run_producer (argv[2], argv[3], atoi (argv[4]), atoi (argv[5]),
      (guint) atoi (argv[6]));
}
