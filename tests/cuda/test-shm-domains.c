/* pinnedflow CUDA suite: pinnedshmsink copies once per memory domain
 * (issue 32, items 3; docs/cuda.md "One copy per domain")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-shm-domains upload|upload-off|upload-nocuda|download|peer
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env). Node consumer processes (forked before anything here
 * touches CUDA: the emulator enforces CUDA's fork rule) connect to a
 * pinnedshmsink in this process; those of device 0 name it
 * (pf_node_consumer_set_domain()). The sink's frames (RGBA 64x48, from
 * appsrc) are pushed once every consumer is connected and the sink's
 * stats say a device was named (domains-wanted), so every frame sees the
 * domains. Every consumer checks every frame byte-exact row by row (the
 * frame's video layout; device frames read back with cuMemcpyDtoH) and
 * that it came in the domain expected; nothing is left in any process
 * (segments, mappings, VMM handles, fds).
 *
 * upload: appsrc ! pinnedshmsink (a host stream), two consumers of
 *   device 0 and a host one: one upload per frame in the sink (its stats:
 *   domain-uploads N, one domain entry; the emulator counts N
 *   cuMemcpyHtoD in this process), the device consumers get every frame
 *   in the device domain, the host one in host memory.
 * upload-off: the same with domains=false: no upload here, the device
 *   consumers get host frames (as before: they would upload themselves).
 * upload-nocuda: domains=true where CUDA is not usable in the sink's
 *   process (the emulator fails its cuInit): no error, no upload, the
 *   device consumers get host frames, the stream runs to EOS.
 * download: appsrc ! pinnedcudaupload ! pinnedshmsink (a device stream,
 *   no device copy: pinnedcudaupload writes into the sink's slots), a
 *   consumer of device 0 and two host consumers
 *   (no CUDA in their processes): one download per frame in the sink
 *   (domain-downloads N, the emulator's cuMemcpyDtoH count in this process
 *   agrees), the host consumers get every frame in host memory (before:
 *   none), the device consumer the device frame (its only cuMemcpyDtoH
 *   calls are the test's reads). One of the host consumers is
 *   `pinnedshmsrc ! videoconvert ! appsink` (device-frames=auto, the
 *   default: nothing downstream names a device memory, so it does not ask
 *   for device frames; before, ANY caps counted as taking them and this
 *   consumer got memory:PinnedflowCUDA): the sink tells it the host
 *   frames' caps (no memory:PinnedflowCUDA, pf_producer_set_caps_full ()),
 *   so it negotiates system memory and reads every frame byte-exact
 *   (before: a not-negotiated error, "the producer sends device frames").
 * peer: the device stream of download on device 0 of two (this process
 *   and the consumers' have two devices), two consumers of device 1 and
 *   one of device 0: one peer copy per frame into device 1 in the sink
 *   (domain-peer-copies N, its entry's peer-copies N, the emulator's
 *   cuMemcpyPeer count in this process agrees; no download), the
 *   consumers of device 1 read every frame there, the consumer of device
 *   0 the sink's own device frame; no copy in any consumer.
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node.h>
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
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define W 64
#define H 48
#define ROW (W * 4)
#define N_FRAMES 12
#define MAX_KIDS 4

typedef unsigned long long CUdeviceptr;

static long (*emu_query) (const char *);
static int (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);

static struct shared
{
  atomic_long extra_dtoh;       /* device consumers' cuMemcpyDtoH beyond reads */
} *shared;

enum
{
  HOST,                         /* no device frames asked for */
  DEVICE,                       /* names device 0, device frames expected */
  DEVICE_HOSTED,                /* names device 0, host frames expected */
  GST_HOST,                     /* pinnedshmsrc ! videoconvert ! appsink */
  PEER,                         /* names device 1 of two, device frames
                                 * there expected */
};

static guint8
pixel (uint64_t k, gsize row, gsize x)
{
  return (guint8) ((k * 31 + row * 7 + x * 3) & 0xff);
}

/* the emulators' counters (the cudart stand-in holds them) and a context
 * (@ctx) for the reads */
