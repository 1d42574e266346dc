/* pinnedflow CUDA suite: device frames through pinnedshmsrc (issue 32,
 * item 2) on the driver-API stand-in's virtual memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-shm-device frames|nv12|no-vmm|host-only|off
 *   test-shm-device produce SOCKET   (the producer alone, for docs/cuda.md)
 *   test-shm-device produce-cuda SOCKET   (cudaupload ! pinnedshmsink alone)
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env). One case per process; exit 0 pass. A producer process
 * (forked before anything here touches CUDA: the emulator enforces CUDA's
 * fork rule) writes device frames with cuMemcpyHtoD into a device segment
 * (pf_device_segment_new), pitched (512 bytes a row, more than a row's
 * pixels; padding 0xee), says so in its video meta, and publishes them
 * with caps video/x-raw(memory:PinnedflowCUDA); this process receives
 * them in a pipeline.
 *
 * frames: pinnedshmsrc delivery=every-frame ! pinnedcudadownload ! appsink
 *   gets every frame (RGBA 64x48), byte-exact row by row, counted as
 *   device frames in the src's stats (pushed with no copy as pinnedflow
 *   CUDA memory, one download each in pinnedcudadownload's stats); the
 *   producer gets every frame back; nothing is left mapped (handles,
 *   reservations, mappings) or open (fds) on either side.
 * nv12: the same with two planes (NV12), the chroma plane at its row
 *   offset in the one pitch.
 * no-vmm: this process's driver has no virtual memory support
 *   (PFEMU_VMM unset here only): the device segment is refused, the src
 *   posts a clear error (RESOURCE FAILED: cannot be imported, with the
 *   reason), no crash, no frame; the producer gets its frames back.
 * host-only: downstream takes system memory only (a capsfilter before
 *   appsink): device-frames=auto does not ask, and the device stream is a
 *   not-negotiated error that says why.
 * off: device-frames=off before pinnedcudadownload: the same error,
 *   naming the property.
 * sink: the producer is a pipeline, videotestsrc pattern=ball ! RGBA 64x48 !
 *   pinnedcudaupload ! video/x-raw(memory:PinnedflowCUDA) ! pinnedshmsink
 *   (a pool of 4 for 20 frames): pinnedcudaupload writes into the slots of
 *   the sink's device segment that the sink proposed, each published with
 *   no copy (zero-copy-frames 20, device-copies 0); here pinnedshmsrc !
 *   pinnedcudadownload ! appsink gets every frame byte-exact against the
 *   same videotestsrc frames made here.
 * sink-copy: the same with a tee before the sink (two branches: no pool
 *   proposed upstream), so pinnedcudaupload's frames come from its own
 *   pool: each copied once device to device (device-copies 20).
 * sink-no-vmm: the same producer without virtual memory support (PFEMU_VMM
 *   unset there): it falls back to host frames (copies 20, device-copies
 *   0, caps without the memory feature), read here as system memory,
 *   byte-exact.
 * sink-copy-i420: sink-copy in I420, whose chroma rows are half as wide
 *   as the luma's: the sink copies plane by plane (60 copies of 20 frames'
 *   visible bytes, 4,608 a frame, in the producer's emulator counters),
 *   all three planes byte-exact.
 * sink-cuda: the producer is videotestsrc ! cudaupload (nvcodec) !
 *   video/x-raw(memory:CUDAMemory) ! pinnedshmsink: on 1.22 each
 *   GstCudaMemory frame copied once device to device (device-copies 20);
 *   on 1.24+ cudaupload writes into the sink's virtual-memory
 *   GstCudaBufferPool and each frame is published from its exported
 *   allocation with no copy (device-copies 0, zero-copy-frames 20); read
 *   here byte-exact as in sink. Skipped (77) where nvcodec's cudaupload
 *   is not registered.
 * sink-cuda-nv12: sink-cuda in NV12 (two planes, each copied at its video
 *   meta's offset and stride on 1.22), both planes byte-exact.
 * relay: the frames case's producer, relayed by a middle process
 *   (pinnedshmsrc device-frames=on ! pinnedshmsink: the source's read-only
 *   wrapped memory copied once device to device, device-copies 20), read
 *   here byte-exact as in frames (the wire keeps the producer's pitch;
 *   the padding is not copied). The middle process's emulator counted 20
 *   device-to-device copies of 20 frames' visible bytes: the rows
 *   (256 bytes at pitch 512) without their padding. The sink cases count
 *   their producer's the same way (sink-copy: 20 copies, sink-cuda on
 *   1.22: one per plane, 1.24+ and sink: none).
 * sink-cuda-bad: memory:CUDAMemory caps and a system-memory buffer
 *   (appsrc): the sink posts STREAM WRONG_TYPE ("not one GstCudaMemory"),
 *   publishes nothing, no crash, nothing left on either side.
 * produce: the producer alone on SOCKET (RGBA 64x48, 20 frames, then EOS
 *   once they are back), for a gst-launch-1.0 consumer; on a GPU as on the
 *   emulators (their leak checks only where they are loaded).
 * produce-cuda: sink-cuda's producer alone on SOCKET, its stats checked
 *   (tests/bridge/test_device_frames.py gst-sink reads it in Python).
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-segment.h>

#include "pf-test-util.h"

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define W 64
#define H 48
#define PITCH 512
#define SLOT ((size_t) 64 << 10)
#define SLOTS 4
#define N_FRAMES 20
#define PAD 0xee

typedef unsigned long long CUdeviceptr;

static int (*cuInit) (unsigned int);
static int (*cuCtxCreate) (void **, unsigned int, int);
static int (*cuCtxSynchronize) (void);
static int (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static long (*emu_query) (const char *);

/* the frame's planes: rows of bytes, each row at PITCH */
typedef struct
{
  const char *format;
  guint n_planes;
  gsize width_bytes[3], rows[3], row_offset[3];
} layout;

