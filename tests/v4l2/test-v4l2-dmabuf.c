/* memory:DMABuf caps on pinnedshmsink (issue 34), with the /dev/udmabuf
 * stand-in (pfemu-udmabuf.c, preloaded; PFEMU_UDMABUF=1 turns it on).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules checked:
 *  - a CAPS query with a filter keeps video/x-raw(memory:DMABuf) (and on
 *    GStreamer >= 1.24 format=DMA_DRM with a linear drm-format) only
 *    where /dev/udmabuf opens; ACCEPT_CAPS says the same; system-memory
 *    caps are kept either way, memory:DMABuf of other media never;
 *    without it an upstream that insists on memory:DMABuf fails to
 *    negotiate, before any frame;
 *  - an upstream that negotiated memory:DMABuf and writes into the pool
 *    the sink proposed (dmabufs of its slots) reaches a consumer in
 *    another process byte-exact with no copy, and the consumer's caps are
 *    system memory;
 *  - a foreign dmabuf (a udmabuf over a memfd this test made) is copied
 *    once (counted in copies) and arrives byte-exact, its fds closed;
 *  - a dmabuf memory on a pipe fd, or on a memfd shorter than the memory
 *    claims, is an error on the bus, never a crash.
 * Frames carry the V4L2 stand-in's pattern (pfemu-v4l2.h), which
 * v4l2-consumer checks. No v4l2src is needed: appsrc plays the upstream.
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <gst/allocators/gstdmabuf.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/udmabuf.h>

#include "pfemu-v4l2.h"
#include "v4l2-test-util.h"

#define W 320
#define H 240
#define FRAME_SIZE (W * H * 3 / 2)
#define CAPS_SYS "video/x-raw,format=NV12,width=320,height=240,framerate=60/1"
#define CAPS_DMABUF "video/x-raw(memory:DMABuf),format=NV12,width=320," \
  "height=240,framerate=60/1"

static gchar *tmpdir;
static gchar *sock;
static GstElement *running;

static void
setup (void)
{
  v4l2_test_setup ("pf-v4l2d-XXXXXX", &tmpdir, &sock);
}

static void
teardown (void)
{
  g_unsetenv ("PFEMU_UDMABUF");
  v4l2_test_teardown (&running, &tmpdir, &sock);
}

static guint
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  guint n = 0;

  fail_unless (d != NULL);
  while ((e = readdir (d)))
    n += e->d_name[0] != '.';
  closedir (d);
  return n;
}

/* A real kernel's /dev/udmabuf: the "without" half cannot be checked. */
static gboolean
real_udmabuf (void)
{
  return access ("/dev/udmabuf", F_OK) == 0;
}

static gboolean
has_dmabuf (GstCaps * caps)
{
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f && gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_DMABUF))
      return TRUE;
  }
  return FALSE;
}

static gboolean
accepts (GstPad * pad, const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);
  gboolean ok;

  fail_unless (caps != NULL, "%s", str);
  ok = gst_pad_query_accept_caps (pad, caps);
  gst_caps_unref (caps);
  return ok;
}

