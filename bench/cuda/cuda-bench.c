/* cuda-bench: host-to-device upload throughput and latency
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For 1080p and 4K RGBA frames, in one run:
 *   raw-pinned    cudaMemcpy2DAsync from a registered segment (the limit)
 *   raw-pageable  cudaMemcpy2DAsync from malloc'ed memory
 *   two-copy      memcpy into a private pinned buffer, then the DMA (the
 *                 usual workaround)
 *   element-pinned    appsrc (GstPinnedBufferPool) ! pinnedcudaupload
 *   element-pageable  appsrc (system memory) ! pinnedcudaupload (staged)
 *   nvcodec-cudaupload  appsrc (system memory) ! cudaupload, where present
 * Throughput keeps several frames in flight; latency is one frame at a
 * time, submit to copy complete (median). Ratios are against raw-pinned
 * and between the element and the alternatives, from the same run.
 * Each row says which path its copies took (the "copies" column): the raw
 * rows whether cudaHostRegister of their segment succeeded (DMA from
 * registered pages, or pageable copies the driver stages itself where it
 * failed: the failure is named), the element rows what pinnedcudaupload
 * counted (its stats: pinned-copies = DMA from a registered segment,
 * staged-copies = through its registered bounce segment, and
 * registration failures), nvcodec's cudaupload its own copy (not counted).
 *
 * Without a usable CUDA device it says so and exits 0. Against the CPU
 * emulator (tests/cuda) it refuses unless PFBENCH_ALLOW_EMULATOR=1, and
 * then labels every figure as emulator timings, not GPU performance.
 * PFBENCH_FRAMES overrides the frame count of the throughput runs.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <gst/pinnedflow/pinnedflow.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/pinnedcuda/gstpinnedcuda.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

#define LAT_FRAMES 30
#define INFLIGHT 3

static const GstPinnedCudaRuntime *rt;
static gboolean emulator;

typedef struct
{
  const gchar *name;
  gboolean ran;
  gdouble gbps;                 /* throughput, GB/s (1e9 bytes) */
  gdouble lat_ms;               /* median latency */
  gchar *note;
  gchar *copies;                /* the path the copies took */
} Result;

static void
die_cuda (const gchar * call, GstPinnedCudaError err)
{
  g_printerr ("cuda-bench: %s failed: %s\n", call, rt->GetErrorString (err));
  exit (1);
}

#define CK(call) G_STMT_START { GstPinnedCudaError e_ = (call);               \
    if (e_ != GST_PINNED_CUDA_SUCCESS) die_cuda (#call, e_); } G_STMT_END

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;
  return x < y ? -1 : x > y;
}

static gdouble
median (gdouble * v, guint n)
{
  qsort (v, n, sizeof (gdouble), (int (*)(const void *, const void *))
      cmp_double);
  return n ? v[n / 2] : 0;
}

/* ------------------------------------------------------------ raw copies */

typedef enum
{ RAW_PINNED, RAW_PAGEABLE, RAW_TWO_COPY } RawKind;