static const layout RGBA = { "RGBA", 1, {W * 4, 0}, {H, 0}, {0, 0} };
static const layout NV12 = { "NV12", 2, {W, W}, {H, H / 2}, {0, H} };

/* the sink cases only: chroma rows half as wide as the luma's */
static const layout I420 = { "I420", 3, {W, W / 2, W / 2}, {H, H / 2, H / 2},
{0, H, H + H / 2}
};

/* the visible bytes of one frame of @l (its rows without the pitch's
 * padding) */
static long
visible_bytes (const layout * l)
{
  long n = 0;
  guint p;

  for (p = 0; p < l->n_planes; p++)
    n += (long) (l->width_bytes[p] * l->rows[p]);
  return n;
}

/* Whether every plane of @l has rows of the same width (the sink copies
 * all rows at once then) */
static gboolean
uniform_rows (const layout * l)
{
  guint p;

  for (p = 1; p < l->n_planes; p++)
    if (l->width_bytes[p] != l->width_bytes[0])
      return FALSE;
  return TRUE;
}

/* This process's device-to-device copies, as the emulator counted them:
 * @copies 2D copies moving exactly the visible bytes of @frames frames of
 * @l (the sink copies no pitch padding) */
static void
check_dtod (const layout * l, long frames, long copies)
{
  long n = emu_query ("copies.dtod"), bytes = emu_query ("bytes.dtod");

  printf ("device to device: %ld copies, %ld bytes (%ld frames of %ld "
      "visible bytes)\n", n, bytes, frames, visible_bytes (l));
  fflush (stdout);
  CHECK_INT (n, ==, copies);
  CHECK_INT (bytes, ==, frames * visible_bytes (l));
}

/* the sink case: what videotestsrc made, frame by frame (GstBuffer) */
static GPtrArray *expected;

/* the sink cases' source, in @format (RGBA, NV12) */
static gchar *
sink_source (const char *format)
{
  return g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,format=%s,width=%d,height=%d,framerate=30/1", N_FRAMES,
      format, W, H);
}

static guint8
pixel (uint64_t seq, guint plane, gsize row, gsize x)
{
  return (guint8) ((seq * 31 + plane * 101 + row * 7 + x * 3) & 0xff);
}

/* the emulators' counters (the cudart stand-in holds them) */
static void
emu_up (gboolean required)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;

  if (rt != NULL)
    *(void **) &emu_query = dlsym (rt, "pfemu_query");
  CHECK_MSG (emu_query != NULL || !required, "cannot load the cudart "
      "emulator: %s", dlerror ());
}