/* What a filtered CAPS query and ACCEPT_CAPS answer, @udmabuf or not. */
static void
check_caps (gboolean udmabuf)
{
  GstElement *sink = gst_element_factory_make ("pinnedshmsink", NULL);
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstCaps *filter = gst_caps_from_string (CAPS_DMABUF "; " CAPS_SYS
      "; audio/x-raw(memory:DMABuf),format=S16LE,rate=48000,channels=2");
  GstCaps *res;

  if (udmabuf)
    g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  else
    g_unsetenv ("PFEMU_UDMABUF");

  res = gst_pad_query_caps (pad, filter);
  GST_INFO ("udmabuf %d: %" GST_PTR_FORMAT, udmabuf, res);
  fail_unless_equals_int (has_dmabuf (res), udmabuf);
  fail_unless_equals_int (gst_caps_get_size (res), udmabuf ? 2 : 1);
  /* system memory whatever the kernel has; other media never as dmabuf */
  fail_unless (gst_caps_features_is_equal (gst_caps_get_features (res,
              gst_caps_get_size (res) - 1),
          GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY));
  fail_unless (gst_structure_has_name (gst_caps_get_structure (res, 0),
          "video/x-raw"));
  gst_caps_unref (res);

  fail_unless_equals_int (accepts (pad, CAPS_DMABUF), udmabuf);
  fail_unless (accepts (pad, CAPS_SYS));
  fail_unless (accepts (pad, "application/octet-stream"));
  fail_if (accepts (pad, "audio/x-raw(memory:DMABuf),format=S16LE,"
          "rate=48000,channels=2"));
#if GST_CHECK_VERSION(1, 24, 0)
  /* linear NV12 as DMA_DRM; a tiled modifier is refused */
  fail_unless_equals_int (accepts (pad, "video/x-raw(memory:DMABuf),"
          "format=DMA_DRM,drm-format=NV12,width=320,height=240,"
          "framerate=60/1"), udmabuf);
  fail_if (accepts (pad, "video/x-raw(memory:DMABuf),format=DMA_DRM,"
          "drm-format=NV12:0x0100000000000001,width=320,height=240,"
          "framerate=60/1"));
  {
    GstCaps *drm = gst_caps_from_string ("video/x-raw(memory:DMABuf),"
        "format=DMA_DRM,drm-format={ NV12:0x0100000000000001, NV12 },"
        "width=320,height=240");

    res = gst_pad_query_caps (pad, drm);
    fail_unless_equals_int (gst_caps_get_size (res), udmabuf ? 1 : 0);
    if (udmabuf)
      fail_unless_equals_string (gst_structure_get_string
          (gst_caps_get_structure (res, 0), "drm-format"), "NV12");
    gst_caps_unref (res);
    gst_caps_unref (drm);
  }
#else
  /* no DMA_DRM before 1.24 */
  fail_if (accepts (pad, "video/x-raw(memory:DMABuf),format=DMA_DRM,"
          "drm-format=NV12,width=320,height=240,framerate=60/1"));
#endif
  gst_caps_unref (filter);
  gst_object_unref (pad);
  gst_object_unref (sink);
}

/* Parses @desc (freed; elements "src" and "sink"), sets it PLAYING (the
 * teardown stops it if the case fails); the caller owns all three. */
static GstElement *
play (gchar * desc, GstElement ** src, GstElement ** sink)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);

  fail_unless (pipe != NULL, "%s: %s", desc, err ? err->message : "");
  g_clear_error (&err);
  g_free (desc);
  running = gst_object_ref (pipe);
  *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  return pipe;
}

/* Stops what play() started (to NULL, which must succeed) and drops it. */
static void
stop (GstElement * pipe, GstElement * src, GstElement * sink)
{
  fail_unless_equals_int (gst_element_set_state (pipe, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  gst_clear_object (&running);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipe);
}

/* Without udmabuf an upstream that insists on memory:DMABuf fails to
 * negotiate: an error before any frame. */
static void
check_not_negotiated (void)
{
  gchar *desc = g_strdup_printf ("appsrc name=src format=time caps=\"%s\" ! "
      "pinnedshmsink name=sink socket-path=%s", CAPS_DMABUF, sock);
  GstElement *pipe, *src, *sink;
  GstStructure *stats = NULL;
  GstMessage *msg;
  GstBus *bus;
  gchar *dbg = NULL;
  guint64 frames = 1;

  pipe = play (desc, &src, &sink);
  gst_app_src_push_buffer (GST_APP_SRC (src), gst_buffer_new_allocate (NULL,
          FRAME_SIZE, NULL));
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  bus = gst_element_get_bus (pipe);
  msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR,
      "memory:DMABuf negotiated without udmabuf");
  gst_message_parse_error (msg, NULL, &dbg);
  fail_unless (dbg && strstr (dbg, "not-negotiated"), "%s", dbg);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
  g_object_get (sink, "stats", &stats, NULL);
  gst_structure_get_uint64 (stats, "frames", &frames);
  gst_structure_free (stats);
  fail_unless_equals_int (frames, 0);
  stop (pipe, src, sink);
}

