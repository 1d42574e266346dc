/* A camera writes straight into the pinned pool (issue 34), through
 * GStreamer's real v4l2src on the V4L2 stand-in (pfemu-v4l2.c, preloaded
 * by tests/v4l2/meson.build).
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules checked:
 *  - the stand-in is as strict as a driver: misaligned, short or unmapped
 *    USERPTR buffers, a buffer queued twice or over another queued one,
 *    REQBUFS/S_FMT while busy are refused; buffers come back in the order
 *    they were filled, poll() wakes for a filled buffer, and a frame it
 *    writes over a range marked held is counted (so the count can fail);
 *  - v4l2src io-mode=userptr ! pinnedshmsink: the driver fills the sink's
 *    pinned slots in place (copies 0, every frame zero copy), and a
 *    consumer in another process gets every frame byte-exact (YUY2, NV12,
 *    and rows the driver pads, whose strides the pool takes on);
 *  - io-mode=mmap still works, with one counted copy per frame;
 *  - frames held by consumers (in another process, and in this one) are
 *    never written by the driver while held: a slot is queued again only
 *    once everyone released it.
 * Without v4l2src (gst-plugins-good's video4linux2) the tests exit 77
 * (SKIP) and say why.
 */
#include <gst/check/gstcheck.h>
#include <gst/video/video.h>
#include <gst/allocators/gstdmabuf.h>
#include <gst/pinnedflow/gstpinnedallocator.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/videodev2.h>

#include "pfemu-v4l2.h"
#include "v4l2-test-util.h"

static gchar *tmpdir;
static gchar *sock;
/* The pipeline a failed assertion would leave running: the teardown
 * stops it (with CK_FORK=no, as under valgrind, a test that fails jumps
 * out; a source left paused would hang gst_task_cleanup_all()). */
static GstElement *running;

static void
get_stats (PfemuV4l2Stats * st)
{
  PfemuV4l2GetStats fn = (PfemuV4l2GetStats) dlsym (RTLD_DEFAULT,
      "pfemu_v4l2_get_stats");

  fail_unless (fn != NULL, "the stand-in is not preloaded (LD_PRELOAD)");
  fn (st);
}

static void
setup (void)
{
  v4l2_test_setup ("pf-v4l2-XXXXXX", &tmpdir, &sock);
}

static void
teardown (void)
{
  v4l2_test_teardown (&running, &tmpdir, &sock);
}

/* ---- the stand-in's own rules ---- */

static int
xioctl (int fd, unsigned long req, void *arg)
{
  return ioctl (fd, req, arg) < 0 ? -errno : 0;
}

static int
qbuf_userptr (int fd, guint index, void *p, gsize len)
{
  struct v4l2_buffer b = { 0, };

  b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  b.memory = V4L2_MEMORY_USERPTR;
  b.index = index;
  b.m.userptr = (unsigned long) p;
  b.length = len;
  return xioctl (fd, VIDIOC_QBUF, &b);
}