static void
check_vmm_empty (void)
{
  if (emu_query == NULL)
    return;                     /* a real driver: nothing to ask */
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

/* ---- the producer process ---------------------------------------------- */

typedef struct
{
  atomic_int released;
  atomic_int connected;
  atomic_int in_use[SLOTS];
} prod_state;

static void
on_released (void *user_data, void *token)
{
  prod_state *st = user_data;

  atomic_store (&st->in_use[(intptr_t) token - 1], 0);
  atomic_fetch_add (&st->released, 1);
}

static void
on_connected (void *user_data, const pf_client_info * info)
{
  (void) info;
  atomic_fetch_add (&((prod_state *) user_data)->connected, 1);
}

static int
producer_main (const char *path, const layout * l, gboolean emulated)
{
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  guint8 *buf = malloc (PITCH * (l->rows[0] + l->rows[1]));
  pf_producer_config cfg;
  pf_producer *p = NULL;
  pf_segment *seg = NULL;
  prod_state st;
  void *ctx = NULL;
  char caps[256];
  int i, sent = 0, fds0;

  CHECK_MSG (drv != NULL && buf != NULL, "libcuda.so.1: %s", dlerror ());
  *(void **) &cuInit = dlsym (drv, "cuInit");
  *(void **) &cuCtxCreate = dlsym (drv, "cuCtxCreate_v2");
  *(void **) &cuCtxSynchronize = dlsym (drv, "cuCtxSynchronize");
  *(void **) &cuMemcpyHtoD = dlsym (drv, "cuMemcpyHtoD_v2");
  CHECK (cuInit && cuCtxCreate && cuCtxSynchronize && cuMemcpyHtoD);
  emu_up (emulated);
  CHECK_INT (cuInit (0), ==, 0);
  CHECK_INT (cuCtxCreate (&ctx, 0, 0), ==, 0);
  fds0 = pf_test_count_fds ();

  CHECK_MSG (pf_device_segment_new (0, SLOTS * SLOT, &seg) == 0, "%s",
      pf_device_segment_error ());
  memset (&st, 0, sizeof (st));
  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = SLOTS;
  cfg.reliable_timeout_ms = -1;
  cfg.callbacks.frame_released = on_released;
  cfg.callbacks.client_connected = on_connected;
  cfg.callbacks.user_data = &st;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  snprintf (caps, sizeof (caps), "video/x-raw(memory:PinnedflowCUDA),"
      "format=%s,width=%d,height=%d,framerate=30/1", l->format, W, H);
  CHECK_INT (pf_producer_set_caps (p, caps), ==, 0);
  WAIT_FOR (atomic_load (&st.connected) == 1);

  for (i = 0; i < N_FRAMES && pf_producer_get_n_clients (p) > 0; i++) {
    uint64_t seq = (uint64_t) i + 1;
    int slot = i % SLOTS, res;
    size_t size = PITCH * (l->rows[0] + l->rows[1]);
    pf_producer_frame f;
    pf_segment *segs[1] = { seg };
    guint pl;
    gsize r, x;

    WAIT_FOR (atomic_load (&st.in_use[slot]) == 0);
    memset (buf, PAD, size);
    for (pl = 0; pl < l->n_planes; pl++)
      for (r = 0; r < l->rows[pl]; r++)
        for (x = 0; x < l->width_bytes[pl]; x++)
          buf[(l->row_offset[pl] + r) * PITCH + x] = pixel (seq, pl, r, x);
    /* a device frame is published once its writes are complete */
    CHECK_INT (cuMemcpyHtoD (pf_device_segment_get_ptr (seg) + slot * SLOT,
            buf, size), ==, 0);
    CHECK_INT (cuCtxSynchronize (), ==, 0);
    memset (&f, 0, sizeof (f));
    f.n_chunks = 1;
    f.chunks[0].segment_id = pf_segment_get_id (seg);
    f.chunks[0].offset = slot * SLOT;
    f.chunks[0].size = size;
    f.pts = i * (GST_SECOND / 30);
    f.dts = PF_TIME_NONE;
    f.duration = GST_SECOND / 30;
    f.offset = f.offset_end = UINT64_MAX;
    f.clock_pts = PF_TIME_NONE;
    f.meta_flags = PF_FRAME_HAS_VIDEO_META;
    f.width = W;
    f.height = H;
    f.n_planes = l->n_planes;
    for (pl = 0; pl < l->n_planes; pl++) {
      f.plane_offset[pl] = l->row_offset[pl] * PITCH;
      f.plane_stride[pl] = PITCH;
    }
    if (pf_producer_wait_ready (p, 10000) != 0)
      break;                    /* the consumer went away */
    atomic_store (&st.in_use[slot], 1);
    res = pf_producer_publish (p, &f, segs, (void *) (intptr_t) (slot + 1));
    CHECK_MSG (res >= 0, "publish: %d %s", res, pf_producer_get_error (p));
    if (res == 0)
      atomic_store (&st.in_use[slot], 0);
    else
      sent++;
  }
  (void) pf_producer_send_eos (p);
  /* every frame sent comes back: released, or reclaimed at the hang-up */
  WAIT_FOR (atomic_load (&st.released) == sent);
  pf_producer_close (p);
  pf_producer_unref (p);
  pf_segment_unref (seg);
  check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  free (buf);
  printf ("producer: %d frames sent, %d released\n", sent,
      atomic_load (&st.released));
  fflush (stdout);
  return 0;
}

/* ---- this process: the pipeline ---------------------------------------- */

static void
check_frame (GstSample * sample, const layout * l, uint64_t seq)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  guint pl;
  gsize r, x;

  CHECK (gst_video_info_from_caps (&info, gst_sample_get_caps (sample)));
  CHECK_MSG (strcmp (gst_video_format_to_string (GST_VIDEO_INFO_FORMAT
              (&info)), l->format) == 0, "format %s",
      gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&info)));
  CHECK (gst_video_frame_map (&frame, &info, gst_sample_get_buffer (sample),
          GST_MAP_READ));
  if (expected != NULL) {
    GstVideoFrame want;

    CHECK (seq <= expected->len);
    CHECK (gst_video_frame_map (&want, &info, g_ptr_array_index (expected,
                seq - 1), GST_MAP_READ));
    for (pl = 0; pl < l->n_planes; pl++) {
      const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, pl);
      const guint8 *w = GST_VIDEO_FRAME_PLANE_DATA (&want, pl);

      for (r = 0; r < l->rows[pl]; r++)
        CHECK_MSG (memcmp (d + r * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, pl),
                w + r * GST_VIDEO_FRAME_PLANE_STRIDE (&want, pl),
                l->width_bytes[pl]) == 0, "frame %" G_GUINT64_FORMAT
            " plane %u row %" G_GSIZE_FORMAT " differs", seq, pl, r);
    }
    gst_video_frame_unmap (&want);
    gst_video_frame_unmap (&frame);
    return;
  }
  for (pl = 0; pl < l->n_planes; pl++) {
    const guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (&frame, pl);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, pl);

    for (r = 0; r < l->rows[pl]; r++)
      for (x = 0; x < l->width_bytes[pl]; x++)
        CHECK_MSG (d[r * stride + x] == pixel (seq, pl, r, x),
            "frame %" G_GUINT64_FORMAT " plane %u row %" G_GSIZE_FORMAT
            " byte %" G_GSIZE_FORMAT ": %02x, want %02x", seq, pl, r, x,
            d[r * stride + x], pixel (seq, pl, r, x));
  }
  gst_video_frame_unmap (&frame);
}

