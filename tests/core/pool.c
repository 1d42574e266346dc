/* Core tests: GstPinnedBufferPool
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/pinnedflow/pinnedflow.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf-test-util.h"

static int fds_at_start;

static void
setup (void)
{
  fds_at_start = pf_test_count_fds ();
  fail_unless_equals_int (pf_segment_count_live (), 0);
}

static void
teardown (void)
{
  fail_unless_equals_int (pf_segment_count_live (), 0);
  fail_unless_equals_int (pf_test_count_fds (), fds_at_start);
}

static GstCaps *
video_caps (const gchar * format, gint width, gint height)
{
  return gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, format,
      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height,
      "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
}

/* A configured, active pool (asserts along the way). */
static GstBufferPool *
make_pool (GstCaps * caps, guint size, guint min, guint max,
    GstPinnedSegmentFlags flags, gboolean set_flags)
{
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);

  fail_unless (GST_IS_PINNED_BUFFER_POOL (pool));
  gst_buffer_pool_config_set_params (config, caps, size, min, max);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (set_flags)
    gst_pinned_buffer_pool_config_set_segment_flags (config, flags);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  return pool;
}

static GstFlowReturn
acquire (GstBufferPool * pool, GstBuffer ** buf, gboolean dontwait)
{
  GstBufferPoolAcquireParams params = { 0, };

  params.flags = dontwait ? GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT : 0;
  return gst_buffer_pool_acquire_buffer (pool, buf, &params);
}

GST_START_TEST (test_options)
{
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();

  fail_unless (gst_buffer_pool_has_option (pool,
          GST_BUFFER_POOL_OPTION_VIDEO_META));
  fail_unless (gst_buffer_pool_has_option (pool,
          GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT));
  fail_unless (gst_pinned_buffer_pool_get_segment (pool) == NULL);
  gst_object_unref (pool);
}

GST_END_TEST;

