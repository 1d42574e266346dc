/* Pool benchmark: acquire + write a full frame + release, through
 * GstPinnedBufferPool and a default GstVideoBufferPool, in the same run.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: pool-bench [--iterations N] [--rounds R] [--width W] [--height H]
 *                   [--format FMT] [--max-buffers M] [--in-flight K]
 *                   [--segment-flags lock+seal-writers|hugepages|none...]
 *                   [--csv]
 * Rounds alternate which pool goes first; each round times N frames per
 * pool after a short warm-up. Reported: median and best ns/frame over the
 * rounds, the ratio pinned/default of the medians, the bare acquire+release
 * cost, and the one-time activation cost (median of several activations).
 * --in-flight K keeps up to K frames acquired (a FIFO, like a queue
 * downstream): with K > 1 successive frames use different buffers, so the
 * working set can exceed the CPU caches.
 * --csv prints the same figures as CSV rows instead of the text (one row
 * per pool: pool,width,height,bytes,activation_ms,write_ns_median,
 * write_ns_best,bare_ns; pool is pinned or default), for bench/plot.py.
 */
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>

#include <stdlib.h>
#include <string.h>

typedef struct
{
  const gchar *name;
  gboolean pinned;
  GstBufferPool *pool;
  gdouble *write_ns;            /* per round */
  gdouble *bare_ns;             /* per round */
  gdouble activate_ms;
  gchar *state;
} Bench;

static gint iterations = 3000, rounds = 4, width = 1920, height = 1080,
    max_buffers = 4, in_flight = 1;
static gchar *format_str = NULL, *flags_str = NULL;
static gboolean csv;

static GOptionEntry entries[] = {
  {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations,
      "Frames per pool per round (default 3000)", "N"},
  {"rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
      "Rounds, alternating the order (default 4)", "R"},
  {"width", 'w', 0, G_OPTION_ARG_INT, &width, "Frame width (1920)", "W"},
  {"height", 'h', 0, G_OPTION_ARG_INT, &height, "Frame height (1080)", "H"},
  {"format", 'f', 0, G_OPTION_ARG_STRING, &format_str,
      "Video format (RGBA)", "FMT"},
  {"max-buffers", 'm', 0, G_OPTION_ARG_INT, &max_buffers,
      "Pool max-buffers (4)", "M"},
  {"segment-flags", 's', 0, G_OPTION_ARG_STRING, &flags_str,
      "Pinned segment flags, '+'-separated nicks or 'none' (default: the "
        "pool default, lock+seal-writers)", "FLAGS"},
  {"in-flight", 'k', 0, G_OPTION_ARG_INT, &in_flight,
      "Frames held at once, FIFO (1: release before the next acquire)", "K"},
  {"csv", 0, 0, G_OPTION_ARG_NONE, &csv,
      "CSV rows instead of the text (for bench/plot.py)", NULL},
  {NULL}
};

static int
cmp_double (const void *a, const void *b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;
  return x < y ? -1 : x > y;
}

static gdouble
median (const gdouble * v, gint n)
{
  gdouble *c = g_memdup2 (v, sizeof (gdouble) * n), m;

  qsort (c, n, sizeof (gdouble), cmp_double);
  m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  g_free (c);
  return m;
}

static gdouble
minimum (const gdouble * v, gint n)
{
  gdouble m = v[0];
  gint i;

  for (i = 1; i < n; i++)
    m = MIN (m, v[i]);
  return m;
}

static gboolean have_flags = FALSE;
static GstPinnedSegmentFlags segment_flags;

static gboolean
parse_flags (const gchar * str)
{
  GFlagsClass *k = g_type_class_ref (GST_TYPE_PINNED_SEGMENT_FLAGS);
  gchar **nicks = g_strsplit (str, "+", -1);
  gboolean ok = TRUE;
  guint i;

  segment_flags = 0;
  for (i = 0; nicks[i] && ok; i++) {
    GFlagsValue *v = g_flags_get_value_by_nick (k, g_strstrip (nicks[i]));

    if (v)
      segment_flags |= v->value;
    else if (strcmp (nicks[i], "none") != 0)
      ok = FALSE;
  }
  g_strfreev (nicks);
  g_type_class_unref (k);
  have_flags = ok;
  return ok;
}