static guint64
stat_u64 (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint64 v = G_MAXUINT64;

  g_object_get (e, "stats", &s, NULL);
  CHECK (s != NULL);
  CHECK_MSG (gst_structure_get_uint64 (s, field, &v), "no %s in %s", field,
      gst_structure_get_name (s));
  gst_structure_free (s);
  return v;
}

/* Runs the pipeline until EOS (@want_error NULL: every frame checked) or
 * an error whose texts contain @want_error. */
static void
run_pipeline (const char *path, const layout * l, const char *mid,
    const char *want_error)
{
  GstElement *pipe, *sink, *src;
  GstBus *bus;
  GError *err = NULL;
  gchar *desc;
  uint64_t seq = 0;
  gboolean done = FALSE;

  desc = g_strdup_printf ("pinnedshmsrc name=src socket-path=%s "
      "connect-timeout=20000 delivery=every-frame %s ! appsink name=sink "
      "sync=false max-buffers=2", path, mid);
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  g_free (desc);
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  while (!done) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        50 * GST_MSECOND);
    GstMessage *msg;

    if (sample != NULL) {
      CHECK_MSG (want_error == NULL, "a frame reached appsink");
      check_frame (sample, l, ++seq);
      gst_sample_unref (sample);
      continue;
    }
    /* appsink may see EOS before the bus does: the bus decides */
    msg = gst_bus_timed_pop_filtered (bus, 10 * GST_MSECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    if (msg == NULL)
      continue;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *e = NULL;
      gchar *dbg = NULL;

      gst_message_parse_error (msg, &e, &dbg);
      printf ("error from %s: %s (%s)\n", GST_MESSAGE_SRC_NAME (msg),
          e->message, dbg ? dbg : "");
      CHECK_MSG (want_error != NULL, "error: %s (%s)", e->message, dbg);
      CHECK_MSG (GST_MESSAGE_SRC (msg) == GST_OBJECT (src), "error from %s",
          GST_MESSAGE_SRC_NAME (msg));
      CHECK_MSG (strstr (e->message, want_error) != NULL
          || (dbg != NULL && strstr (dbg, want_error) != NULL),
          "error \"%s\" (%s) does not say \"%s\"", e->message, dbg, want_error);
      g_clear_error (&e);
      g_free (dbg);
      done = TRUE;
    } else {
      CHECK_MSG (want_error == NULL, "EOS, wanted an error \"%s\"", want_error);
      /* frames still queued in appsink come first */
      while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
                  0)) != NULL) {
        check_frame (sample, l, ++seq);
        gst_sample_unref (sample);
      }
      done = TRUE;
    }
    gst_message_unref (msg);
  }

  if (want_error == NULL) {
    GstElement *down = gst_bin_get_by_name (GST_BIN (pipe), "down");

    CHECK_INT (seq, ==, N_FRAMES);
    CHECK_INT (stat_u64 (src, "frames"), ==, N_FRAMES);
    if (down != NULL) {
      /* every one pushed as device memory, none copied on the way in */
      CHECK_INT (stat_u64 (src, "device-frames"), ==, N_FRAMES);
      CHECK_INT (stat_u64 (down, "frames"), ==, N_FRAMES);
      gst_object_unref (down);
    } else {
      /* host frames (sink-no-vmm) */
      CHECK_INT (stat_u64 (src, "device-frames"), ==, 0);
    }
  } else {
    CHECK_INT (seq, ==, 0);
    CHECK_INT (stat_u64 (src, "device-frames"), ==, 0);
  }
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (pipe);
}