/* One segment holding all max-buffers page-aligned slots. */
GST_START_TEST (test_one_segment)
{
  GstCaps *caps = video_caps ("RGBA", 320, 240);
  GstBufferPool *pool;
  GstPinnedSegment *seg;
  GstBuffer *bufs[4];
  GstMapInfo maps[4];
  guint n_slots, i, j;
  gsize stride, size, page = pf_page_size ();
  int fd;

  pool = make_pool (caps, 320 * 240 * 4, 2, 4, 0, FALSE);
  seg = gst_pinned_buffer_pool_get_segment (pool);
  fail_unless (seg != NULL);
  fail_unless (gst_pinned_buffer_pool_get_slot_layout (pool, &n_slots, &stride,
          &size));
  fail_unless_equals_int (n_slots, 4);
  fail_unless_equals_uint64 (size, 320 * 240 * 4);
  fail_unless_equals_uint64 (stride % page, 0);
  fail_unless (stride >= size && stride < size + page);
  fail_unless_equals_uint64 (pf_segment_get_size (seg), 4 * stride);
  fail_unless_equals_int (pf_segment_count_live (), 1);
  fd = pf_segment_get_fd (seg);

  for (i = 0; i < 4; i++) {
    GstMemory *mem;
    GstPinnedSegment *mseg;
    gsize off;

    fail_unless_equals_int (acquire (pool, &bufs[i], TRUE), GST_FLOW_OK);
    fail_unless_equals_int (gst_buffer_n_memory (bufs[i]), 1);
    fail_unless_equals_uint64 (gst_buffer_get_size (bufs[i]), size);
    mem = gst_buffer_peek_memory (bufs[i], 0);
    fail_unless (gst_is_pinned_memory (mem));
    fail_unless (gst_is_fd_memory (mem));
    fail_unless_equals_int (gst_fd_memory_get_fd (mem), fd);
    mseg = gst_pinned_memory_get_segment (mem, &off);
    fail_unless (mseg == seg);
    fail_unless_equals_uint64 (off % stride, 0);
    fail_unless_equals_uint64 (off % page, 0);
    fail_unless_equals_uint64 (mem->offset, off);
    fail_unless_equals_uint64 (mem->maxsize, off + size);
    fail_unless (gst_buffer_map (bufs[i], &maps[i], GST_MAP_READWRITE));
    fail_unless (maps[i].data == (guint8 *) pf_segment_get_base (seg) + off);
    memset (maps[i].data, i + 1, size);
    for (j = 0; j < i; j++)
      fail_unless (maps[j].data != maps[i].data);
  }
  /* One mapping of the segment however many buffers. */
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  for (i = 0; i < 4; i++) {
    fail_unless (maps[i].data[0] == i + 1 && maps[i].data[size - 1] == i + 1);
    gst_buffer_unmap (bufs[i], &maps[i]);
    gst_buffer_unref (bufs[i]);
  }
  pf_segment_unref (seg);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  fail_unless (gst_pinned_buffer_pool_get_segment (pool) == NULL);
  fail_unless_equals_int (pf_segment_count_live (), 0);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_seals_and_flags)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool;
  GstPinnedSegment *seg;
  GstStructure *config;
  int seals;
  guint state;

  /* Defaults: lock + seal writers. */
  pool = make_pool (caps, 5000, 0, 2, 0, FALSE);
  config = gst_buffer_pool_get_config (pool);
  fail_unless_equals_int (gst_pinned_buffer_pool_config_get_segment_flags
      (config), GST_PINNED_SEGMENT_FLAG_LOCK |
      GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS);
  gst_structure_free (config);
  seg = gst_pinned_buffer_pool_get_segment (pool);
  seals = fcntl (pf_segment_get_fd (seg), F_GET_SEALS);
  state = pf_segment_get_state (seg);
  fail_unless ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
      (F_SEAL_SHRINK | F_SEAL_GROW));
  fail_unless (state & (PF_SEGMENT_STATE_LOCKED |
          PF_SEGMENT_STATE_LOCK_REFUSED));
  if (pf_test_have_cap_ipc_lock ())
    fail_unless (state & PF_SEGMENT_STATE_LOCKED);
  if (state & PF_SEGMENT_STATE_WRITE_SEALED)
    fail_unless (seals & F_SEAL_FUTURE_WRITE);
  pf_segment_unref (seg);
  gst_object_unref (pool);

  /* Explicit: nothing. */
  pool = make_pool (caps, 5000, 0, 2, GST_PINNED_SEGMENT_FLAG_NONE, TRUE);
  seg = gst_pinned_buffer_pool_get_segment (pool);
  seals = fcntl (pf_segment_get_fd (seg), F_GET_SEALS);
  fail_unless ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
      (F_SEAL_SHRINK | F_SEAL_GROW));
  fail_if (seals & F_SEAL_FUTURE_WRITE);
  fail_unless_equals_int (pf_segment_get_state (seg), 0);
  pf_segment_unref (seg);
  gst_object_unref (pool);

  /* Hugepages: got them or fell back, and works. */
  pool = make_pool (caps, 5000, 0, 2, GST_PINNED_SEGMENT_FLAG_HUGEPAGES, TRUE);
  seg = gst_pinned_buffer_pool_get_segment (pool);
  state = pf_segment_get_state (seg);
  if (pf_test_free_hugepage_bytes (NULL) >= pf_segment_get_size (seg))
    fail_unless (state & PF_SEGMENT_STATE_HUGEPAGES);
  else
    fail_unless (state & PF_SEGMENT_STATE_HUGEPAGES_REFUSED);
  {
    GstBuffer *buf;
    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    gst_buffer_memset (buf, 0, 0x55, 5000);
    gst_buffer_unref (buf);
  }
  pf_segment_unref (seg);
  gst_object_unref (pool);

  /* Flags survive a config round trip as a readable field. */
  config = gst_structure_new_empty ("test");
  gst_pinned_buffer_pool_config_set_segment_flags (config,
      GST_PINNED_SEGMENT_FLAG_HUGEPAGES | GST_PINNED_SEGMENT_FLAG_LOCK);
  fail_unless_equals_int (gst_pinned_buffer_pool_config_get_segment_flags
      (config), GST_PINNED_SEGMENT_FLAG_HUGEPAGES |
      GST_PINNED_SEGMENT_FLAG_LOCK);
  gst_structure_free (config);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* max-buffers 0 is refused with an updated config the caller can accept. */