GST_START_TEST (test_standin_rules)
{
  PfemuV4l2Hold hold = (PfemuV4l2Hold) dlsym (RTLD_DEFAULT,
      "pfemu_v4l2_hold");
  PfemuV4l2Unhold unhold = (PfemuV4l2Unhold) dlsym (RTLD_DEFAULT,
      "pfemu_v4l2_unhold");
  struct v4l2_capability cap;
  struct v4l2_format fmt = { 0, };
  struct v4l2_requestbuffers rb = { 0, };
  struct v4l2_streamparm parm = { 0, };
  struct v4l2_buffer b;
  struct pollfd pfd;
  PfemuV4l2Stats st0, st1;
  gsize page = sysconf (_SC_PAGESIZE), size, span;
  guint8 *mem;
  int fd, type = V4L2_BUF_TYPE_VIDEO_CAPTURE, i;
  guint32 seq, last_seq = 0;

  fail_unless (hold && unhold);
  fd = open (PFEMU_V4L2_DEFAULT_DEVICE, O_RDWR);
  fail_unless (fd >= 0, "open: %s", g_strerror (errno));
  fail_unless_equals_int (xioctl (fd, VIDIOC_QUERYCAP, &cap), 0);
  fail_unless (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE);
  fail_unless_equals_int (xioctl (fd, VIDIOC_G_INPUT, &i), -ENOTTY);

  fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_NV12;
  fmt.fmt.pix.width = 320;
  fmt.fmt.pix.height = 240;
  fail_unless_equals_int (xioctl (fd, VIDIOC_S_FMT, &fmt), 0);
  fail_unless_equals_int (fmt.fmt.pix.bytesperline, 320);
  size = fmt.fmt.pix.sizeimage;
  fail_unless_equals_int (size, 320 * 240 * 3 / 2);
  parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  parm.parm.capture.timeperframe.numerator = 1;
  parm.parm.capture.timeperframe.denominator = 240;
  fail_unless_equals_int (xioctl (fd, VIDIOC_S_PARM, &parm), 0);
  fail_unless_equals_int (parm.parm.capture.timeperframe.denominator, 240);

  rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  rb.memory = V4L2_MEMORY_USERPTR;
  rb.count = 4;
  fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), 0);
  fail_unless_equals_int (rb.count, 4);
  fail_unless_equals_int (xioctl (fd, VIDIOC_S_FMT, &fmt), -EBUSY);

  span = (size + page - 1) / page * page;
  mem = mmap (NULL, span * 4, PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  fail_unless (mem != MAP_FAILED);

  /* what a driver refuses */
  fail_unless_equals_int (qbuf_userptr (fd, 0, mem + 64, size), -EINVAL);
  fail_unless_equals_int (qbuf_userptr (fd, 0, mem, size - 1), -EINVAL);
  fail_unless_equals_int (qbuf_userptr (fd, 9, mem, size), -EINVAL);
  fail_unless_equals_int (qbuf_userptr (fd, 0, NULL, size), -EINVAL);
  {
    guint8 *gone = mmap (NULL, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
        -1, 0);

    munmap (gone, span);
    fail_unless_equals_int (qbuf_userptr (fd, 0, gone, size), -EFAULT);
  }
  fail_unless_equals_int (qbuf_userptr (fd, 0, mem, size), 0);
  fail_unless_equals_int (qbuf_userptr (fd, 0, mem, size), -EINVAL);
  fail_unless_equals_int (qbuf_userptr (fd, 1, mem, size), -EINVAL);
  for (i = 1; i < 4; i++)
    fail_unless_equals_int (qbuf_userptr (fd, i, mem + i * span, size), 0);

  /* nothing filled before STREAMON: poll says so */
  pfd.fd = fd;
  pfd.events = POLLIN;
  fail_unless_equals_int (poll (&pfd, 1, 50), 0);

  /* buffer 2 is held by someone reading it: the write is counted */
  get_stats (&st0);
  hold (mem + 2 * span, size);
  fail_unless_equals_int (xioctl (fd, VIDIOC_STREAMON, &type), 0);
  rb.count = 2;
  fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), -EBUSY);

  for (i = 0; i < 4; i++) {
    fail_unless_equals_int (poll (&pfd, 1, 5000), 1);
    fail_unless (pfd.revents & POLLIN);
    memset (&b, 0, sizeof (b));
    b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    b.memory = V4L2_MEMORY_USERPTR;
    fail_unless_equals_int (xioctl (fd, VIDIOC_DQBUF, &b), 0);
    /* in the order queued, each with its frame */
    fail_unless_equals_int (b.index, i);
    fail_unless_equals_int (b.m.userptr, (unsigned long) (mem + i * span));
    fail_unless_equals_int (b.bytesused, size);
    fail_unless (memcmp (mem + i * span, PFEMU_V4L2_MAGIC, 4) == 0);
    memcpy (&seq, mem + i * span + 4, 4);
    fail_unless_equals_int (seq, b.sequence);
    fail_unless (i == 0 || seq > last_seq);
    last_seq = seq;
    /* row 1 of plane 0 and the last row of the UV plane */
    fail_unless_equals_int (mem[i * span + 320 + 5],
        pfemu_v4l2_pattern (seq, 1, 5));
    fail_unless_equals_int (mem[i * span + size - 1],
        pfemu_v4l2_pattern (seq, 359, 319));
  }
  unhold (mem + 2 * span);
  get_stats (&st1);
  fail_unless_equals_int (st1.held_writes - st0.held_writes, 1);
  fail_unless (st1.userptr_frames - st0.userptr_frames >= 4);

  /* empty: a non-blocking DQBUF says EAGAIN, STREAMOFF, then REQBUFS 0 */
  fcntl (fd, F_SETFL, O_NONBLOCK);
  memset (&b, 0, sizeof (b));
  b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  b.memory = V4L2_MEMORY_USERPTR;
  fail_unless_equals_int (xioctl (fd, VIDIOC_DQBUF, &b), -EAGAIN);
  b.memory = V4L2_MEMORY_MMAP;
  fail_unless_equals_int (xioctl (fd, VIDIOC_DQBUF, &b), -EINVAL);
  fail_unless_equals_int (xioctl (fd, VIDIOC_STREAMOFF, &type), 0);
  rb.count = 0;
  fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), 0);

  /* MMAP buffers: REQBUFS is EBUSY while one is mapped */
  rb.memory = V4L2_MEMORY_MMAP;
  rb.count = 2;
  fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), 0);
  memset (&b, 0, sizeof (b));
  b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  b.memory = V4L2_MEMORY_MMAP;
  b.index = 1;
  fail_unless_equals_int (xioctl (fd, VIDIOC_QUERYBUF, &b), 0);
  {
    void *m = mmap (NULL, b.length, PROT_READ, MAP_SHARED, fd, b.m.offset);

    fail_unless (m != MAP_FAILED);
    fail_unless (mmap (NULL, b.length + 4096, PROT_READ, MAP_SHARED, fd,
            b.m.offset) == MAP_FAILED);
    rb.count = 0;
    fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), -EBUSY);
    munmap (m, b.length);
  }
  fail_unless_equals_int (xioctl (fd, VIDIOC_REQBUFS, &rb), 0);

  munmap (mem, span * 4);
  close (fd);
}