/* Runs @desc (ending in an appsink named sink, or a pinnedshmsink named
 * s) to EOS, then to NULL; the appsink's buffers into *@out when given.
 * Returns the pipeline, or fails. */
static GstElement *
run_to_eos (const gchar * desc, GPtrArray * out)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstElement *sink;
  GstBus *bus;
  GstMessage *msg;

  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  if (out != NULL) {
    GstSample *sample;

    CHECK (sink != NULL);
    while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL) {
      g_ptr_array_add (out, gst_buffer_copy_deep (gst_sample_get_buffer
              (sample)));
      gst_sample_unref (sample);
    }
  }
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  CHECK_MSG (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "%s: no EOS", desc);
  gst_message_unref (msg);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  if (sink != NULL)
    gst_object_unref (sink);
  return pipe;
}

/* The producer process of the sink cases: pinnedcudaupload's device frames
 * through pinnedshmsink, one device copy each; without virtual memory
 * (@vmm FALSE) one download each, host frames. */
static int
sink_producer_main (const char *path, const char *format, gboolean vmm,
    gboolean cuda_memory, gboolean tee)
{
  gchar *source = sink_source (format);
  /* a pool of 1 x 2 + 2 buffers (+ 2 for the VMM pool) for 20 frames,
   * so that buffers are recycled while the consumer may still read older
   * ones */
  gchar *desc = g_strdup_printf ("%s ! %s ! %s pinnedshmsink name=s "
      "socket-path=%s wait-for-connection=true max-clients=1 "
      "max-client-buffers=2%s", source, cuda_memory ?
      "cudaupload ! video/x-raw(memory:CUDAMemory)" :
      "pinnedcudaupload ! video/x-raw(memory:PinnedflowCUDA)",
      tee ? "tee name=t t. ! queue !" : "", path,
      tee ? " t. ! queue ! fakesink" : "");
  GstElement *pipe, *s;
  guint major, minor, micro, nano;
  guint64 want_copies = vmm && (cuda_memory || tee) ? N_FRAMES : 0;

  if (!vmm)
    unsetenv ("PFEMU_VMM");
  gst_init (NULL, NULL);
  gst_version (&major, &minor, &micro, &nano);
  /* 1.24+: cudaupload writes into the sink's virtual-memory
   * GstCudaBufferPool, published with no copy */
  if (cuda_memory && minor >= 24)
    want_copies = 0;
  pipe = run_to_eos (desc, NULL);
  s = gst_bin_get_by_name (GST_BIN (pipe), "s");
  printf ("producer (GStreamer 1.%u): frames %" G_GUINT64_FORMAT
      ", device-copies %" G_GUINT64_FORMAT ", zero-copy-frames %"
      G_GUINT64_FORMAT "\n", minor, stat_u64 (s, "frames"),
      stat_u64 (s, "device-copies"), stat_u64 (s, "zero-copy-frames"));
  fflush (stdout);
  CHECK_INT (stat_u64 (s, "frames"), ==, N_FRAMES);
  CHECK_INT (stat_u64 (s, "device-copies"), ==, want_copies);
  if (vmm && want_copies == 0) {
    /* pinnedcudaupload wrote into the sink's device slots (any version),
     * or cudaupload into its virtual-memory pool (1.24+) */
    CHECK_INT (stat_u64 (s, "zero-copy-frames"), ==, N_FRAMES);
    CHECK_INT (stat_u64 (s, "copies"), ==, 0);
  } else {
    CHECK_INT (stat_u64 (s, "copies"), ==, N_FRAMES);
    CHECK_INT (stat_u64 (s, "zero-copy-frames"), ==, 0);
  }
  gst_object_unref (s);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (source);
  emu_up (TRUE);
  if (vmm) {
    const layout *l = strcmp (format, "NV12") == 0 ? &NV12 :
        strcmp (format, "I420") == 0 ? &I420 : &RGBA;

    /* the sink's copies: the rows' visible bytes only; pinnedcudaupload's
     * frames (its own pool's pitch) in one 2D copy where the planes' rows
     * are as wide (RGBA), else one per plane (I420), a GstCudaMemory's
     * (1.22) one per plane; none where the frames were published as they
     * are */
    check_dtod (l, (long) want_copies, (long) want_copies *
        (cuda_memory || !uniform_rows (l) ? (long) l->n_planes : 1));
  }
  if (vmm) {
    /* device segments exported: the sink's caps probe, then the slots'
     * segment (the copy's, or the pool's taken by pinnedcudaupload, made
     * when it is activated), or each memory of the VMM pool once (1.24+:
     * 6 at most); never once per frame */
    long exports = emu_query ("calls.cuMemExportToShareableHandle");

    printf ("producer: %ld exports\n", exports);
    fflush (stdout);
    if (cuda_memory && want_copies == 0)
      CHECK_MSG (exports >= 2 && exports <= 1 + 6, "%ld exports", exports);
    else if (cuda_memory || tee)
      CHECK_INT (exports, ==, 2);
    else
      CHECK_INT (exports, ==, 2);
  }
  /* every slot back, the segment gone with the sink */
  check_vmm_empty ();
  return 0;
}