GST_START_TEST (test_unbounded_refused)
{
  GstCaps *caps = video_caps ("RGBA", 64, 64);
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config;
  GstCaps *ccaps;
  guint size, min, max;

  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4, 2, 0);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  fail_unless (gst_buffer_pool_config_get_params (config, &ccaps, &size, &min,
          &max));
  fail_unless (gst_caps_is_equal (ccaps, caps));
  fail_unless_equals_int (size, 64 * 64 * 4);
  fail_unless_equals_int (min, 2);
  fail_unless_equals_int (max, GST_PINNED_BUFFER_POOL_DEFAULT_MAX_BUFFERS);
  fail_unless (gst_buffer_pool_config_validate_params (config, caps,
          64 * 64 * 4, 2, 0));
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));

  /* min above the default: max follows min. */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4, 12, 0);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, NULL, &min, &max);
  fail_unless_equals_int (max, 12);
  gst_structure_free (config);

  /* max < min likewise (the setter refuses to write it; a peer may). */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4, 5, 6);
  gst_structure_set (config, "max-buffers", G_TYPE_UINT, 3, NULL);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, NULL, &min, &max);
  fail_unless_equals_int (max, 5);
  gst_structure_free (config);

  gst_object_unref (pool);

  /* Reconfiguring a configured pool: gst_buffer_pool_set_config() returns
   * TRUE without calling the pool when given the config it stored, so the
   * corrected config must already be the one in force. */
  pool = gst_pinned_buffer_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4, 1, 2);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4 + 1000, 1, 0);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  fail_unless (gst_buffer_pool_config_validate_params (config, caps,
          64 * 64 * 4 + 1000, 1, 0));
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  {
    guint n_slots;
    gsize slot_size;
    GstBuffer *buf;

    fail_unless (gst_pinned_buffer_pool_get_slot_layout (pool, &n_slots, NULL,
            &slot_size));
    fail_unless_equals_int (n_slots,
        GST_PINNED_BUFFER_POOL_DEFAULT_MAX_BUFFERS);
    fail_unless_equals_uint64 (slot_size, 64 * 64 * 4 + 1000);
    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    fail_unless_equals_uint64 (gst_buffer_get_size (buf), 64 * 64 * 4 + 1000);
    gst_buffer_unref (buf);
  }
  gst_object_unref (pool);

  /* A pool never configured cannot be activated with a refused config. */
  pool = gst_pinned_buffer_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 64 * 64 * 4, 2, 0);
  fail_if (gst_buffer_pool_set_config (pool, config));
  fail_if (gst_buffer_pool_set_active (pool, TRUE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_size_too_small_refused)
{
  GstCaps *caps = video_caps ("I420", 320, 240);
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config;
  GstVideoInfo info;
  guint size, min, max;

  gst_video_info_from_caps (&info, caps);
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 1000, 1, 3);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, &min, &max);
  fail_unless_equals_int (size, info.size);
  fail_unless_equals_int (min, 1);
  fail_unless_equals_int (max, 3);
  fail_unless (gst_buffer_pool_config_validate_params (config, caps, 1000, 1,
          3));
  fail_unless (gst_buffer_pool_set_config (pool, config));

  /* Bigger than needed is fine: buffers have the config size. */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, info.size + 100, 1, 3);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  {
    GstBuffer *buf;
    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    fail_unless_equals_uint64 (gst_buffer_get_size (buf), info.size + 100);
    gst_buffer_unref (buf);
  }
  gst_object_unref (pool);

  /* Plain data with size 0: nothing to derive, refused. */
  pool = gst_pinned_buffer_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, NULL, 0, 1, 3);
  fail_if (gst_buffer_pool_set_config (pool, config));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Bounded: DONTWAIT returns EOS when every buffer is out. */
GST_START_TEST (test_bounded_dontwait)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 1000, 1, 3, 0, FALSE);
  GstBuffer *bufs[3], *extra = NULL;
  int i;

  for (i = 0; i < 3; i++)
    fail_unless_equals_int (acquire (pool, &bufs[i], TRUE), GST_FLOW_OK);
  fail_unless_equals_int (acquire (pool, &extra, TRUE), GST_FLOW_EOS);
  fail_unless (extra == NULL);
  gst_buffer_unref (bufs[1]);
  fail_unless_equals_int (acquire (pool, &extra, TRUE), GST_FLOW_OK);
  fail_unless (extra == bufs[1]);
  fail_unless_equals_int (acquire (pool, &bufs[1], TRUE), GST_FLOW_EOS);
  gst_buffer_unref (extra);
  gst_buffer_unref (bufs[0]);
  gst_buffer_unref (bufs[2]);
  fail_unless_equals_int (pf_segment_count_live (), 1);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