GST_START_TEST (test_caps_with_udmabuf)
{
  check_caps (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_caps_without_udmabuf)
{
  if (real_udmabuf ()) {
    GST_INFO ("/dev/udmabuf exists: only the udmabuf answer is checked");
    check_caps (TRUE);
    return;
  }
  check_caps (FALSE);
  check_not_negotiated ();
}

GST_END_TEST;

/* Writes frame @seq of the stand-in's pattern through @frame. */
static void
fill_frame (GstVideoFrame * frame, guint32 seq)
{
  guint p, y, x, rows_before = 0;

  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (frame); p++) {
    guint8 *d = GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
    guint rows = GST_VIDEO_FRAME_COMP_HEIGHT (frame, p);
    guint rb = GST_VIDEO_FRAME_COMP_WIDTH (frame, p) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (frame, p);

    for (y = 0; y < rows; y++)
      for (x = 0; x < rb; x++)
        d[(gsize) y * stride + x] = pfemu_v4l2_pattern (seq, rows_before + y,
            x);
    rows_before += rows;
  }
  memcpy (GST_VIDEO_FRAME_PLANE_DATA (frame, 0), PFEMU_V4L2_MAGIC, 4);
  memcpy ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, 0) + 4, &seq, 4);
}

typedef struct
{
  guint64 frames, copies, zero_copy;
  gint64 c_frames, c_bad;
  gboolean c_eos;
  gboolean c_sysmem;            /* every frame with system-memory caps */
  gchar *error;
} Run;

typedef GstBuffer *(*MakeBuffer) (GstElement * appsrc, guint32 seq,
    gpointer data);

/* appsrc caps=@caps ! pinnedshmsink, @n buffers from @make, a consumer
 * (v4l2-consumer) in another process. @error_ok: an error ends the run
 * (r->error) instead of failing. */
static void
run_appsrc (const gchar * caps, guint n, MakeBuffer make, gpointer data,
    gboolean error_ok, Run * r)
{
  gchar *desc, *line;
  GstElement *pipe, *src, *sink;
  GPid pid;
  gint out_fd;
  guint i;

  memset (r, 0, sizeof (*r));
  desc = g_strdup_printf ("appsrc name=src format=time caps=\"%s\" ! "
      "pinnedshmsink name=sink socket-path=%s wait-for-connection=true "
      "pool-size=8 max-clients=1 max-client-buffers=4", caps, sock);
  pipe = play (desc, &src, &sink);

  pid = v4l2_test_spawn_consumer (sock, NULL, &out_fd);

  for (i = 0; i < n; i++) {
    GstBuffer *buf = make (src, i + 1, data);

    fail_unless (buf != NULL);
    GST_BUFFER_PTS (buf) = i * GST_SECOND / 60;
    GST_BUFFER_DURATION (buf) = GST_SECOND / 60;
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buf) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));

  line = v4l2_test_finish (pipe, pid, out_fd, error_ok, &r->error, caps);
  r->c_frames = v4l2_test_get_key (line, "frames");
  r->c_bad = v4l2_test_get_key (line, "bad");
  r->c_eos = v4l2_test_get_key (line, "eos") == 1;
  r->c_sysmem = v4l2_test_get_key (line, "sysmem") == 1;
  g_free (line);

  v4l2_test_sink_stats (sink, &r->frames, &r->copies, &r->zero_copy);
  stop (pipe, src, sink);
}

/* All @n frames published (@copies of them copied, the rest zero copy)
 * and reached the consumer byte-exact, then EOS; the consumer maps the
 * segment: system memory to it. */
static void
check_delivered (const Run * r, guint n, guint copies)
{
  fail_unless_equals_int (r->frames, n);
  fail_unless_equals_int (r->copies, copies);
  fail_unless_equals_int (r->zero_copy, n - copies);
  fail_unless_equals_int (r->c_frames, n);
  fail_unless_equals_int (r->c_bad, 0);
  fail_unless (r->c_eos);
  fail_unless (r->c_sysmem);
}

/* ---- through the sink's pool ---- */

typedef struct
{
  GstBufferPool *pool;
  GstVideoInfo info;
  guint dmabufs;
} PoolState;

/* What an importer/exporter upstream does: asks the sink for its pool
 * for the negotiated memory:DMABuf caps (once), writes into its buffers. */