GST_END_TEST;

/* ---- v4l2src ! pinnedshmsink, a consumer in another process ---- */

typedef struct
{
  guint64 frames, copies, zero_copy;
  gint64 c_frames, c_bad, c_held, c_held_bad, c_held_seen;
  gboolean c_eos;
  gchar *error;                 /* the pipeline's error, when expected */
} RunResult;

typedef struct
{
  GstBuffer *held[4];
  GstMapInfo map[4];
  guint n_held, seen;
  PfemuV4l2Hold hold;
  PfemuV4l2Unhold unhold;
} HoldProbe;

static GstPadProbeReturn
hold_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  HoldProbe *hp = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  guint i;

  if (hp->n_held < 4 && hp->seen == 0) {
    i = hp->n_held++;
    hp->held[i] = gst_buffer_ref (buf);
    fail_unless (gst_buffer_map (buf, &hp->map[i], GST_MAP_READ));
    hp->hold (hp->map[i].data, hp->map[i].size);
    return GST_PAD_PROBE_OK;
  }
  if (hp->n_held > 0 && ++hp->seen == 20) {
    for (i = 0; i < hp->n_held; i++) {
      hp->unhold (hp->map[i].data);
      gst_buffer_unmap (hp->held[i], &hp->map[i]);
      gst_buffer_unref (hp->held[i]);
    }
    hp->n_held = 0;
  }
  return GST_PAD_PROBE_OK;
}