typedef struct
{
  GstBufferPool *pool;
  GstBuffer *buf;
  GstFlowReturn ret;
  gint started;
  gint done;
} AcquireCtx;

static gpointer
acquire_thread (gpointer data)
{
  AcquireCtx *c = data;

  g_atomic_int_set (&c->started, 1);
  c->ret = acquire (c->pool, &c->buf, FALSE);
  g_atomic_int_set (&c->done, 1);
  return NULL;
}

static gboolean
wait_done (AcquireCtx * c, gint64 timeout_us)
{
  gint64 end = g_get_monotonic_time () + timeout_us;

  while (!g_atomic_int_get (&c->done) && g_get_monotonic_time () < end)
    g_usleep (1000);
  return g_atomic_int_get (&c->done);
}

/* A blocking acquire unblocks when another thread releases a buffer. */
GST_START_TEST (test_blocking_acquire)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 1000, 0, 2, 0, FALSE);
  AcquireCtx c = { pool, NULL, GST_FLOW_ERROR, 0, 0 };
  GstBuffer *a, *b;
  GThread *t;

  fail_unless_equals_int (acquire (pool, &a, TRUE), GST_FLOW_OK);
  fail_unless_equals_int (acquire (pool, &b, TRUE), GST_FLOW_OK);
  t = g_thread_new ("acquire", acquire_thread, &c);
  while (!g_atomic_int_get (&c.started))
    g_usleep (1000);
  fail_if (wait_done (&c, 100 * 1000), "acquire did not block");
  gst_buffer_unref (b);
  fail_unless (wait_done (&c, 10 * G_USEC_PER_SEC));
  g_thread_join (t);
  fail_unless_equals_int (c.ret, GST_FLOW_OK);
  fail_unless (c.buf == b);
  gst_buffer_unref (c.buf);
  gst_buffer_unref (a);

  /* Deactivating wakes a blocked acquire with FLUSHING. */
  fail_unless_equals_int (acquire (pool, &a, TRUE), GST_FLOW_OK);
  fail_unless_equals_int (acquire (pool, &b, TRUE), GST_FLOW_OK);
  c.done = c.started = 0;
  c.buf = NULL;
  t = g_thread_new ("acquire", acquire_thread, &c);
  while (!g_atomic_int_get (&c.started))
    g_usleep (1000);
  fail_if (wait_done (&c, 50 * 1000));
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  fail_unless (wait_done (&c, 10 * G_USEC_PER_SEC));
  g_thread_join (t);
  fail_unless_equals_int (c.ret, GST_FLOW_FLUSHING);
  /* Outstanding buffers keep the segment until they come back. */
  fail_unless_equals_int (pf_segment_count_live (), 1);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
  fail_unless_equals_int (pf_segment_count_live (), 0);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Buffers are recycled: the same few buffers, the same slots. */