static GstBufferPool *
configure (gboolean pinned, GstCaps * caps, gsize size)
{
  GstBufferPool *pool = pinned ? gst_pinned_buffer_pool_new () :
      gst_video_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);

  gst_buffer_pool_config_set_params (config, caps, size, 2, max_buffers);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (pinned && have_flags)
    gst_pinned_buffer_pool_config_set_segment_flags (config, segment_flags);
  if (!gst_buffer_pool_set_config (pool, config)) {
    g_printerr ("cannot configure the %s pool\n", pinned ? "pinned" :
        "default");
    exit (1);
  }
  return pool;
}

/* Acquire, write the whole frame, release (up to in_flight frames held,
 * oldest released first): ns per frame. */
static gdouble
run_write (GstBufferPool * pool, gint n, guint8 seed)
{
  GQueue held = G_QUEUE_INIT;
  gint64 start = g_get_monotonic_time ();
  gint i;

  for (i = 0; i < n; i++) {
    GstBuffer *buf = NULL;
    GstMapInfo map;

    if (held.length >= (guint) in_flight)
      gst_buffer_unref (g_queue_pop_head (&held));
    if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK
        || !gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
      g_printerr ("acquire/map failed\n");
      exit (1);
    }
    memset (map.data, (guint8) (seed + i), map.size);
    gst_buffer_unmap (buf, &map);
    g_queue_push_tail (&held, buf);
  }
  while (held.length > 0)
    gst_buffer_unref (g_queue_pop_head (&held));
  return (g_get_monotonic_time () - start) * 1000.0 / n;
}

/* Acquire + release only: the pool's own cost. */
static gdouble
run_bare (GstBufferPool * pool, gint n)
{
  gint64 start = g_get_monotonic_time ();
  gint i;

  for (i = 0; i < n; i++) {
    GstBuffer *buf = NULL;

    if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK) {
      g_printerr ("acquire failed\n");
      exit (1);
    }
    gst_buffer_unref (buf);
  }
  return (g_get_monotonic_time () - start) * 1000.0 / n;
}

/* Median of a few fresh activations (set_active TRUE: segment creation,
 * prefault and mlock for the pinned pool; min-buffers allocations for the
 * default one). Leaves one pool active in b->pool. */
static void
activate (Bench * b, GstCaps * caps, gsize size)
{
  gdouble t[5];
  gint i;

  for (i = 0; i < 5; i++) {
    GstBufferPool *pool = configure (b->pinned, caps, size);
    gint64 start = g_get_monotonic_time ();

    if (!gst_buffer_pool_set_active (pool, TRUE)) {
      g_printerr ("cannot activate the %s pool\n", b->name);
      exit (1);
    }
    t[i] = (g_get_monotonic_time () - start) / 1000.0;
    if (i < 4)
      gst_object_unref (pool);
    else
      b->pool = pool;
  }
  b->activate_ms = median (t, 5);
  if (b->pinned) {
    GstPinnedSegment *seg = gst_pinned_buffer_pool_get_segment (b->pool);
    b->state = gst_pinned_segment_describe_state (pf_segment_get_state (seg));
    pf_segment_unref (seg);
  } else {
    b->state = g_strdup ("system memory");
  }
}