/* The middle process of relay: another producer's device frames
 * (pinnedshmsrc device-frames=on: read-only wrapped memory) into
 * pinnedshmsink on @out, each copied once device to device. */
static int
relay_main (const char *in, const char *out)
{
  gchar *desc = g_strdup_printf ("pinnedshmsrc socket-path=%s "
      "connect-timeout=20000 delivery=every-frame device-frames=on ! "
      "pinnedshmsink name=s socket-path=%s wait-for-connection=true "
      "max-clients=1 max-client-buffers=2", in, out);
  GstElement *pipe, *s;

  gst_init (NULL, NULL);
  pipe = run_to_eos (desc, NULL);
  s = gst_bin_get_by_name (GST_BIN (pipe), "s");
  printf ("relay: frames %" G_GUINT64_FORMAT ", device-copies %"
      G_GUINT64_FORMAT "\n", stat_u64 (s, "frames"),
      stat_u64 (s, "device-copies"));
  fflush (stdout);
  CHECK_INT (stat_u64 (s, "frames"), ==, N_FRAMES);
  CHECK_INT (stat_u64 (s, "device-copies"), ==, N_FRAMES);
  CHECK_INT (stat_u64 (s, "zero-copy-frames"), ==, 0);
  gst_object_unref (s);
  gst_object_unref (pipe);
  g_free (desc);
  emu_up (TRUE);
  /* one 2D copy per frame, of each row's visible bytes (the producer's
   * pitch is PITCH, twice the RGBA row): the wire keeps the pitch */
  check_dtod (&RGBA, N_FRAMES, N_FRAMES);
  check_vmm_empty ();
  return 0;
}