/* Runs v4l2src io-mode=@mode (num-buffers @n, @format at 320x240 60/1)
 * into pinnedshmsink, with one consumer process holding @hold frames
 * for @hold_for more; @in_process_hold: the sink's pad also keeps 4
 * buffers for 20 frames, their bytes marked held for the stand-in.
 * @error_ok: an error message ends the run (r->error, the consumer
 * killed) instead of failing the test. */
static void
run_full (const gchar * mode, const gchar * format, guint n, guint hold,
    guint hold_for, gboolean in_process_hold, gboolean error_ok, RunResult * r)
{
  gchar *desc, *extra[3], *line, *what;
  gchar hold_s[16], hold_for_s[16];
  GstElement *pipe, *sink;
  GError *err = NULL;
  GPid pid;
  gint out_fd;
  HoldProbe hp = { {0,}, };

  memset (r, 0, sizeof (*r));
  desc = g_strdup_printf ("v4l2src device=%s io-mode=%s num-buffers=%u ! "
      "video/x-raw,format=%s,width=320,height=240,framerate=60/1 ! "
      "pinnedshmsink name=sink socket-path=%s wait-for-connection=true "
      "pool-size=24 processing-deadline=0 max-clients=2 "
      "max-client-buffers=%u",
      PFEMU_V4L2_DEFAULT_DEVICE, mode, n, format, sock, MAX (4, hold + 2));
  pipe = gst_parse_launch (desc, &err);
  fail_unless (pipe != NULL, "%s: %s", desc, err ? err->message : "");
  g_free (desc);
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  running = gst_object_ref (pipe);
  if (in_process_hold) {
    GstPad *pad = gst_element_get_static_pad (sink, "sink");

    hp.hold = (PfemuV4l2Hold) dlsym (RTLD_DEFAULT, "pfemu_v4l2_hold");
    hp.unhold = (PfemuV4l2Unhold) dlsym (RTLD_DEFAULT, "pfemu_v4l2_unhold");
    fail_unless (hp.hold && hp.unhold);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, hold_probe, &hp, NULL);
    gst_object_unref (pad);
  }
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);

  g_snprintf (hold_s, sizeof (hold_s), "%u", hold);
  g_snprintf (hold_for_s, sizeof (hold_for_s), "%u", hold_for);
  extra[0] = hold_s;
  extra[1] = hold_for_s;
  extra[2] = NULL;
  pid = v4l2_test_spawn_consumer (sock, extra, &out_fd);

  what = g_strdup_printf ("%s %s", mode, format);
  line = v4l2_test_finish (pipe, pid, out_fd, error_ok, &r->error, what);
  g_free (what);
  r->c_frames = v4l2_test_get_key (line, "frames");
  r->c_bad = v4l2_test_get_key (line, "bad");
  r->c_held = v4l2_test_get_key (line, "held");
  r->c_held_bad = v4l2_test_get_key (line, "held_bad");
  r->c_held_seen = v4l2_test_get_key (line, "held_seen");
  r->c_eos = v4l2_test_get_key (line, "eos") == 1;
  g_free (line);

  v4l2_test_sink_stats (sink, &r->frames, &r->copies, &r->zero_copy);
  fail_unless_equals_int (gst_element_set_state (pipe, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless (hp.n_held == 0 || !in_process_hold);
  gst_clear_object (&running);
  gst_object_unref (sink);
  gst_object_unref (pipe);
}

static void
run (const gchar * mode, const gchar * format, guint n, guint hold,
    guint hold_for, RunResult * r)
{
  run_full (mode, format, n, hold, hold_for, FALSE, FALSE, r);
}

/* every frame reached the consumer intact */
static void
check_delivered (const RunResult * r, guint n)
{
  fail_unless_equals_int (r->frames, n);
  fail_unless_equals_int (r->c_frames, n);
  fail_unless_equals_int (r->c_bad, 0);
  fail_unless (r->c_eos);
}

static void
check_userptr (const gchar * format)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  get_stats (&st0);
  run ("userptr", format, 90, 0, 0, &r);
  get_stats (&st1);
  check_delivered (&r, 90);
  fail_unless_equals_int (r.copies, 0);
  fail_unless_equals_int (r.zero_copy, 90);
  /* the driver filled user memory: the pinned slots */
  fail_unless (st1.userptr_frames - st0.userptr_frames >= 90);
  fail_unless_equals_int (st1.mmap_frames - st0.mmap_frames, 0);
  fail_unless_equals_int (st1.held_writes - st0.held_writes, 0);
}