GST_START_TEST (test_recycle)
{
  GstCaps *caps = video_caps ("NV12", 640, 480);
  GstBufferPool *pool = make_pool (caps, 640 * 480 * 3 / 2, 2, 3, 0, FALSE);
  GstBuffer *seen[3] = { NULL, }, *buf;
  GstPinnedSegment *seg = gst_pinned_buffer_pool_get_segment (pool);
  gint refs = pf_segment_get_refcount (seg);
  int i, j, n_seen = 0;

  for (i = 0; i < 1000; i++) {
    GstMapInfo map;
    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    for (j = 0; j < n_seen && seen[j] != buf; j++);
    if (j == n_seen) {
      fail_unless (n_seen < 3);
      seen[n_seen++] = buf;
    }
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
    map.data[0] = (guint8) i;
    gst_buffer_unmap (buf, &map);
    GST_BUFFER_PTS (buf) = i;
    gst_buffer_unref (buf);
  }
  fail_unless (n_seen >= 1 && n_seen <= 2, "%d buffers", n_seen);
  /* No new memories were made: as many segment references as before. */
  fail_unless_equals_int (pf_segment_get_refcount (seg), refs);
  /* A released buffer comes back reset. */
  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  fail_unless (GST_BUFFER_PTS (buf) == GST_CLOCK_TIME_NONE);
  gst_buffer_unref (buf);
  pf_segment_unref (seg);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Downstream resized the buffer: reset restores the slot offset and size,
 * and the buffer is kept (not discarded). */
GST_START_TEST (test_reset_restores_size)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 10000, 1, 1, 0, FALSE);
  GstPinnedSegment *seg = gst_pinned_buffer_pool_get_segment (pool);
  gint refs = pf_segment_get_refcount (seg);
  GstBuffer *buf, *buf2;
  GstMemory *mem;
  gsize off;

  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  mem = gst_buffer_peek_memory (buf, 0);
  gst_pinned_memory_get_segment (mem, &off);
  gst_buffer_resize (buf, 100, 200);
  fail_unless_equals_uint64 (mem->offset, off + 100);
  fail_unless_equals_uint64 (gst_buffer_get_size (buf), 200);
  gst_buffer_unref (buf);

  fail_unless_equals_int (acquire (pool, &buf2, TRUE), GST_FLOW_OK);
  fail_unless (buf2 == buf);
  fail_unless (gst_buffer_peek_memory (buf2, 0) == mem);
  fail_unless_equals_uint64 (mem->offset, off);
  fail_unless_equals_uint64 (mem->size, 10000);
  fail_unless_equals_uint64 (gst_buffer_get_size (buf2), 10000);
  fail_unless_equals_int (pf_segment_get_refcount (seg), refs);

  /* Shrunk at the end only. */
  gst_buffer_set_size (buf2, 10);
  gst_buffer_unref (buf2);
  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  fail_unless (buf == buf2);
  fail_unless_equals_uint64 (gst_buffer_get_size (buf), 10000);
  gst_buffer_unref (buf);

  pf_segment_unref (seg);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Buffers the base class discards (memory replaced) give their slot back:
 * still bounded, still working. */
GST_START_TEST (test_discarded_buffers)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 4096, 0, 2, 0, FALSE);
  GstBuffer *buf, *a, *b, *c = NULL;
  int i;

  for (i = 0; i < 50; i++) {
    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    gst_buffer_replace_all_memory (buf, gst_allocator_alloc (NULL, 4096, NULL));
    gst_buffer_unref (buf);
  }
  fail_unless_equals_int (acquire (pool, &a, TRUE), GST_FLOW_OK);
  fail_unless_equals_int (acquire (pool, &b, TRUE), GST_FLOW_OK);
  fail_unless (gst_is_pinned_memory (gst_buffer_peek_memory (a, 0)));
  fail_unless (gst_is_pinned_memory (gst_buffer_peek_memory (b, 0)));
  fail_unless_equals_int (acquire (pool, &c, TRUE), GST_FLOW_EOS);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* A slot whose memory lives on (a copy of the buffer) is not reused until
 * that memory goes, even after the pool discarded the buffer. */
GST_START_TEST (test_memory_outlives_buffer)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 4096, 0, 1, 0, FALSE);
  AcquireCtx c = { pool, NULL, GST_FLOW_ERROR, 0, 0 };
  GstBuffer *buf, *copy, *again = NULL;
  GstMapInfo map;
  GThread *t;

  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  gst_buffer_memset (buf, 0, 0x77, 4096);
  copy = gst_buffer_copy (buf);
  /* The memory is shared: the pool discards buf, the slot stays busy. */
  gst_buffer_unref (buf);
  fail_unless_equals_int (acquire (pool, &again, TRUE), GST_FLOW_EOS);
  fail_unless (again == NULL);
  fail_unless (gst_buffer_map (copy, &map, GST_MAP_READ));
  fail_unless (map.data[0] == 0x77 && map.data[4095] == 0x77);
  gst_buffer_unmap (copy, &map);

  /* A blocking acquire waits for the memory, not just the buffer. */
  t = g_thread_new ("acquire", acquire_thread, &c);
  while (!g_atomic_int_get (&c.started))
    g_usleep (1000);
  fail_if (wait_done (&c, 100 * 1000), "acquire did not wait for the slot");
  gst_buffer_unref (copy);
  fail_unless (wait_done (&c, 10 * G_USEC_PER_SEC));
  g_thread_join (t);
  fail_unless_equals_int (c.ret, GST_FLOW_OK);
  fail_unless (gst_is_pinned_memory (gst_buffer_peek_memory (c.buf, 0)));
  gst_buffer_unref (c.buf);

  /* A memory that outlives the pool keeps the segment, then frees it. */
  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  copy = gst_buffer_copy (buf);
  gst_buffer_unref (buf);
  gst_object_unref (pool);
  fail_unless_equals_int (pf_segment_count_live (), 1);
  fail_unless (gst_buffer_map (copy, &map, GST_MAP_READ));
  gst_buffer_unmap (copy, &map);
  gst_buffer_unref (copy);
  fail_unless_equals_int (pf_segment_count_live (), 0);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* GstVideoMeta strides/offsets equal gst_video_info_align()'s. */