static void
run_raw (RawKind kind, gsize row, gsize rows, guint frames, Result * r)
{
  gsize size = row * rows, page = pf_page_size ();
  gsize slot = (size + page - 1) / page * page;
  pf_segment *seg = NULL;
  guint8 *pinned = NULL, *pageable = NULL, *dev[INFLIGHT];
  gsize pitch = 0;
  GstPinnedCudaStream stream;
  GstPinnedCudaEvent ev[INFLIGHT];
  gdouble lat[LAT_FRAMES];
  GstPinnedCudaError reg;
  gint64 t0;
  guint i;

  if (pf_segment_new ("cuda-bench", slot * INFLIGHT, PF_SEGMENT_FLAG_LOCK,
          &seg) < 0) {
    g_printerr ("cuda-bench: cannot create a segment\n");
    exit (1);
  }
  pinned = pf_segment_get_base (seg);
  memset (pinned, 0x5a, slot * INFLIGHT);
  /* where registration fails the copies below are pageable ones, staged
   * by the driver: measured anyway, and said */
  reg = rt->HostRegister (pinned, slot * INFLIGHT,
      GST_PINNED_CUDA_HOST_REGISTER_PORTABLE);
  if (reg != GST_PINNED_CUDA_SUCCESS)
    rt->GetLastError ();
  if (kind == RAW_PAGEABLE)
    r->copies = g_strdup ("pageable: the driver stages them");
  else if (reg == GST_PINNED_CUDA_SUCCESS)
    r->copies = g_strdup (kind == RAW_TWO_COPY ? "memcpy, then DMA from "
        "registered pages" : "DMA from registered pages");
  else
    r->copies = g_strdup_printf ("%spageable: cudaHostRegister failed (%s), "
        "the driver stages them", kind == RAW_TWO_COPY ? "memcpy, then " : "",
        rt->GetErrorName (reg));
  pageable = g_malloc (size);
  memset (pageable, 0x3c, size);
  CK (rt->StreamCreateWithFlags (&stream, GST_PINNED_CUDA_STREAM_NON_BLOCKING));
  for (i = 0; i < INFLIGHT; i++) {
    CK (rt->MallocPitch ((void **) &dev[i], &pitch, row, rows));
    CK (rt->EventCreateWithFlags (&ev[i],
            GST_PINNED_CUDA_EVENT_DISABLE_TIMING));
  }

  /* one frame: what it costs from "frame ready" to "frame on device" */
#define SUBMIT(k) G_STMT_START {                                          \
    guint s_ = (k) % INFLIGHT;                                            \
    const guint8 *src_ = kind == RAW_PAGEABLE ? pageable : pinned + slot * s_; \
    if (kind == RAW_TWO_COPY)                                             \
      memcpy (pinned + slot * s_, pageable, size);                        \
    CK (rt->Memcpy2DAsync (dev[s_], pitch, src_, row, row, rows,          \
            GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE, stream));                      \
    CK (rt->EventRecord (ev[s_], stream));                                \
  } G_STMT_END

  for (i = 0; i < 3; i++)       /* warm-up */
    SUBMIT (i);
  CK (rt->StreamSynchronize (stream));

  for (i = 0; i < LAT_FRAMES; i++) {
    gint64 t = g_get_monotonic_time ();
    SUBMIT (i);
    CK (rt->EventSynchronize (ev[i % INFLIGHT]));
    lat[i] = (g_get_monotonic_time () - t) / 1000.0;
  }

  t0 = g_get_monotonic_time ();
  for (i = 0; i < frames; i++) {
    if (i >= INFLIGHT)          /* slot reuse: wait for its previous copy */
      CK (rt->EventSynchronize (ev[i % INFLIGHT]));
    SUBMIT (i);
  }
  CK (rt->StreamSynchronize (stream));
  r->gbps = (gdouble) size *frames / ((g_get_monotonic_time () - t0) * 1e3);
  r->lat_ms = median (lat, LAT_FRAMES);
  r->ran = TRUE;
#undef SUBMIT

  for (i = 0; i < INFLIGHT; i++) {
    CK (rt->Free (dev[i]));
    CK (rt->EventDestroy (ev[i]));
  }
  CK (rt->StreamDestroy (stream));
  if (reg == GST_PINNED_CUDA_SUCCESS)
    CK (rt->HostUnregister (pinned));
  pf_segment_unref (seg);
  g_free (pageable);
}

/* ------------------------------------------------------------ pipelines */

typedef enum
{ EL_PINNED, EL_PAGEABLE, EL_NVCODEC } ElKind;