int
main (int argc, char **argv)
{
  GOptionContext *ctx = g_option_context_new ("- pinned vs default pool");
  GError *err = NULL;
  GstVideoInfo info;
  GstCaps *caps;
  Bench b[2] = {
    {"pinned", TRUE,},
    {"default", FALSE,},
  };
  gint r, k, warm;
  gdouble wm[2], bm[2];

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("%s\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  if (iterations < 1 || rounds < 1 || max_buffers < 2 || in_flight < 1
      || in_flight > max_buffers) {
    g_printerr ("need iterations >= 1, rounds >= 1, max-buffers >= 2, "
        "1 <= in-flight <= max-buffers\n");
    return 2;
  }

  if (flags_str && !parse_flags (flags_str)) {
    g_printerr ("bad --segment-flags %s (nicks: hugepages, lock, "
        "seal-writers, none)\n", flags_str);
    return 2;
  }

  caps = gst_caps_new_simple ("video/x-raw",
      "format", G_TYPE_STRING, format_str ? format_str : "RGBA",
      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
  if (!gst_video_info_from_caps (&info, caps)) {
    g_printerr ("bad caps %" GST_PTR_FORMAT "\n", caps);
    return 2;
  }

  for (k = 0; k < 2; k++) {
    b[k].write_ns = g_new0 (gdouble, rounds);
    b[k].bare_ns = g_new0 (gdouble, rounds);
    activate (&b[k], caps, info.size);
  }

  /* Warm-up: first touches of the default pool's memory, caches. */
  warm = MAX (50, iterations / 20);
  for (k = 0; k < 2; k++)
    run_write (b[k].pool, warm, 0);

  for (r = 0; r < rounds; r++) {
    for (k = 0; k < 2; k++) {
      Bench *x = &b[(r % 2) ? 1 - k : k];
      x->write_ns[r] = run_write (x->pool, iterations, (guint8) r);
      x->bare_ns[r] = run_bare (x->pool, iterations * 10);
    }
  }

  for (k = 0; k < 2; k++) {
    wm[k] = median (b[k].write_ns, rounds);
    bm[k] = median (b[k].bare_ns, rounds);
  }
  if (csv) {
    g_print ("pool,width,height,bytes,activation_ms,write_ns_median,"
        "write_ns_best,bare_ns\n");
    for (k = 0; k < 2; k++)
      g_print ("%s,%d,%d,%" G_GSIZE_FORMAT ",%.3f,%.0f,%.0f,%.0f\n",
          b[k].name, width, height, info.size,
          b[k].activate_ms, wm[k], minimum (b[k].write_ns, rounds), bm[k]);
    goto done;
  }
  g_print ("pool bench: %dx%d %s, %" G_GSIZE_FORMAT " bytes/frame, "
      "max-buffers %d, in-flight %d, %d rounds x %d frames per pool "
      "(order alternating)\n", width, height,
      gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&info)), info.size,
      max_buffers, in_flight, rounds, iterations);
  g_print ("pinned segment: %s\n\n", b[0].state);
  g_print ("%-34s %14s %14s\n", "", "pinned", "default");
  g_print ("%-34s %14.3f %14.3f\n", "activation (ms, median of 5)",
      b[0].activate_ms, b[1].activate_ms);
  g_print ("%-34s %14.0f %14.0f\n", "acquire+write+release (ns/frame)",
      wm[0], wm[1]);
  g_print ("%-34s %14.0f %14.0f\n", "  best round (ns/frame)",
      minimum (b[0].write_ns, rounds), minimum (b[1].write_ns, rounds));
  g_print ("%-34s %14.2f %14.2f\n", "  write bandwidth (GB/s)",
      info.size / wm[0], info.size / wm[1]);
  g_print ("%-34s %14.0f %14.0f\n", "acquire+release only (ns)", bm[0], bm[1]);
  g_print ("\nratio pinned/default (acquire+write+release, median): %.3f\n",
      wm[0] / wm[1]);
  g_print ("per round (ns/frame) pinned:");
  for (r = 0; r < rounds; r++)
    g_print (" %.0f", b[0].write_ns[r]);
  g_print ("\nper round (ns/frame) default:");
  for (r = 0; r < rounds; r++)
    g_print (" %.0f", b[1].write_ns[r]);
  g_print ("\n");

done:
  for (k = 0; k < 2; k++) {
    gst_buffer_pool_set_active (b[k].pool, FALSE);
    gst_object_unref (b[k].pool);
    g_free (b[k].write_ns);
    g_free (b[k].bare_ns);
    g_free (b[k].state);
  }
  gst_caps_unref (caps);
  g_free (format_str);
  g_free (flags_str);
  return 0;
}