GST_START_TEST (test_userptr_yuy2)
{
  check_userptr ("YUY2");
}

GST_END_TEST;

GST_START_TEST (test_userptr_nv12)
{
  check_userptr ("NV12");
}

GST_END_TEST;

/* The pool configured as v4l2src io-mode=userptr configures the pool it
 * imports: the caps, the driver's sizeimage, a video meta; the slots'
 * rows and planes are laid out as the driver's. */
static void
check_pool_layout (const gchar * format, guint size, gint stride, gsize offset1)
{
  GstElement *sink = gst_element_factory_make ("pinnedshmsink", NULL);
  GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format",
      G_TYPE_STRING, format, "width", G_TYPE_INT, 320, "height", G_TYPE_INT,
      240, "framerate", GST_TYPE_FRACTION, 60, 1, NULL);
  GstQuery *q = gst_query_new_allocation (caps, TRUE);
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstBufferPool *pool = NULL;
  GstStructure *config;
  GstBuffer *buf = NULL;
  GstVideoMeta *vmeta;

  fail_unless (gst_pad_query (pad, q));
  fail_unless (gst_query_get_n_allocation_pools (q) > 0);
  gst_query_parse_nth_allocation_pool (q, 0, &pool, NULL, NULL, NULL);
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, size, 4, 4);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  vmeta = gst_buffer_get_video_meta (buf);
  fail_unless (vmeta != NULL);
  fail_unless_equals_int (vmeta->stride[0], stride);
  fail_unless_equals_int (vmeta->offset[1], offset1);
  fail_unless (gst_buffer_get_size (buf) >= size);
  /* page-aligned slots: what a driver's USERPTR check wants */
  {
    GstMapInfo map;

    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    fail_unless_equals_int ((guintptr) map.data % sysconf (_SC_PAGESIZE), 0);
    gst_buffer_unmap (buf, &map);
  }
  gst_buffer_unref (buf);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_query_unref (q);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (sink);
}

/* A driver that pads its rows (bytesperline 768 for 640 bytes of YUY2,
 * 512 for NV12's 320). The pool takes on the driver's strides when asked
 * for its sizeimage (above), and v4l2src accepts its buffers (the layout
 * matches); but v4l2src (1.22 to 1.28) queues a USERPTR buffer with the
 * caps' frame size as its length, shorter than sizeimage, and a driver
 * (vb2, and the stand-in) refuses that: io-mode=userptr errors out
 * cleanly there, io-mode=mmap delivers every frame with its padded rows
 * (one copy each). docs/camera.md says so. */
GST_START_TEST (test_padded_rows)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  check_pool_layout ("YUY2", 768 * 240, 768, 0);
  check_pool_layout ("NV12", 512 * 360, 512, 512 * 240);

  g_setenv ("PFEMU_V4L2_STRIDE_ALIGN", "256", TRUE);
  run ("mmap", "YUY2", 30, 0, 0, &r);
  check_delivered (&r, 30);
  fail_unless_equals_int (r.copies, 30);
  run ("mmap", "NV12", 30, 0, 0, &r);
  check_delivered (&r, 30);

  get_stats (&st0);
  run_full ("userptr", "YUY2", 30, 0, 0, FALSE, TRUE, &r);
  get_stats (&st1);
  fail_unless (r.error != NULL, "v4l2src queued the short buffers: "
      "update test_padded_rows and docs/camera.md");
  fail_unless (strstr (r.error, "v4l2src") != NULL, "%s", r.error);
  /* refused by the driver's QBUF, nothing written */
  fail_unless (st1.refused > st0.refused);
  fail_unless_equals_int (st1.frames - st0.frames, 0);
  g_free (r.error);
  g_unsetenv ("PFEMU_V4L2_STRIDE_ALIGN");
}