static void
emu_up (gboolean ctx, int device)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

  CHECK_MSG (rt && drv, "cannot load the emulators: %s", dlerror ());
  *(void **) &emu_query = dlsym (rt, "pfemu_query");
  *(void **) &cuMemcpyDtoH = dlsym (drv, "cuMemcpyDtoH_v2");
  CHECK (emu_query && cuMemcpyDtoH);
  if (ctx) {
    int (*init) (unsigned int);
    int (*create) (void **, unsigned int, int);
    void *c = NULL;

    *(void **) &init = dlsym (drv, "cuInit");
    *(void **) &create = dlsym (drv, "cuCtxCreate_v2");
    CHECK (init && create);
    CHECK_INT (init (0), ==, 0);
    CHECK_INT (create (&c, 0, device), ==, 0);
  }
}

static void
check_vmm_empty (void)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

/* ---- consumers --------------------------------------------------------- */

static int
consumer_main (const char *path, int mode)
{
  guint8 *got = NULL;
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  int fds0, seen = 0, res;
  gsize row, x;

  if (mode == PEER)
    setenv ("PFEMU_DEVICE_COUNT", "2", 1);      /* this process: 2 devices */
  if (mode != HOST)
    emu_up (TRUE, mode == PEER ? 1 : 0);
  fds0 = pf_test_count_fds ();
  res = pf_node_consumer_new_full (path, 20000, PF_DELIVERY_EVERY_FRAME,
      mode == HOST ? 0 : PF_NODE_CONSUMER_DEVICE, &c);
  CHECK_MSG (res == 0, "connect: %d %s", res, pf_consumer_connect_error ());
  if (mode != HOST)
    CHECK_INT (pf_node_consumer_set_domain (c, mode == PEER ? 1 : 0), ==, 0);
  for (;;) {
    const guint8 *bytes;
    pf_node_device_info dev;

    res = pf_node_consumer_next (c, 20000, &f);
    CHECK_MSG (res == 1 || res == PF_NODE_EOS, "next: %d %s", res,
        pf_node_consumer_get_error (c));
    if (res == PF_NODE_EOS)
      break;
    seen++;
    CHECK (f->has_video_meta);
    CHECK_INT (f->layout.width, ==, W);
    CHECK_INT (f->layout.height, ==, H);
    CHECK (f->layout.plane_offset[0] + (uint64_t) (H - 1) *
        f->layout.plane_stride[0] + ROW <= f->size);
    if (mode == DEVICE || mode == PEER) {
      CHECK_INT (f->domain, ==, PF_NODE_DOMAIN_DEVICE);
      CHECK_INT (pf_node_frame_get_device (f, &dev), ==, 0);
      CHECK_INT (dev.ordinal, ==, mode == PEER ? 1 : 0);
      got = g_realloc (got, f->size);
      CHECK_INT (cuMemcpyDtoH (got, dev.ptr, f->size), ==, 0);
      bytes = got;
    } else {
      CHECK_INT (f->domain, ==, PF_NODE_DOMAIN_HOST);
      CHECK (f->data != NULL);
      bytes = f->data;
    }
    for (row = 0; row < H; row++) {
      const guint8 *r = bytes + f->layout.plane_offset[0] +
          row * f->layout.plane_stride[0];

      for (x = 0; x < ROW; x++)
        CHECK_MSG (r[x] == pixel (seen, row, x), "frame %d row %zu byte %zu: "
            "%u, not %u (%s)", seen, row, x, r[x], pixel (seen, row, x),
            mode == HOST || mode == DEVICE_HOSTED ? "host" : "device");
    }
    CHECK_INT (pf_node_frame_release (f), ==, 0);
  }
  CHECK_INT (seen, ==, N_FRAMES);
  if (mode == DEVICE || mode == PEER)
    atomic_fetch_add (&shared->extra_dtoh,
        emu_query ("calls.cuMemcpyDtoH_v2") - seen +
        emu_query ("calls.cuMemcpyPeer") + emu_query ("calls.cuMemcpyDtoD_v2"));
  CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
  pf_node_consumer_free (c);
  g_free (got);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  if (mode != HOST)
    check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  return 0;
}

/* pinnedshmsrc with the default device-frames=auto and a CPU pipeline
 * after it, a host consumer of a device stream: system-memory caps, every
 * frame byte-exact (its video meta's layout) */