static void
check_video_layout (const gchar * format, gint width, gint height,
    const GstVideoAlignment * align_in)
{
  GstCaps *caps = video_caps (format, width, height);
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config;
  GstVideoInfo info;
  GstVideoAlignment align;
  GstVideoMeta *meta;
  GstBuffer *buf;
  GstVideoFrame frame;
  guint i, size;

  fail_unless (gst_video_info_from_caps (&info, caps));
  if (align_in) {
    align = *align_in;
    fail_unless (gst_video_info_align (&info, &align));
  }

  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, 0, 1, 2);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (align_in) {
    gst_buffer_pool_config_add_option (config,
        GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
    gst_buffer_pool_config_set_video_alignment (config,
        (GstVideoAlignment *) align_in);
  }
  /* Size 0 is too small: refused with the right size, then accepted. */
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  fail_unless_equals_int (size, info.size);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  fail_unless_equals_uint64 (gst_buffer_get_size (buf), info.size);
  meta = gst_buffer_get_video_meta (buf);
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->format, GST_VIDEO_INFO_FORMAT (&info));
  fail_unless_equals_int (meta->width, width);
  fail_unless_equals_int (meta->height, height);
  fail_unless_equals_int (meta->n_planes, GST_VIDEO_INFO_N_PLANES (&info));
  for (i = 0; i < meta->n_planes; i++) {
    fail_unless_equals_uint64 (meta->offset[i], info.offset[i]);
    fail_unless_equals_int (meta->stride[i], info.stride[i]);
  }
  if (align_in) {
    for (i = 0; i < GST_VIDEO_MAX_PLANES; i++)
      fail_unless_equals_int (meta->alignment.stride_align[i],
          align.stride_align[i]);
    fail_unless_equals_int (meta->alignment.padding_top, align.padding_top);
    fail_unless_equals_int (meta->alignment.padding_left, align.padding_left);
  }
  /* Usable as a video frame through the meta. */
  fail_unless (gst_video_frame_map (&frame, &info, buf, GST_MAP_WRITE));
  for (i = 0; i < GST_VIDEO_FRAME_N_PLANES (&frame); i++) {
    fail_unless_equals_int (GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i),
        info.stride[i]);
    memset (GST_VIDEO_FRAME_PLANE_DATA (&frame, i), 0x10 + i,
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, i));
  }
  gst_video_frame_unmap (&frame);
  gst_buffer_unref (buf);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_START_TEST (test_video_meta_layouts)
{
  const gchar *formats[] = { "RGBA", "NV12", "I420" };
  const gint widths[] = { 320, 322, 33, 1920, 1 };
  const gint heights[] = { 240, 180, 17, 1080, 1 };
  guint f, w, a;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    for (w = 0; w < G_N_ELEMENTS (widths); w++) {
      GstVideoAlignment aligns[4];

      for (a = 0; a < G_N_ELEMENTS (aligns); a++)
        gst_video_alignment_reset (&aligns[a]);
      /* 16-byte and 64-byte stride alignment on every plane. */
      for (a = 0; a < GST_VIDEO_MAX_PLANES; a++) {
        aligns[0].stride_align[a] = 15;
        aligns[1].stride_align[a] = 63;
      }
      /* Padding on all sides plus 32-byte strides. */
      aligns[2].padding_top = 2;
      aligns[2].padding_bottom = 6;
      aligns[2].padding_left = 16;
      aligns[2].padding_right = 8;
      for (a = 0; a < GST_VIDEO_MAX_PLANES; a++)
        aligns[2].stride_align[a] = 31;
      /* Different per plane. */
      aligns[3].stride_align[0] = 127;
      aligns[3].stride_align[1] = 7;
      aligns[3].stride_align[2] = 3;

      GST_DEBUG ("%s %dx%d", formats[f], widths[w], heights[w]);
      check_video_layout (formats[f], widths[w], heights[w], NULL);
      for (a = 0; a < G_N_ELEMENTS (aligns); a++)
        check_video_layout (formats[f], widths[w], heights[w], &aligns[a]);
    }
  }
}