GST_END_TEST;

GST_START_TEST (test_mmap_copies)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  get_stats (&st0);
  run ("mmap", "YUY2", 60, 0, 0, &r);
  get_stats (&st1);
  check_delivered (&r, 60);
  /* the driver's own buffers: one counted copy into the pool per frame */
  fail_unless_equals_int (r.copies, 60);
  fail_unless_equals_int (r.zero_copy, 0);
  fail_unless (st1.mmap_frames - st0.mmap_frames >= 60);
}

GST_END_TEST;

/* Consumers hold frames while the camera runs: the consumer process keeps
 * 6 frames while 40 more arrive, and this process keeps 4 of them for 20
 * frames, marked held for the stand-in. Their slots are not given back
 * to the driver meanwhile: the held frames are intact when re-read, and
 * the stand-in wrote no frame over a held range. */
GST_START_TEST (test_held_frames_not_written)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  get_stats (&st0);
  run_full ("userptr", "YUY2", 120, 6, 40, TRUE, FALSE, &r);
  get_stats (&st1);
  check_delivered (&r, 120);
  fail_unless_equals_int (r.copies, 0);
  fail_unless_equals_int (r.c_held, 6);
  fail_unless (r.c_held_seen >= 40, "held for %" G_GINT64_FORMAT " frames",
      r.c_held_seen);
  fail_unless_equals_int (r.c_held_bad, 0);
  fail_unless_equals_int (st1.held_writes - st0.held_writes, 0);
  /* the camera kept running over the holds */
  fail_unless (st1.userptr_frames - st0.userptr_frames >= 120);
}

GST_END_TEST;

/* The pool's memory as an importer sees it: dmabufs that are still the
 * segment's slots (zero copy in the sink) with udmabuf, pinned memory
 * without it; without it the sink says so once on the bus (INFO), however
 * many ALLOCATION queries come. */
static void
check_pool_memory (gboolean udmabuf)
{
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *sink = gst_element_factory_make ("pinnedshmsink", NULL);
  GstCaps *caps = gst_caps_from_string ("video/x-raw,format=NV12,"
      "width=320,height=240,framerate=60/1");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstBus *bus = gst_element_get_bus (pipe);
  GstBufferPool *pool = NULL;
  GstBuffer *buf = NULL;
  GstMemory *mem;
  GstMessage *m;
  gsize offset = 1;
  guint i, infos = 0;
  GstPinnedSegment *seg;

  gst_bin_add (GST_BIN (pipe), sink);
  for (i = 0; i < 2; i++) {
    GstQuery *q = gst_query_new_allocation (caps, TRUE);

    fail_unless (gst_pad_query (pad, q));
    if (i == 0)
      gst_query_parse_nth_allocation_pool (q, 0, &pool, NULL, NULL, NULL);
    gst_query_unref (q);
  }
  fail_unless (pool != NULL);
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  mem = gst_buffer_peek_memory (buf, 0);
  fail_unless_equals_int (gst_is_dmabuf_memory (mem), udmabuf);
  /* either way the sink finds the slot in its segment, and the segment
   * is sealed against writers (consumers map it read-only); with udmabuf
   * the seal comes after the export (the kernel refuses sealed memfds) */
  seg = gst_pinned_memory_get_segment (mem, &offset);
  fail_unless (seg != NULL);
  fail_unless_equals_int (offset % sysconf (_SC_PAGESIZE), 0);
  fail_unless (fcntl (pf_segment_get_fd (seg), F_GET_SEALS) &
      F_SEAL_FUTURE_WRITE);
  gst_buffer_unref (buf);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_INFO))) {
    GError *err = NULL;

    gst_message_parse_info (m, &err, NULL);
    if (strstr (err->message, "not as dmabufs"))
      infos++;
    g_error_free (err);
    gst_message_unref (m);
  }
  fail_unless_equals_int (infos, udmabuf ? 0 : 1);
  gst_object_unref (bus);
  gst_object_unref (pad);
  gst_caps_unref (caps);
  gst_object_unref (pipe);
}