static GstElement *
make_pipeline (ElKind kind, gboolean latency, GstElement ** src,
    GstElement ** sink)
{
  const gchar *up = kind == EL_NVCODEC ? "cudaupload name=up" :
      "pinnedcudaupload name=up max-inflight=" G_STRINGIFY (INFLIGHT);
  gchar *desc = g_strdup_printf ("appsrc name=src format=time ! %s ! %s",
      up, latency ? "appsink name=sink sync=false max-buffers=1" :
      "fakesink name=sink sync=false");
  GstElement *p = gst_parse_launch (desc, NULL);

  g_free (desc);
  if (p == NULL)
    return NULL;
  *src = gst_bin_get_by_name (GST_BIN (p), "src");
  *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  return p;
}

static GstBuffer *
next_buffer (ElKind kind, GstBufferPool * pool, GstBuffer * pageable)
{
  GstBuffer *buf = NULL;

  if (kind == EL_PINNED) {
    if (gst_buffer_pool_acquire_buffer (pool, &buf, NULL) != GST_FLOW_OK)
      return NULL;
  } else {
    /* a new buffer sharing the same (pageable) memory */
    buf = gst_buffer_copy (pageable);
  }
  return buf;
}

static gboolean
wait_eos (GstElement * p)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean ok = m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;

  if (m && !ok) {
    GError *err = NULL;
    gst_message_parse_error (m, &err, NULL);
    g_printerr ("cuda-bench: pipeline error: %s\n", err->message);
    g_error_free (err);
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return ok;
}

/* pinnedcudaupload's own count of the copies it made, added up. */
static void
count_copies (GstElement * p, guint64 * dma, guint64 * staged,
    guint64 * failures)
{
  GstElement *up = gst_bin_get_by_name (GST_BIN (p), "up");
  GstStructure *stats = NULL;
  guint64 v;

  if (up == NULL)
    return;
  g_object_get (up, "stats", &stats, NULL);
  if (stats != NULL) {
    if (gst_structure_get_uint64 (stats, "pinned-copies", &v))
      *dma += v;
    if (gst_structure_get_uint64 (stats, "staged-copies", &v))
      *staged += v;
    if (gst_structure_get_uint64 (stats, "registration-failures", &v))
      *failures += v;
    gst_structure_free (stats);
  }
  gst_object_unref (up);
}