GST_END_TEST;

/* Without the VIDEO_META option: GstVideoInfo sizes, no meta. */
GST_START_TEST (test_video_no_meta)
{
  GstCaps *caps = video_caps ("I420", 322, 180);
  GstBufferPool *pool = gst_pinned_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  GstVideoInfo info;
  GstBuffer *buf;

  gst_video_info_from_caps (&info, caps);
  gst_buffer_pool_config_set_params (config, caps, info.size, 1, 2);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
  fail_unless (gst_buffer_get_video_meta (buf) == NULL);
  fail_unless_equals_uint64 (gst_buffer_get_size (buf), info.size);
  gst_buffer_unref (buf);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Non-video caps (or none) work with the plain size. */
GST_START_TEST (test_non_video)
{
  const gchar *caps_str[] = { "application/octet-stream",
    "video/x-raw",              /* no video info: treated as plain */
    "audio/x-raw, format=S16LE, rate=48000, channels=2",
    NULL,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (caps_str); i++) {
    GstCaps *caps = caps_str[i] ? gst_caps_from_string (caps_str[i]) : NULL;
    GstBufferPool *pool = make_pool (caps, 12345, 2, 3, 0, FALSE);
    GstBuffer *buf;
    GstMapInfo map;

    fail_unless_equals_int (acquire (pool, &buf, TRUE), GST_FLOW_OK);
    fail_unless_equals_uint64 (gst_buffer_get_size (buf), 12345);
    fail_unless (gst_buffer_get_video_meta (buf) == NULL);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
    memset (map.data, 0xab, map.size);
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    gst_object_unref (pool);
    if (caps)
      gst_caps_unref (caps);
  }
}

GST_END_TEST;

/* Nothing survives teardown: no segment, fd or mapping. */
GST_START_TEST (test_teardown)
{
  GstCaps *caps = video_caps ("RGBA", 1920, 1080);
  GstBufferPool *pool;
  GstPinnedSegment *seg;
  GstBuffer *bufs[3];
  struct stat st;
  void *base;
  gsize len;
  int i, cycle;

  for (cycle = 0; cycle < 3; cycle++) {
    GstStructure *config;
    int fds_inactive;

    pool = gst_pinned_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, 1920 * 1080 * 4, 3, 3);
    fail_unless (gst_buffer_pool_set_config (pool, config));
    /* (GstBufferPool itself may hold a GstPoll's fds.) */
    fds_inactive = pf_test_count_fds ();
    fail_unless (gst_buffer_pool_set_active (pool, TRUE));
    seg = gst_pinned_buffer_pool_get_segment (pool);
    base = pf_segment_get_base (seg);
    len = pf_segment_get_size (seg);
    fail_unless (fstat (pf_segment_get_fd (seg), &st) == 0);
    pf_segment_unref (seg);
    /* One fd for the whole pool. */
    fail_unless_equals_int (pf_test_count_fds (), fds_inactive + 1);
    for (i = 0; i < 3; i++)
      fail_unless_equals_int (acquire (pool, &bufs[i], TRUE), GST_FLOW_OK);
    fail_unless_equals_int (pf_test_count_maps_of (st.st_dev, st.st_ino), 1);
    for (i = 0; i < 3; i++)
      gst_buffer_unref (bufs[i]);
    if (cycle == 1) {
      /* Deactivate, reactivate: a new segment. */
      fail_unless (gst_buffer_pool_set_active (pool, FALSE));
      fail_unless_equals_int (pf_test_count_maps_of (st.st_dev, st.st_ino), 0);
      fail_unless_equals_int (pf_test_count_fds (), fds_inactive);
      fail_unless (gst_buffer_pool_set_active (pool, TRUE));
      fail_unless_equals_int (pf_segment_count_live (), 1);
    }
    gst_object_unref (pool);
    fail_unless_equals_int (pf_segment_count_live (), 0);
    fail_unless_equals_int (pf_test_count_fds (), fds_at_start);
    fail_unless_equals_int (pf_test_count_maps_of (st.st_dev, st.st_ino), 0);
    fail_unless_equals_int (pf_test_is_mapped (base, len), 0);
  }
  gst_caps_unref (caps);
}