static int
gst_consumer_main (const char *path)
{
  gchar *desc = g_strdup_printf ("pinnedshmsrc socket-path=%s "
      "connect-timeout=20000 delivery=every-frame ! videoconvert ! "
      "appsink name=out sync=false", path);
  GstElement *pipe, *out;
  GError *err = NULL;
  int seen = 0;

  gst_init (NULL, NULL);
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  out = gst_bin_get_by_name (GST_BIN (pipe), "out");
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  for (;;) {
    GstSample *smp = gst_app_sink_try_pull_sample (GST_APP_SINK (out),
        30 * GST_SECOND);
    GstCaps *caps;
    GstCapsFeatures *feat;
    GstVideoInfo vi;
    GstVideoFrame vf;
    gsize row, x;

    if (smp == NULL) {
      GstMessage *m = gst_bus_pop_filtered (GST_ELEMENT_BUS (pipe),
          GST_MESSAGE_ERROR);
      GError *e = NULL;

      if (m != NULL)
        gst_message_parse_error (m, &e, NULL);
      CHECK_MSG (gst_app_sink_is_eos (GST_APP_SINK (out)), "no frame %d, "
          "no EOS: %s", seen + 1, e ? e->message : "no error");
      break;
    }
    seen++;
    caps = gst_sample_get_caps (smp);
    feat = gst_caps_get_features (caps, 0);
    CHECK_MSG (feat == NULL || gst_caps_features_is_equal (feat,
            GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY), "caps %s",
        gst_caps_to_string (caps));
    CHECK (gst_video_info_from_caps (&vi, caps));
    CHECK_INT (GST_VIDEO_INFO_WIDTH (&vi), ==, W);
    CHECK_INT (GST_VIDEO_INFO_HEIGHT (&vi), ==, H);
    CHECK (gst_video_frame_map (&vf, &vi, gst_sample_get_buffer (smp),
            GST_MAP_READ));
    for (row = 0; row < H; row++) {
      const guint8 *r = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&vf, 0) +
          row * GST_VIDEO_FRAME_PLANE_STRIDE (&vf, 0);

      for (x = 0; x < ROW; x++)
        CHECK_MSG (r[x] == pixel (seen, row, x), "pinnedshmsrc frame %d row "
            "%zu byte %zu: %u, not %u", seen, row, x, r[x],
            pixel (seen, row, x));
    }
    gst_video_frame_unmap (&vf);
    gst_sample_unref (smp);
  }
  CHECK_INT (seen, ==, N_FRAMES);
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (out);
  gst_object_unref (pipe);
  g_free (desc);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  return 0;
}

/* ---- the sink ---------------------------------------------------------- */

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

static guint
stat_uint (GstElement * e, const gchar * field)
{
  GstStructure *s = NULL;
  guint v = G_MAXUINT;

  g_object_get (e, "stats", &s, NULL);
  CHECK (s != NULL);
  CHECK_MSG (gst_structure_get_uint (s, field, &v), "no %s", field);
  gst_structure_free (s);
  return v;
}

static guint
num_clients (GstElement * e)
{
  guint n = 0;

  g_object_get (e, "num-clients", &n, NULL);
  return n;
}

/* The stats' domains array: its length, @field of entry 0 (uploads when
 * NULL). */
static guint
domain_entries_field (GstElement * e, const gchar * field, guint64 * v0)
{
  GstStructure *s = NULL;
  const GValue *arr;
  guint n;

  g_object_get (e, "stats", &s, NULL);
  CHECK (s != NULL);
  arr = gst_structure_get_value (s, "domains");
  CHECK (arr != NULL && GST_VALUE_HOLDS_ARRAY (arr));
  n = gst_value_array_get_size (arr);
  if (n > 0)
    CHECK (gst_structure_get_uint64 (gst_value_get_structure
            (gst_value_array_get_value (arr, 0)), field ? field : "uploads",
            v0));
  gst_structure_free (s);
  return n;
}

static guint
domain_entries (GstElement * e, guint64 * uploads0)
{
  return domain_entries_field (e, NULL, uploads0);
}