static GstBuffer *
make_from_pool (GstElement * appsrc, guint32 seq, gpointer data)
{
  PoolState *ps = data;
  GstBuffer *buf = NULL, *tmp;
  GstVideoFrame frame;
  GstVideoInfo info;
  GstVideoMeta *vmeta;
  GstMemory *mem;
  GstMapInfo map;
  GstPinnedSegment *seg;
  gsize offset = 0;
  guint8 *slot;
  guint i;

  if (ps->pool == NULL) {
    GstPad *pad = gst_element_get_static_pad (appsrc, "src");
    GstCaps *caps = gst_pad_get_current_caps (pad);
    GstQuery *q;
    GstStructure *config;
    guint size;

    if (caps == NULL) {
      /* the caps event goes out with the first buffer: ask with ours */
      caps = gst_caps_from_string (CAPS_DMABUF);
    }
    q = gst_query_new_allocation (caps, TRUE);
    fail_unless (gst_pad_peer_query (pad, q));
    fail_unless (gst_query_get_n_allocation_pools (q) > 0);
    gst_query_parse_nth_allocation_pool (q, 0, &ps->pool, &size, NULL, NULL);
    fail_unless (ps->pool != NULL);
    fail_unless (gst_video_info_from_caps (&ps->info, caps));
    config = gst_buffer_pool_get_config (ps->pool);
    gst_buffer_pool_config_set_params (config, caps, size, 8, 8);
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_META);
    fail_unless (gst_buffer_pool_set_config (ps->pool, config));
    fail_unless (gst_buffer_pool_set_active (ps->pool, TRUE));
    gst_query_unref (q);
    gst_caps_unref (caps);
    gst_object_unref (pad);
  }
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (ps->pool, &buf,
          NULL), GST_FLOW_OK);
  mem = gst_buffer_peek_memory (buf, 0);
  ps->dmabufs += gst_is_dmabuf_memory (mem);
  /* Written through this process's mapping of the slot (the stand-in's
   * writable dmabuf mapping is an mremap that valgrind does not follow),
   * with the pool's layout, then read back through the dmabuf's own fd:
   * the dmabuf is the slot. */
  seg = gst_pinned_memory_get_segment (mem, &offset);
  fail_unless (seg != NULL);
  slot = (guint8 *) pf_segment_get_base (seg) + offset;
  info = ps->info;
  vmeta = gst_buffer_get_video_meta (buf);
  fail_unless (vmeta != NULL);
  for (i = 0; i < vmeta->n_planes; i++) {
    info.offset[i] = vmeta->offset[i];
    info.stride[i] = vmeta->stride[i];
  }
  tmp = gst_buffer_new_wrapped_full (0, slot, mem->size, 0, mem->size, NULL,
      NULL);
  fail_unless (gst_video_frame_map (&frame, &info, tmp, GST_MAP_WRITE));
  fill_frame (&frame, seq);
  gst_video_frame_unmap (&frame);
  gst_buffer_unref (tmp);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless (memcmp (map.data, slot, mem->size) == 0);
  gst_memory_unmap (mem, &map);
  return buf;
}

GST_START_TEST (test_dmabuf_caps_pool)
{
  PoolState ps = { NULL, };
  Run r;

  g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  run_appsrc (CAPS_DMABUF, 60, make_from_pool, &ps, FALSE, &r);
  /* every frame was a dmabuf of a slot, published without a copy */
  fail_unless_equals_int (ps.dmabufs, 60);
  check_delivered (&r, 60, 0);
  fail_unless (gst_buffer_pool_set_active (ps.pool, FALSE));
  gst_object_unref (ps.pool);
}

GST_END_TEST;

/* ---- foreign dmabufs ---- */

static gsize
page_round (gsize n)
{
  gsize page = sysconf (_SC_PAGESIZE);

  return (n + page - 1) / page * page;
}

/* A udmabuf over a memfd holding frame @seq (default NV12 layout),
 * wrapped as GstDmaBufMemory that owns the dmabuf fd. */