/* io-mode=dmabuf-import on the udmabuf stand-in: the driver writes every
 * frame into the slot's dmabuf, the sink publishes it without a copy. */
GST_START_TEST (test_dmabuf_import)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  g_setenv ("PFEMU_UDMABUF", "1", TRUE);
  check_pool_memory (TRUE);
  get_stats (&st0);
  run ("dmabuf-import", "YUY2", 60, 0, 0, &r);
  check_delivered (&r, 60);
  fail_unless_equals_int (r.copies, 0);
  fail_unless_equals_int (r.zero_copy, 60);
  run ("dmabuf-import", "NV12", 60, 0, 0, &r);
  check_delivered (&r, 60);
  fail_unless_equals_int (r.copies, 0);
  get_stats (&st1);
  fail_unless (st1.dmabuf_frames - st0.dmabuf_frames >= 120);
  fail_unless (st1.udmabuf_created > st0.udmabuf_created);
  fail_unless_equals_int (st1.held_writes - st0.held_writes, 0);
  g_unsetenv ("PFEMU_UDMABUF");
}

GST_END_TEST;

/* Without /dev/udmabuf: pinned memory, said once on the bus; v4l2src
 * io-mode=dmabuf-import cannot import it and fails to start with an
 * error (no frame written), io-mode=userptr works (test_userptr_*). */
GST_START_TEST (test_dmabuf_fallback)
{
  PfemuV4l2Stats st0, st1;
  RunResult r;

  g_unsetenv ("PFEMU_UDMABUF");
  if (access ("/dev/udmabuf", F_OK) == 0) {
    /* a kernel with udmabuf: the fallback is not reachable here */
    GST_INFO ("/dev/udmabuf exists: only the udmabuf path is checked");
    check_pool_memory (TRUE);
    return;
  }
  check_pool_memory (FALSE);
  get_stats (&st0);
  run_full ("dmabuf-import", "YUY2", 30, 0, 0, FALSE, TRUE, &r);
  get_stats (&st1);
  fail_unless (r.error != NULL, "dmabuf-import ran on pinned memory");
  fail_unless (strstr (r.error, "v4l2src") != NULL, "%s", r.error);
  fail_unless_equals_int (st1.frames - st0.frames, 0);
  g_free (r.error);
}

GST_END_TEST;

static Suite *
v4l2_suite (void)
{
  Suite *s = suite_create ("v4l2");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_standin_rules);
  tcase_add_test (tc, test_userptr_yuy2);
  tcase_add_test (tc, test_userptr_nv12);
  tcase_add_test (tc, test_padded_rows);
  tcase_add_test (tc, test_mmap_copies);
  tcase_add_test (tc, test_held_frames_not_written);
  tcase_add_test (tc, test_dmabuf_import);
  tcase_add_test (tc, test_dmabuf_fallback);
  return s;
}

int
main (int argc, char **argv)
{
  GstElementFactory *f;

  gst_check_init (&argc, &argv);
  f = gst_element_factory_find ("v4l2src");
  if (f == NULL) {
    g_print ("SKIP: no v4l2src (gstreamer1.0-plugins-good's video4linux2 "
        "plugin is not installed)\n");
    return 77;
  }
  gst_object_unref (f);
  if (dlsym (RTLD_DEFAULT, "pfemu_v4l2_get_stats") == NULL) {
    g_printerr ("the V4L2 stand-in is not preloaded: run through meson "
        "test --suite v4l2 (LD_PRELOAD=libpfemu-v4l2.so)\n");
    return 1;
  }
  return gst_check_run_suite (v4l2_suite (), "v4l2", __FILE__);
}