/* The producer process of sink-cuda-bad: memory:CUDAMemory caps, and a
 * buffer of system memory: the sink posts STREAM WRONG_TYPE, publishes
 * nothing, crashes not, leaves no device memory behind. */
static int
sink_bad_main (const char *path)
{
  gchar *desc = g_strdup_printf ("appsrc name=a format=time caps="
      "\"video/x-raw(memory:CUDAMemory),format=RGBA,width=%d,height=%d,"
      "framerate=30/1\" ! pinnedshmsink name=s socket-path=%s "
      "wait-for-connection=true", W, H, path);
  GError *err = NULL;
  GstElement *pipe, *a, *s;
  GstMessage *msg;
  GstBus *bus;
  GError *e = NULL;
  gchar *dbg = NULL;
  GstBuffer *buf;

  gst_init (NULL, NULL);
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  a = gst_bin_get_by_name (GST_BIN (pipe), "a");
  s = gst_bin_get_by_name (GST_BIN (pipe), "s");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  buf = gst_buffer_new_allocate (NULL, W * H * 4, NULL);
  gst_buffer_memset (buf, 0, 0x5a, W * H * 4);
  GST_BUFFER_PTS (buf) = 0;
  CHECK (gst_app_src_push_buffer (GST_APP_SRC (a), buf) == GST_FLOW_OK);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  CHECK_MSG (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR,
      "no error");
  gst_message_parse_error (msg, &e, &dbg);
  printf ("error from %s: %s (%s)\n", GST_MESSAGE_SRC_NAME (msg), e->message,
      dbg ? dbg : "");
  fflush (stdout);
  CHECK (GST_MESSAGE_SRC (msg) == GST_OBJECT (s));
  CHECK (g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE));
  CHECK (strstr (e->message, "not one GstCudaMemory") != NULL);
  CHECK_INT (stat_u64 (s, "bytes"), ==, 0);
  CHECK_INT (stat_u64 (s, "device-copies"), ==, 0);
  g_clear_error (&e);
  g_free (dbg);
  gst_message_unref (msg);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (bus);
  gst_object_unref (a);
  gst_object_unref (s);
  gst_object_unref (pipe);
  g_free (desc);
  emu_up (TRUE);
  check_vmm_empty ();
  return 0;
}