static int
run (const char *c, const char *path)
{
  gboolean peer = strcmp (c, "peer") == 0;
  gboolean download = strcmp (c, "download") == 0 || peer;
  gboolean nocuda = strcmp (c, "upload-nocuda") == 0;
  gboolean off = strcmp (c, "upload-off") == 0 || nocuda;
  int modes[3], n_kids = 3, i, fds0;
  pid_t pid[MAX_KIDS];
  gchar *desc;
  GstElement *pipe, *src, *sink;
  GstBus *bus;
  GstMessage *msg;
  GError *err = NULL;
  long htod0, dtoh0, peer0, htod, dtoh, peers;
  guint64 up0 = 0;

  if (peer) {
    modes[0] = DEVICE;
    modes[1] = modes[2] = PEER;
  } else if (download) {
    modes[0] = DEVICE;
    modes[1] = HOST;
    modes[2] = GST_HOST;
  } else {
    modes[0] = modes[1] = off ? DEVICE_HOSTED : DEVICE;
    modes[2] = HOST;
  }
  /* the consumers first: nothing here has touched CUDA yet */
  for (i = 0; i < n_kids; i++) {
    pid[i] = pf_test_fork ();
    CHECK (pid[i] >= 0);
    if (pid[i] == 0)
      _exit (modes[i] == GST_HOST ? gst_consumer_main (path) :
          consumer_main (path, modes[i]));
  }
  if (nocuda)                   /* this process only: cuInit fails */
    setenv ("PFEMU_FAIL", "cuInit:1:100", 1);
  if (peer)                     /* this process: 2 devices */
    setenv ("PFEMU_DEVICE_COUNT", "2", 1);
  gst_init (NULL, NULL);
  emu_up (FALSE, 0);
  fds0 = pf_test_count_fds ();
  desc = g_strdup_printf ("appsrc name=src format=time caps=video/x-raw,"
      "format=RGBA,width=%d,height=%d,framerate=30/1 %s ! pinnedshmsink "
      "name=sink socket-path=%s wait-for-connection=true min-clients=%d "
      "domains=%s", W, H, download ? "! pinnedcudaupload ! "
      "video/x-raw(memory:PinnedflowCUDA)" : "", path, n_kids,
      off && !nocuda ? "false" : "true");
  pipe = gst_parse_launch (desc, &err);
  CHECK_MSG (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  bus = gst_element_get_bus (pipe);
  CHECK (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  /* every consumer there, and the device named: each frame sees it */
  WAIT_FOR (num_clients (sink) == (guint) n_kids &&
      stat_uint (sink, "domains-wanted") == (peer ? 2u : 1u));
  htod0 = emu_query ("calls.cuMemcpyHtoD_v2");
  dtoh0 = emu_query ("calls.cuMemcpyDtoH_v2");
  peer0 = emu_query ("calls.cuMemcpyPeer");
  for (i = 1; i <= N_FRAMES; i++) {
    GstBuffer *b = gst_buffer_new_allocate (NULL, ROW * H, NULL);
    GstMapInfo map;
    gsize row, x;

    CHECK (gst_buffer_map (b, &map, GST_MAP_WRITE));
    for (row = 0; row < H; row++)
      for (x = 0; x < ROW; x++)
        map.data[row * ROW + x] = pixel (i, row, x);
    gst_buffer_unmap (b, &map);
    GST_BUFFER_PTS (b) = (i - 1) * GST_SECOND / 30;
    GST_BUFFER_DURATION (b) = GST_SECOND / 30;
    CHECK_INT (gst_app_src_push_buffer (GST_APP_SRC (src), b), ==, GST_FLOW_OK);
  }
  CHECK_INT (gst_app_src_end_of_stream (GST_APP_SRC (src)), ==, GST_FLOW_OK);
  msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  CHECK_MSG (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS,
      "%s: no EOS", desc);
  gst_message_unref (msg);
  htod = emu_query ("calls.cuMemcpyHtoD_v2") - htod0;
  dtoh = emu_query ("calls.cuMemcpyDtoH_v2") - dtoh0;
  peers = emu_query ("calls.cuMemcpyPeer") - peer0;

  CHECK_INT (stat_u64 (sink, "frames"), ==, N_FRAMES);
  CHECK_INT (stat_u64 (sink, "drops"), ==, 0);
  CHECK_INT (stat_u64 (sink, "domain-unreachable"), ==, 0);
  if (peer) {
    CHECK_INT (stat_u64 (sink, "device-copies"), ==, 0);
    CHECK_INT (stat_u64 (sink, "zero-copy-frames"), ==, N_FRAMES);
    CHECK_INT (stat_u64 (sink, "domain-peer-copies"), ==, N_FRAMES);
    CHECK_INT (peers, ==, N_FRAMES);    /* the emulator agrees */
    CHECK_INT (domain_entries_field (sink, "peer-copies", &up0), ==, 1);
    CHECK_INT (up0, ==, N_FRAMES);
    CHECK_INT (domain_entries (sink, &up0), ==, 1);
    CHECK_INT (up0, ==, 0);     /* nothing uploaded */
    CHECK (stat_u64 (sink, "domain-device-bytes") >= (guint64) ROW * H);
    /* nobody in the host domain */
    CHECK_INT (stat_u64 (sink, "domain-downloads"), ==, 0);
    CHECK_INT (dtoh, ==, 0);
    CHECK_INT (stat_u64 (sink, "domain-host-bytes"), ==, 0);
  } else if (download) {
    CHECK_INT (peers, ==, 0);
    CHECK_INT (stat_u64 (sink, "device-copies"), ==, 0);
    CHECK_INT (stat_u64 (sink, "zero-copy-frames"), ==, N_FRAMES);
    CHECK_INT (stat_u64 (sink, "domain-downloads"), ==, N_FRAMES);
    CHECK_INT (dtoh, ==, N_FRAMES);     /* the emulator agrees */
    CHECK_INT (stat_u64 (sink, "domain-uploads"), ==, 0);
    CHECK_INT (stat_u64 (sink, "domain-host-no-slot"), ==, 0);
    CHECK (stat_u64 (sink, "domain-host-bytes") >= (guint64) ROW * H);
    CHECK_INT (domain_entries (sink, &up0), ==, 0);
  } else if (off) {
    CHECK_INT (htod, ==, 0);
    /* the copier was tried once (nocuda) or never */
    CHECK_INT (emu_query ("calls.cuInit"), ==, nocuda ? 1 : 0);
    CHECK_INT (stat_u64 (sink, "domain-uploads"), ==, 0);
    CHECK_INT (domain_entries (sink, &up0), ==, 0);
  } else {
    CHECK_INT (stat_u64 (sink, "domain-uploads"), ==, N_FRAMES);
    CHECK_INT (htod, ==, N_FRAMES);     /* the emulator agrees */
    CHECK_INT (dtoh, ==, 0);
    CHECK_INT (stat_u64 (sink, "domain-downloads"), ==, 0);
    CHECK_INT (domain_entries (sink, &up0), ==, 1);
    CHECK_INT (up0, ==, N_FRAMES);
    CHECK (stat_u64 (sink, "domain-device-bytes") >= (guint64) ROW * H);
  }
  CHECK (gst_element_set_state (pipe, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  for (i = 0; i < n_kids; i++)
    CHECK_INT (pf_test_exit_code (pf_test_wait (pid[i])), ==, 0);
  CHECK_INT (atomic_load (&shared->extra_dtoh), ==, 0);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  g_free (desc);
  /* the sink's pools, segments and copies are gone with it */
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  return 0;
}

int
main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  char dir[256], path[300];
  int res;

  if (argc != 2 || (strcmp (c, "upload") && strcmp (c, "upload-off") &&
          strcmp (c, "upload-nocuda") && strcmp (c, "download") &&
          strcmp (c, "peer"))) {
    fprintf (stderr, "usage: %s upload|upload-off|upload-nocuda|download|"
        "peer\n", argv[0]);
    return 2;
  }
  CHECK_MSG (getenv ("PFEMU_VMM") != NULL, "run with PFEMU_VMM=1 (meson)");
  shared = mmap (NULL, sizeof (*shared), PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK (shared != MAP_FAILED);
  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-shm-domains"), ==, 0);
  snprintf (path, sizeof (path), "%s/sock", dir);
  res = run (c, path);
  pf_test_remove_tree (dir);
  if (res == 0)
    printf ("%s: ok\n", c);
  return res;
}