static void
run_element (ElKind kind, gint w, gint h, guint frames, Result * r)
{
  GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING,
      "RGBA", "width", G_TYPE_INT, w, "height", G_TYPE_INT, h, "framerate",
      GST_TYPE_FRACTION, 30, 1, NULL);
  GstVideoInfo info;
  GstBufferPool *pool = NULL;
  GstBuffer *pageable = NULL;
  gdouble lat[LAT_FRAMES];
  guint64 pushed = 0, dma = 0, staged = 0, failures = 0;
  guint pass, i;

  gst_video_info_from_caps (&info, caps);
  if (kind == EL_PINNED) {
    GstStructure *config;
    pool = gst_pinned_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, info.size, INFLIGHT + 3,
        INFLIGHT + 3);
    gst_pinned_buffer_pool_config_set_segment_flags (config,
        GST_PINNED_SEGMENT_FLAG_LOCK);
    if (!gst_buffer_pool_set_config (pool, config) ||
        !gst_buffer_pool_set_active (pool, TRUE)) {
      r->note = g_strdup ("pinned pool unavailable");
      gst_object_unref (pool);
      gst_caps_unref (caps);
      return;
    }
  } else {
    GstMapInfo map;
    pageable = gst_buffer_new_allocate (NULL, info.size, NULL);
    gst_buffer_map (pageable, &map, GST_MAP_WRITE);
    memset (map.data, 0x3c, map.size);
    gst_buffer_unmap (pageable, &map);
  }

  /* pass 0: latency, one frame at a time; pass 1: throughput */
  for (pass = 0; pass < 2; pass++) {
    GstElement *src, *sink, *p = make_pipeline (kind, pass == 0, &src, &sink);
    guint n = pass == 0 ? LAT_FRAMES : frames;
    gint64 t0 = 0;

    if (p == NULL) {
      r->note = g_strdup ("element missing");
      break;
    }
    g_object_set (src, "caps", caps, NULL);
    if (pass == 1)
      g_object_set (src, "max-bytes", (guint64) info.size * 4, "block", TRUE,
          NULL);
    gst_element_set_state (p, GST_STATE_PLAYING);
    for (i = 0; i < n + 2; i++) {
      GstBuffer *buf = next_buffer (kind, pool, pageable);
      gint64 t = g_get_monotonic_time ();
      if (buf == NULL)
        break;
      if (i == 2)
        t0 = t;                 /* after two warm-up frames */
      GST_BUFFER_PTS (buf) = i * GST_MSECOND;
      if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
        break;
      if (pass == 0) {
        GstSample *s = gst_app_sink_pull_sample (GST_APP_SINK (sink));
        if (s == NULL)
          break;
        if (kind != EL_NVCODEC)
          gst_pinned_cuda_buffer_wait (gst_sample_get_buffer (s), NULL);
        /* cudaupload synchronizes its stream before pushing */
        if (i >= 2)
          lat[i - 2] = (g_get_monotonic_time () - t) / 1000.0;
        gst_sample_unref (s);
      }
    }
    gst_app_src_end_of_stream (GST_APP_SRC (src));
    pushed += i;
    if (wait_eos (p) && i == n + 2) {
      if (pass == 0) {
        r->lat_ms = median (lat, LAT_FRAMES);
      } else {
        /* pinnedcudaupload waits for every copy before EOS goes on */
        r->gbps = (gdouble) info.size * n /
            ((g_get_monotonic_time () - t0) * 1e3);
        r->ran = TRUE;
      }
    } else if (r->note == NULL) {
      r->note = g_strdup ("pipeline failed");
    }
    if (kind != EL_NVCODEC)
      count_copies (p, &dma, &staged, &failures);
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (src);
    gst_object_unref (sink);
    gst_object_unref (p);
  }
  if (kind == EL_NVCODEC)
    r->copies = g_strdup ("cudaupload's own copy (not counted)");
  else if (dma > 0 && staged == 0)
    r->copies = g_strdup_printf ("DMA from registered pages (%"
        G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " frames)", dma, pushed);
  else if (staged > 0 && dma == 0)
    r->copies = g_strdup_printf ("staged through the bounce segment (%"
        G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " frames%s)", staged,
        pushed, failures ? ", a registration failed" : "");
  else
    r->copies = g_strdup_printf ("mixed: DMA %" G_GUINT64_FORMAT ", staged %"
        G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " frames, %" G_GUINT64_FORMAT
        " registration failure(s)", dma, staged, pushed, failures);
  if (pool) {
    gst_buffer_pool_set_active (pool, FALSE);
    gst_object_unref (pool);
  }
  if (pageable)
    gst_buffer_unref (pageable);
  gst_caps_unref (caps);
}

/* ------------------------------------------------------------ main */

/* The runtime the loader opened (its lookup, pf-cuda.c) is the emulator. */
static gboolean
runtime_is_emulator (void)
{
  void *h = dlopen (rt->library, RTLD_NOW | RTLD_NOLOAD);
  gboolean res = h != NULL && dlsym (h, "pfemu_query") != NULL;

  if (h)
    dlclose (h);
  return res;
}