int
main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  const layout *l = strcmp (c, "nv12") == 0
      || strcmp (c, "sink-cuda-nv12") == 0 ? &NV12 :
      strcmp (c, "sink-copy-i420") == 0 ? &I420 : &RGBA;
  const char *mid = "! pinnedcudadownload name=down", *want = NULL;
  char dir[256], path[300], relay_path[300];
  pid_t pid, relay = -1;
  int fds0;

  if (strcmp (c, "produce") == 0 && argc == 3)
    return producer_main (argv[2], &RGBA, FALSE);
  if (strcmp (c, "produce-cuda") == 0 && argc == 3)
    return sink_producer_main (argv[2], "RGBA", TRUE, TRUE, FALSE);
  if (strcmp (c, "frames") != 0 && strcmp (c, "nv12") != 0
      && strcmp (c, "sink") != 0 && strcmp (c, "sink-no-vmm") != 0
      && strcmp (c, "sink-cuda") != 0 && strcmp (c, "sink-cuda-bad") != 0
      && strcmp (c, "sink-copy") != 0 && strcmp (c, "sink-cuda-nv12") != 0
      && strcmp (c, "sink-copy-i420") != 0
      && strcmp (c, "relay") != 0
      && strcmp (c, "no-vmm") != 0 && strcmp (c, "host-only") != 0
      && strcmp (c, "off") != 0) {
    fprintf (stderr,
        "usage: %s frames|nv12|sink|sink-copy|sink-copy-i420|sink-no-vmm|"
        "sink-cuda|"
        "sink-cuda-nv12|sink-cuda-bad|relay|no-vmm|host-only|off, or "
        "%s produce|produce-cuda SOCKET\n", argv[0], argv[0]);
    return 2;
  }
  CHECK_MSG (getenv ("PFEMU_VMM") != NULL, "run with PFEMU_VMM=1 (meson)");
  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-shm-device"), ==, 0);
  snprintf (path, sizeof (path), "%s/sock", dir);
  snprintf (relay_path, sizeof (relay_path), "%s/relay", dir);

  /* the producer first: nothing here has touched CUDA yet */
  pid = pf_test_fork ();
  CHECK (pid >= 0);
  if (pid == 0 && strcmp (c, "sink-cuda-bad") == 0)
    _exit (sink_bad_main (path));
  if (pid == 0)
    _exit (strncmp (c, "sink", 4) == 0 ? sink_producer_main (path,
            l->format, strcmp (c, "sink-no-vmm") != 0,
            strncmp (c, "sink-cuda", 9) == 0, strncmp (c,
                "sink-copy", 9) == 0) : producer_main (path, l, TRUE));
  if (strcmp (c, "relay") == 0) {
    /* the middle process, forked before CUDA too; this one reads it */
    relay = pf_test_fork ();
    CHECK (relay >= 0);
    if (relay == 0)
      _exit (relay_main (path, relay_path));
  }

  if (strcmp (c, "no-vmm") == 0) {
    /* this process's driver cannot import virtual memory */
    unsetenv ("PFEMU_VMM");
    want = "cannot be imported";
  } else if (strcmp (c, "host-only") == 0) {
    mid = "! video/x-raw";
    want = "downstream does not accept";
  } else if (strcmp (c, "sink-no-vmm") == 0) {
    mid = "! video/x-raw";      /* host frames, as the sink sends them */
  } else if (strcmp (c, "off") == 0) {
    mid = "device-frames=off ! pinnedcudadownload name=down";
    want = "device-frames=off";
  }
  gst_init (&argc, &argv);
  if (strncmp (c, "sink-cuda", 9) == 0 && strcmp (c, "sink-cuda-bad") != 0) {
    GstElementFactory *up = gst_element_factory_find ("cudaupload");

    if (up == NULL) {
      printf ("SKIP: nvcodec's cudaupload is not registered here\n");
      kill (pid, SIGKILL);
      pf_test_wait (pid);
      pf_test_remove_tree (dir);
      return 77;
    }
    gst_object_unref (up);
  }
  if (strncmp (c, "sink", 4) == 0) {
    /* the frames the producer's videotestsrc makes, made here on the CPU */
    gchar *source = sink_source (l->format);
    gchar *desc = g_strdup_printf ("%s ! appsink name=sink sync=false",
        source);

    expected = g_ptr_array_new_with_free_func ((GDestroyNotify)
        gst_buffer_unref);

    gst_object_unref (run_to_eos (desc, expected));
    g_free (desc);
    g_free (source);
    CHECK_INT (expected->len, ==, N_FRAMES);
  }
  emu_up (TRUE);
  {
    /* the system clock's poll fds (made at its first wait, kept for the
     * process's life) are not the pipeline's: made before counting */
    GstClock *clk = gst_system_clock_obtain ();
    GstClockID id = gst_clock_new_single_shot_id (clk,
        gst_clock_get_time (clk) + GST_MSECOND);

    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    gst_object_unref (clk);
  }
  fds0 = pf_test_count_fds ();
  if (strcmp (c, "sink-cuda-bad") == 0) {
    /* a client, so that the sink renders; it gets no frame */
    GstElement *pipe = gst_parse_launch_full ("pinnedshmsrc name=src "
        "connect-timeout=20000 ! fakesink", NULL, GST_PARSE_FLAG_NONE, NULL);
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");

    g_object_set (src, "socket-path", path, NULL);
    CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    CHECK_INT (pf_test_exit_code (pf_test_wait (pid)), ==, 0);
    CHECK_INT (stat_u64 (src, "frames"), ==, 0);
    CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
        GST_STATE_CHANGE_SUCCESS);
    gst_object_unref (src);
    gst_object_unref (pipe);
  } else {
    run_pipeline (relay > 0 ? relay_path : path, l, mid, want);
    if (relay > 0)
      CHECK_INT (pf_test_exit_code (pf_test_wait (relay)), ==, 0);
    CHECK_INT (pf_test_exit_code (pf_test_wait (pid)), ==, 0);
  }
  /* the pipeline's mappings and fds are gone with it */
  check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  if (expected != NULL)
    g_ptr_array_unref (expected);
  pf_test_remove_tree (dir);
  printf ("%s: ok\n", c);
  return 0;
}