GST_END_TEST;

/* Acquire/release from several threads at once: bounded and consistent.
 * The pool has max-buffers 2: the workers never hold more than 2 buffers
 * at once, and every acquired buffer's slot is nobody else's. */
#define N_WORKERS 4
#define THREADS_MAX_BUFFERS 2

static gint threads_held, threads_max_held;

static void
note_held (gint delta)
{
  gint now = g_atomic_int_add (&threads_held, delta) + delta;
  gint max = g_atomic_int_get (&threads_max_held);

  while (now > max && !g_atomic_int_compare_and_exchange (&threads_max_held,
          max, now))
    max = g_atomic_int_get (&threads_max_held);
}

static gpointer
worker (gpointer data)
{
  GstBufferPool *pool = data;
  int i;

  for (i = 0; i < 2000; i++) {
    GstBuffer *buf;
    GstMapInfo map;

    if (acquire (pool, &buf, FALSE) != GST_FLOW_OK)
      return GINT_TO_POINTER (1);
    note_held (1);
    if (g_atomic_int_get (&threads_held) > THREADS_MAX_BUFFERS)
      return GINT_TO_POINTER (4);
    if (!gst_buffer_map (buf, &map, GST_MAP_WRITE))
      return GINT_TO_POINTER (2);
    /* Exclusive: nobody else holds this slot. */
    memset (map.data, (guint8) i, 64);
    g_thread_yield ();
    if (map.data[0] != (guint8) i || map.data[63] != (guint8) i)
      return GINT_TO_POINTER (3);
    gst_buffer_unmap (buf, &map);
    note_held (-1);
    if (i % 7 == 0) {
      GstBuffer *copy = gst_buffer_copy (buf);
      gst_buffer_unref (buf);
      gst_buffer_unref (copy);
    } else {
      gst_buffer_unref (buf);
    }
  }
  return NULL;
}

GST_START_TEST (test_threads)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/octet-stream");
  GstBufferPool *pool = make_pool (caps, 4096, 0, THREADS_MAX_BUFFERS, 0,
      FALSE);
  GThread *t[N_WORKERS];
  int i;

  threads_held = threads_max_held = 0;
  for (i = 0; i < N_WORKERS; i++)
    t[i] = g_thread_new ("worker", worker, pool);
  for (i = 0; i < N_WORKERS; i++)
    fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t[i])), 0);
  /* The bound the test states, seen at every acquire. */
  fail_unless (threads_max_held >= 1);
  fail_unless (threads_max_held <= THREADS_MAX_BUFFERS,
      "%d buffers held at once, max-buffers %d", threads_max_held,
      THREADS_MAX_BUFFERS);
  fail_unless_equals_int (threads_held, 0);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

static Suite *
pinnedbufferpool_suite (void)
{
  Suite *s = suite_create ("pinnedbufferpool");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_options);
  tcase_add_test (tc, test_one_segment);
  tcase_add_test (tc, test_seals_and_flags);
  tcase_add_test (tc, test_unbounded_refused);
  tcase_add_test (tc, test_size_too_small_refused);
  tcase_add_test (tc, test_bounded_dontwait);
  tcase_add_test (tc, test_blocking_acquire);
  tcase_add_test (tc, test_recycle);
  tcase_add_test (tc, test_reset_restores_size);
  tcase_add_test (tc, test_discarded_buffers);
  tcase_add_test (tc, test_memory_outlives_buffer);
  tcase_add_test (tc, test_video_meta_layouts);
  tcase_add_test (tc, test_video_no_meta);
  tcase_add_test (tc, test_non_video);
  tcase_add_test (tc, test_teardown);
  tcase_add_test (tc, test_threads);
  return s;
}

GST_CHECK_MAIN (pinnedbufferpool);