int
main (int argc, char **argv)
{
  static const struct
  {
    const gchar *name;
    gint w, h;
    guint frames;
  } sizes[] = { {"1080p RGBA", 1920, 1080, 300}, {"4K RGBA", 3840, 2160, 100} };
  const gchar *label;
  GError *error = NULL;
  guint s, i;

  gst_init (&argc, &argv);
  rt = gst_pinned_cuda_runtime_open_device (0, &error);
  if (rt == NULL) {
    g_print ("cuda-bench: no usable CUDA device, nothing measured: %s\n",
        error->message);
    g_error_free (error);
    return 0;
  }
  emulator = runtime_is_emulator ();
  if (emulator && g_strcmp0 (g_getenv ("PFBENCH_ALLOW_EMULATOR"), "1") != 0) {
    g_print ("cuda-bench: GST_PINNEDFLOW_CUDART is the CPU emulator; its "
        "timings say nothing about a GPU. Refusing (set "
        "PFBENCH_ALLOW_EMULATOR=1 to exercise the code anyway).\n");
    return 0;
  }
  label = emulator ? "  [EMULATOR ON THE CPU - NOT GPU PERFORMANCE]" : "";
  if (emulator)
    g_print ("\n*** EMULATOR RUN: every figure below is CPU emulation, NOT "
        "GPU PERFORMANCE ***\n");
  g_print ("cuda-bench: runtime %s (version %d), device 0, %d frames in "
      "flight%s\n", rt->library, rt->runtime_version, INFLIGHT, label);

  g_print ("cuda-bench: copies: \"DMA from registered pages\" = "
      "cudaMemcpy2DAsync from page-locked (cudaHostRegister'ed) memory; "
      "\"staged\" = copied into a registered buffer first; \"pageable\" = "
      "from unregistered memory, which the driver stages itself\n");

  for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
    Result res[6] = {
      {"raw-pinned (limit)"}, {"raw-pageable"}, {"two-copy (memcpy+DMA)"},
      {"element-pinned"}, {"element-pageable (staged)"},
      {"nvcodec cudaupload"},
    };
    gsize row = (gsize) sizes[s].w * 4;
    guint frames = sizes[s].frames;
    const gchar *env = g_getenv ("PFBENCH_FRAMES");

    if (env && atoi (env) > 0)
      frames = atoi (env);
    run_raw (RAW_PINNED, row, sizes[s].h, frames, &res[0]);
    run_raw (RAW_PAGEABLE, row, sizes[s].h, frames, &res[1]);
    run_raw (RAW_TWO_COPY, row, sizes[s].h, frames, &res[2]);
    run_element (EL_PINNED, sizes[s].w, sizes[s].h, frames, &res[3]);
    run_element (EL_PAGEABLE, sizes[s].w, sizes[s].h, frames, &res[4]);
    if (gst_element_factory_find ("cudaupload") != NULL)
      run_element (EL_NVCODEC, sizes[s].w, sizes[s].h, frames, &res[5]);
    else
      res[5].note = g_strdup ("not installed");

    g_print ("\n%s, %.1f MB/frame, %u frames%s\n", sizes[s].name,
        row * sizes[s].h / 1e6, frames, label);
    g_print ("  %-27s %10s %12s %14s  %s\n", "path", "GB/s", "latency ms",
        "vs raw-pinned", "copies");
    for (i = 0; i < G_N_ELEMENTS (res); i++) {
      if (res[i].ran)
        g_print ("  %-27s %10.2f %12.3f %13.2fx  %s\n", res[i].name,
            res[i].gbps, res[i].lat_ms, res[i].gbps / res[0].gbps,
            res[i].copies ? res[i].copies : "unknown");
      else
        g_print ("  %-27s %10s %12s %14s  (%s)\n", res[i].name, "-", "-", "-",
            res[i].note ? res[i].note : "not run");
    }
    if (res[3].ran) {
      for (i = 1; i < G_N_ELEMENTS (res); i++) {
        if (i == 3 || !res[i].ran)
          continue;
        g_print ("  element-pinned / %-24s throughput %.2fx, latency %.2fx\n",
            res[i].name, res[3].gbps / res[i].gbps,
            res[3].lat_ms > 0 ? res[i].lat_ms / res[3].lat_ms : 0.0);
      }
    }
    for (i = 0; i < G_N_ELEMENTS (res); i++) {
      g_free (res[i].note);
      g_free (res[i].copies);
    }
  }
  if (emulator)
    g_print ("\n*** EMULATOR RUN: NOT GPU PERFORMANCE ***\n");
  return 0;
}