static GstBuffer *
make_foreign (GstElement * appsrc, guint32 seq, gpointer data)
{
  GstAllocator *alloc = data;
  gsize span = page_round (FRAME_SIZE);
  struct udmabuf_create c = { 0, };
  GstVideoInfo info;
  GstVideoFrame frame;
  GstBuffer *tmp;
  GstMemory *mem;
  int memfd, dev, dfd;
  guint8 *p;

  memfd = memfd_create ("foreign-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  fail_unless (memfd >= 0);
  fail_unless (ftruncate (memfd, span) == 0);
  p = mmap (NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  fail_unless (p != MAP_FAILED);
  /* the pattern, through a wrapped buffer of the mapping */
  fail_unless (gst_video_info_set_format (&info, GST_VIDEO_FORMAT_NV12, W, H));
  tmp = gst_buffer_new_wrapped_full (0, p, span, 0, FRAME_SIZE, NULL, NULL);
  fail_unless (gst_video_frame_map (&frame, &info, tmp, GST_MAP_WRITE));
  fill_frame (&frame, seq);
  gst_video_frame_unmap (&frame);
  gst_buffer_unref (tmp);
  munmap (p, span);
  fail_unless (fcntl (memfd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);

  dev = open ("/dev/udmabuf", O_RDWR | O_CLOEXEC);
  fail_unless (dev >= 0, "/dev/udmabuf: %s", g_strerror (errno));
  c.memfd = memfd;
  c.flags = UDMABUF_FLAGS_CLOEXEC;
  c.offset = 0;
  c.size = span;
  dfd = ioctl (dev, UDMABUF_CREATE, &c);
  fail_unless (dfd >= 0, "UDMABUF_CREATE: %s", g_strerror (errno));
  close (dev);
  close (memfd);                /* the dmabuf keeps the pages */

  mem = gst_dmabuf_allocator_alloc (alloc, dfd, FRAME_SIZE);
  tmp = gst_buffer_new ();
  gst_buffer_append_memory (tmp, mem);
  return tmp;
}

GST_START_TEST (test_foreign_dmabuf_copied)
{
  GstAllocator *alloc = gst_dmabuf_allocator_new ();
  guint fds;
  Run r;

  g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  fds = count_fds ();
  run_appsrc (CAPS_DMABUF, 30, make_foreign, alloc, FALSE, &r);
  check_delivered (&r, 30, 30);
  /* every dmabuf (and its memfd) closed with its buffer */
  fail_unless_equals_int (count_fds (), fds);
  gst_object_unref (alloc);
}

GST_END_TEST;

typedef struct
{
  GstAllocator *alloc;
  int fd;
} BadState;

/* A dmabuf memory on the state's fd claiming FRAME_SIZE bytes; the fd
 * stays ours. */
static GstBuffer *
make_bad (GstElement * appsrc, guint32 seq, gpointer data)
{
  BadState *bs = data;
  GstBuffer *buf = gst_buffer_new ();

  gst_buffer_append_memory (buf,
      gst_dmabuf_allocator_alloc_with_flags (bs->alloc, bs->fd, FRAME_SIZE,
          GST_FD_MEMORY_FLAG_DONT_CLOSE));
  return buf;
}

static void
check_bad (int fd, const gchar * what)
{
  BadState bs = { gst_dmabuf_allocator_new (), fd };
  Run r;

  run_appsrc (CAPS_DMABUF, 3, make_bad, &bs, TRUE, &r);
  fail_unless (r.error != NULL, "%s: no error", what);
  fail_unless (strstr (r.error, "Could not read a dmabuf frame") != NULL,
      "%s: %s", what, r.error);
  GST_INFO ("%s: %s", what, r.error);
  fail_unless_equals_int (r.copies, 0);
  g_free (r.error);
  gst_object_unref (bs.alloc);
}

GST_START_TEST (test_bad_dmabuf_fd)
{
  int pipefd[2], memfd;

  g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  fail_unless (pipe (pipefd) == 0);
  check_bad (pipefd[0], "a pipe");
  close (pipefd[0]);
  close (pipefd[1]);

  /* one page where the memory claims a frame: a mapping would fault */
  memfd = memfd_create ("short", MFD_CLOEXEC);
  fail_unless (memfd >= 0);
  fail_unless (ftruncate (memfd, 4096) == 0);
  check_bad (memfd, "a short memfd");
  close (memfd);
}

GST_END_TEST;

static Suite *
v4l2_dmabuf_suite (void)
{
  Suite *s = suite_create ("v4l2-dmabuf");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps_with_udmabuf);
  tcase_add_test (tc, test_caps_without_udmabuf);
  tcase_add_test (tc, test_dmabuf_caps_pool);
  tcase_add_test (tc, test_foreign_dmabuf_copied);
  tcase_add_test (tc, test_bad_dmabuf_fd);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  if (dlsym (RTLD_DEFAULT, "pfemu_v4l2_get_stats") == NULL) {
    g_printerr ("the udmabuf stand-in is not preloaded: run through meson "
        "test --suite v4l2 (LD_PRELOAD=libpfemu-v4l2.so)\n");
    return 1;
  }
  return gst_check_run_suite (v4l2_dmabuf_suite (), "v4l2-dmabuf", __FILE__);
}
