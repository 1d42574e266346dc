/* Core tests: GstPinnedAllocator
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
static GstAllocator *alloc;

static void
setup (void)
{
  alloc = gst_pinned_allocator_get ();
  fds_at_start = pf_test_count_fds ();
  fail_unless_equals_int (pf_segment_count_live (), 0);
}

static void
teardown (void)
{
  gst_object_unref (alloc);
  alloc = NULL;
  fail_unless_equals_int (pf_segment_count_live (), 0);
  fail_unless_equals_int (pf_test_count_fds (), fds_at_start);
}

static GstPinnedSegment *
new_segment (gsize size, GstPinnedSegmentFlags flags)
{
  GError *err = NULL;
  GstPinnedSegment *seg = gst_pinned_segment_new (size, flags, &err);

  fail_unless (seg != NULL, "%s", err ? err->message : "");
  return seg;
}

GST_START_TEST (test_singleton)
{
  GstAllocator *a2 = gst_pinned_allocator_get (), *found;

  fail_unless (a2 == alloc);
  fail_unless (GST_IS_PINNED_ALLOCATOR (alloc));
  fail_unless (GST_IS_FD_ALLOCATOR (alloc));
  fail_unless_equals_string (alloc->mem_type, GST_ALLOCATOR_PINNED);
  found = gst_allocator_find (GST_ALLOCATOR_PINNED);
  fail_unless (found == alloc);
  gst_object_unref (found);
  gst_object_unref (a2);
}

GST_END_TEST;

GST_START_TEST (test_wrap_slice)
{
  GstPinnedSegment *seg = new_segment (3 * 4096, 0);
  guint8 *base = pf_segment_get_base (seg);
  GstMemory *mem;
  GstMapInfo map;
  gsize off = 12345;
  guint i;

  for (i = 0; i < 3 * 4096; i++)
    base[i] = (guint8) (i * 7);

  mem = gst_pinned_allocator_wrap (alloc, seg, 4096, 1000);
  fail_unless (mem != NULL);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 2);
  fail_unless (mem->allocator == alloc);
  fail_unless (mem->parent == NULL);
  fail_unless_equals_uint64 (mem->maxsize, 4096 + 1000);
  fail_unless_equals_uint64 (mem->offset, 4096);
  fail_unless_equals_uint64 (mem->size, 1000);
  fail_unless (gst_memory_is_type (mem, GST_ALLOCATOR_PINNED));
  fail_unless (gst_is_pinned_memory (mem));
  fail_unless (gst_is_fd_memory (mem));
  fail_if (GST_MEMORY_IS_READONLY (mem));
  fail_unless (gst_pinned_memory_get_segment (mem, &off) == seg);
  fail_unless_equals_uint64 (off, 4096);
  fail_unless (gst_pinned_memory_get_segment (mem, NULL) == seg);

  fail_unless (gst_memory_map (mem, &map, GST_MAP_READWRITE));
  fail_unless (map.data == base + 4096);
  fail_unless_equals_uint64 (map.size, 1000);
  fail_unless_equals_uint64 (map.maxsize, 1000);
  fail_unless (map.data[0] == (guint8) (4096 * 7));
  map.data[999] = 0xee;
  gst_memory_unmap (mem, &map);
  fail_unless (base[4096 + 999] == 0xee);

  /* Mapping twice gives the same address (no new mmap). */
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless (map.data == base + 4096);
  gst_memory_unmap (mem, &map);
  fail_unless_equals_int (pf_test_count_maps_of_fd (pf_segment_get_fd (seg)),
      1);

  /* The whole segment and an empty slice at the end are slices too. */
  {
    GstMemory *whole = gst_pinned_allocator_wrap (alloc, seg, 0, 3 * 4096);
    GstMemory *empty = gst_pinned_allocator_wrap (alloc, seg, 3 * 4096, 0);
    fail_unless (whole != NULL && empty != NULL);
    fail_unless_equals_uint64 (whole->offset, 0);
    gst_memory_unref (whole);
    gst_memory_unref (empty);
  }

  gst_memory_unref (mem);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_wrap_outside)
{
  GstPinnedSegment *seg = new_segment (8192, 0);

  fail_unless (gst_pinned_allocator_wrap (alloc, seg, 8192 - 10, 11) == NULL);
  fail_unless (gst_pinned_allocator_wrap (alloc, seg, 8193, 0) == NULL);
  fail_unless (gst_pinned_allocator_wrap (alloc, seg, G_MAXSIZE, 2) == NULL);
  fail_unless (gst_pinned_allocator_wrap (alloc, seg, 2, G_MAXSIZE) == NULL);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  pf_segment_unref (seg);

  /* Not ours. */
  {
    GstMemory *sys = gst_allocator_alloc (NULL, 100, NULL);
    gsize off = 77;
    fail_if (gst_is_pinned_memory (sys));
    fail_unless (gst_pinned_memory_get_segment (sys, &off) == NULL);
    fail_unless_equals_uint64 (off, 77);
    gst_memory_unref (sys);
  }
}

GST_END_TEST;

/* gst_fd_memory_get_fd() casts to gstfdmemory.c's private GstFdMemory:
 * this catches a change of that layout. */
GST_START_TEST (test_fd_memory_layout)
{
  GstPinnedSegment *seg = new_segment (8192, 0);
  GstMemory *mem, *sub, *own;
  gint fd = pf_segment_get_fd (seg);
  GstPinnedSegment *own_seg;

  mem = gst_pinned_allocator_wrap (alloc, seg, 4096, 4096);
  fail_unless_equals_int (gst_fd_memory_get_fd (mem), fd);
  sub = gst_memory_share (mem, 10, 20);
  fail_unless (gst_is_fd_memory (sub));
  fail_unless_equals_int (gst_fd_memory_get_fd (sub), fd);
  own = gst_allocator_alloc (alloc, 1000, NULL);
  own_seg = gst_pinned_memory_get_segment (own, NULL);
  fail_unless (own_seg != NULL && own_seg != seg);
  fail_unless_equals_int (gst_fd_memory_get_fd (own),
      pf_segment_get_fd (own_seg));
  /* An fd-aware consumer reading fd at offset/size sees the bytes. */
  {
    guint8 buf[20];
    memset ((guint8 *) pf_segment_get_base (seg) + 4096 + 10, 0x42, 20);
    fail_unless (pread (gst_fd_memory_get_fd (sub), buf, sub->size,
            sub->offset) == 20);
    fail_unless (buf[0] == 0x42 && buf[19] == 0x42);
  }
  gst_memory_unref (own);
  gst_memory_unref (sub);
  gst_memory_unref (mem);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_resize_bounds)
{
  GstPinnedSegment *seg = new_segment (3 * 4096, 0);
  GstMemory *mem = gst_pinned_allocator_wrap (alloc, seg, 4096, 1000);
  gsize offset, maxsize;

  fail_unless_equals_uint64 (gst_memory_get_sizes (mem, &offset, &maxsize),
      1000);
  fail_unless_equals_uint64 (offset, 4096);
  fail_unless_equals_uint64 (maxsize, 5096);
  /* Shrinking and moving inside the slice is fine... */
  gst_memory_resize (mem, 100, 800);
  fail_unless_equals_uint64 (mem->offset, 4196);
  fail_unless_equals_uint64 (mem->size, 800);
  gst_memory_resize (mem, -100, 1000);
  /* ...growing past the slice end is not. */
  ASSERT_CRITICAL (gst_memory_resize (mem, 0, 1001));
  ASSERT_CRITICAL (gst_memory_resize (mem, 1, 1000));
  fail_unless_equals_uint64 (mem->size, 1000);
  gst_memory_unref (mem);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_share)
{
  GstPinnedSegment *seg = new_segment (3 * 4096, 0);
  guint8 *base = pf_segment_get_base (seg);
  GstMemory *mem, *sub, *subsub, *rest;
  GstMapInfo map;
  gsize off;

  mem = gst_pinned_allocator_wrap (alloc, seg, 4096, 1000);
  sub = gst_memory_share (mem, 100, 200);
  fail_unless (sub != NULL);
  fail_unless (sub->parent == mem);
  fail_unless (sub->allocator == alloc);
  fail_unless_equals_uint64 (sub->offset, 4196);
  fail_unless_equals_uint64 (sub->size, 200);
  fail_unless (gst_pinned_memory_get_segment (sub, &off) == seg);
  fail_unless_equals_uint64 (off, 4196);
  fail_unless (gst_memory_map (sub, &map, GST_MAP_READ));
  fail_unless (map.data == base + 4196);
  gst_memory_unmap (sub, &map);
  /* Shares are read-only. */
  fail_if (gst_memory_map (sub, &map, GST_MAP_WRITE));

  /* A share of a share points at the root parent. */
  subsub = gst_memory_share (sub, 50, -1);
  fail_unless (subsub->parent == mem);
  fail_unless_equals_uint64 (subsub->offset, 4246);
  fail_unless_equals_uint64 (subsub->size, 150);
  rest = gst_memory_share (mem, 900, -1);
  fail_unless_equals_uint64 (rest->size, 100);

  /* The parent keeps the segment; the share keeps the parent. */
  gst_memory_unref (mem);
  fail_unless (gst_memory_map (subsub, &map, GST_MAP_READ));
  fail_unless (map.data == base + 4246);
  gst_memory_unmap (subsub, &map);
  gst_memory_unref (rest);
  gst_memory_unref (sub);
  gst_memory_unref (subsub);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

static void
count_notify (gpointer data)
{
  (*(gint *) data)++;
}

/* wrap_full's notify runs once, when the memory is freed: after its last
 * share (which keeps it alive) and not for a slice refused; recycled
 * memory structs start without the previous notify. */
GST_START_TEST (test_wrap_full_notify)
{
  GstPinnedSegment *seg = new_segment (2 * 4096, 0);
  GstMemory *mem, *sub;
  gint n = 0, m = 0;

  fail_unless (gst_pinned_allocator_wrap_full (alloc, seg, 4096, 4097, &n,
          count_notify) == NULL);
  fail_unless_equals_int (n, 0);

  mem = gst_pinned_allocator_wrap_full (alloc, seg, 4096, 100, &n,
      count_notify);
  fail_unless (mem != NULL);
  fail_unless_equals_uint64 (mem->offset, 4096);
  fail_unless_equals_uint64 (mem->size, 100);
  sub = gst_memory_share (mem, 10, 20);
  gst_memory_unref (mem);
  fail_unless_equals_int (n, 0);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 3);
  gst_memory_unref (sub);
  fail_unless_equals_int (n, 1);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);

  /* the next memories reuse freed structs: no stale notify */
  mem = gst_pinned_allocator_wrap (alloc, seg, 0, 10);
  sub = gst_pinned_allocator_wrap_full (alloc, seg, 10, 10, &m, count_notify);
  gst_memory_unref (mem);
  gst_memory_unref (sub);
  fail_unless_equals_int (n, 1);
  fail_unless_equals_int (m, 1);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

/* Two adjacent shares of one parent map as one span, without a copy. */
GST_START_TEST (test_span)
{
  GstPinnedSegment *seg = new_segment (2 * 4096, 0);
  guint8 *base = pf_segment_get_base (seg);
  GstMemory *mem, *a, *b;
  GstBuffer *buf;
  GstMapInfo map;
  gsize off;

  mem = gst_pinned_allocator_wrap (alloc, seg, 0, 8192);
  a = gst_memory_share (mem, 0, 4096);
  b = gst_memory_share (mem, 4096, 4096);
  fail_unless (gst_memory_is_span (a, b, &off));
  fail_unless_equals_uint64 (off, 0);
  fail_if (gst_memory_is_span (b, a, &off));
  buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, a);
  gst_buffer_append_memory (buf, b);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  fail_unless (map.data == base);
  fail_unless_equals_uint64 (map.size, 8192);
  gst_buffer_unmap (buf, &map);
  gst_buffer_unref (buf);
  gst_memory_unref (mem);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_copy)
{
  GstPinnedSegment *seg = new_segment (4096, 0);
  guint8 *base = pf_segment_get_base (seg);
  GstMemory *mem, *copy;
  GstMapInfo map;

  memset (base + 100, 0x99, 50);
  mem = gst_pinned_allocator_wrap (alloc, seg, 100, 50);
  copy = gst_memory_copy (mem, 10, 20);
  fail_unless (copy != NULL);
  fail_if (gst_is_pinned_memory (copy));
  fail_unless_equals_uint64 (copy->size, 20);
  fail_unless (gst_memory_map (copy, &map, GST_MAP_READ));
  fail_unless (map.data[0] == 0x99 && map.data[19] == 0x99);
  fail_unless (map.data < base || map.data >= base + 4096);
  gst_memory_unmap (copy, &map);
  gst_memory_unref (copy);

  copy = gst_memory_copy (mem, 0, -1);
  fail_unless_equals_uint64 (copy->size, 50);
  gst_memory_unref (copy);

  /* Writing a buffer whose memory is shared copies it, into sysmem. */
  {
    GstBuffer *b1 = gst_buffer_new (), *b2;
    gst_buffer_append_memory (b1, gst_memory_ref (mem));
    b2 = gst_buffer_copy (b1);
    fail_unless (gst_buffer_map (b2, &map, GST_MAP_WRITE));
    fail_unless (map.data != base + 100);
    gst_buffer_unmap (b2, &map);
    gst_buffer_unref (b1);
    gst_buffer_unref (b2);
  }
  gst_memory_unref (mem);
  pf_segment_unref (seg);
}

GST_END_TEST;

/* Read-only (imported read-only) segments give read-only memories. */
GST_START_TEST (test_readonly_segment)
{
  GstPinnedSegment *seg, *imp;
  GError *err = NULL;
  GstMemory *mem, *sub;
  GstMapInfo map;

  seg = new_segment (4096, GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS);
  ((guint8 *) pf_segment_get_base (seg))[10] = 0x10;
  imp = gst_pinned_segment_import (dup (pf_segment_get_fd (seg)), 4096, FALSE,
      &err);
  fail_unless (imp != NULL);

  mem = gst_pinned_allocator_wrap (alloc, imp, 0, 4096);
  fail_unless (GST_MEMORY_IS_READONLY (mem));
  fail_unless (gst_memory_map (mem, &map, GST_MAP_READ));
  fail_unless (map.data == pf_segment_get_base (imp));
  fail_unless (map.data[10] == 0x10);
  gst_memory_unmap (mem, &map);
  fail_if (gst_memory_map (mem, &map, GST_MAP_WRITE));
  fail_if (gst_memory_map (mem, &map, GST_MAP_READWRITE));
  /* Even bypassing the memory lock, the map function refuses. */
  fail_unless (alloc->mem_map (mem, mem->maxsize, GST_MAP_WRITE) == NULL);
  sub = gst_memory_share (mem, 0, 10);
  fail_unless (GST_MEMORY_IS_READONLY (sub));
  fail_unless (alloc->mem_map (sub, sub->maxsize, GST_MAP_WRITE) == NULL);
  gst_memory_unref (sub);
  gst_memory_unref (mem);

  /* A writable segment gives writable memories. */
  mem = gst_pinned_allocator_wrap (alloc, seg, 0, 4096);
  fail_if (GST_MEMORY_IS_READONLY (mem));
  fail_unless (gst_memory_map (mem, &map, GST_MAP_WRITE));
  gst_memory_unmap (mem, &map);
  gst_memory_unref (mem);

  pf_segment_unref (imp);
  pf_segment_unref (seg);
}

GST_END_TEST;

/* gst_allocator_alloc(): a dedicated segment per memory. */
GST_START_TEST (test_alloc_vfunc)
{
  GstAllocationParams params;
  GstMemory *m1, *m2;
  GstPinnedSegment *s1, *s2;
  GstMapInfo map;
  GstBuffer *buf;
  gsize off;
  int seals;

  gst_allocation_params_init (&params);
  params.prefix = 16;
  params.padding = 32;
  params.align = 63;
  m1 = gst_allocator_alloc (alloc, 10000, &params);
  fail_unless (m1 != NULL);
  fail_unless (gst_is_pinned_memory (m1));
  fail_unless_equals_int (pf_segment_count_live (), 1);
  s1 = gst_pinned_memory_get_segment (m1, &off);
  fail_unless_equals_uint64 (off, 16);
  fail_unless_equals_uint64 (m1->offset, 16);
  fail_unless_equals_uint64 (m1->size, 10000);
  fail_unless_equals_uint64 (m1->maxsize, 10048);
  fail_unless_equals_uint64 (pf_segment_get_size (s1), 3 * 4096);
  fail_unless_equals_int (pf_segment_get_refcount (s1), 1);
  seals = fcntl (pf_segment_get_fd (s1), F_GET_SEALS);
  fail_unless ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
      (F_SEAL_SHRINK | F_SEAL_GROW));
  fail_unless (gst_memory_map (m1, &map, GST_MAP_READWRITE));
  fail_unless (((guintptr) map.data & 15) == 0);
  fail_unless (map.data == (guint8 *) pf_segment_get_base (s1) + 16);
  fail_unless (map.data[0] == 0 && map.data[9999] == 0);
  memset (map.data, 1, 10000);
  gst_memory_unmap (m1, &map);

  m2 = gst_allocator_alloc (alloc, 10, NULL);
  s2 = gst_pinned_memory_get_segment (m2, NULL);
  fail_unless (s2 != s1);
  fail_unless (pf_segment_get_id (s2) != pf_segment_get_id (s1));
  fail_unless_equals_int (pf_segment_count_live (), 2);
  gst_memory_unref (m2);
  gst_memory_unref (m1);
  fail_unless_equals_int (pf_segment_count_live (), 0);

  /* Alignment beyond a page cannot be honoured. */
  params.align = 8191;
  fail_unless (gst_allocator_alloc (alloc, 100, &params) == NULL);

  buf = gst_buffer_new_allocate (alloc, 1920 * 1080 * 4, NULL);
  fail_unless (buf != NULL);
  fail_unless (gst_is_pinned_memory (gst_buffer_peek_memory (buf, 0)));
  gst_buffer_memset (buf, 0, 0xff, 1920 * 1080 * 4);
  gst_buffer_unref (buf);
}

GST_END_TEST;

/* One mapping per segment however many memories and buffers use it. */
GST_START_TEST (test_one_mapping)
{
  GstPinnedSegment *seg = new_segment (64 * 4096, 0);
  GstBuffer *bufs[64];
  GstMapInfo maps[64];
  int fd = pf_segment_get_fd (seg), i;

  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  for (i = 0; i < 64; i++) {
    bufs[i] = gst_buffer_new ();
    gst_buffer_append_memory (bufs[i],
        gst_pinned_allocator_wrap (alloc, seg, i * 4096, 4096));
    fail_unless (gst_buffer_map (bufs[i], &maps[i], GST_MAP_READWRITE));
    maps[i].data[0] = (guint8) i;
  }
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 65);
  for (i = 0; i < 64; i++) {
    fail_unless (((guint8 *) pf_segment_get_base (seg))[i * 4096] == i);
    gst_buffer_unmap (bufs[i], &maps[i]);
    gst_buffer_unref (bufs[i]);
  }
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

/* Nothing survives: the last memory closes the fd and unmaps. */
GST_START_TEST (test_teardown)
{
  GstPinnedSegment *seg = new_segment (4096, GST_PINNED_SEGMENT_FLAG_LOCK);
  GstMemory *mem, *sub;
  struct stat st;
  void *base = pf_segment_get_base (seg);

  fail_unless (fstat (pf_segment_get_fd (seg), &st) == 0);
  mem = gst_pinned_allocator_wrap (alloc, seg, 0, 4096);
  sub = gst_memory_share (mem, 0, 100);
  pf_segment_unref (seg);
  gst_memory_unref (mem);
  fail_unless_equals_int (pf_segment_count_live (), 1);
  fail_unless_equals_int (pf_test_count_maps_of (st.st_dev, st.st_ino), 1);
  gst_memory_unref (sub);
  fail_unless_equals_int (pf_segment_count_live (), 0);
  fail_unless_equals_int (pf_test_count_maps_of (st.st_dev, st.st_ino), 0);
  fail_unless_equals_int (pf_test_is_mapped (base, 4096), 0);
}

GST_END_TEST;

/* wrap() is what a consumer calls per frame, so its cost is fixed: no
 * mmap (the memfd keeps its one mapping however many memories are alive and
 * mapped), no fd, no segment; each memory holds one segment reference and
 * maps to the segment's own bytes. Counted, not timed. */
GST_START_TEST (test_wrap_maps_nothing)
{
  GstPinnedSegment *seg = new_segment (256 * 4096, 0);
  guint8 *base = pf_segment_get_base (seg);
  int fd = pf_segment_get_fd (seg);
  int fds = pf_test_count_fds ();
  int live = pf_segment_count_live ();
  GstMemory *mems[256];
  GstMapInfo maps[256];
  int round, i;

  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  for (round = 0; round < 100; round++) {
    for (i = 0; i < 256; i++) {
      mems[i] = gst_pinned_allocator_wrap (alloc, seg, i * 4096, 4096);
      fail_unless (mems[i] != NULL);
      fail_unless (gst_memory_map (mems[i], &maps[i], GST_MAP_READWRITE));
      fail_unless (maps[i].data == base + i * 4096);
    }
    fail_unless_equals_int (pf_segment_get_refcount (seg), 257);
    fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
    fail_unless_equals_int (pf_test_count_fds (), fds);
    fail_unless_equals_int (pf_segment_count_live (), live);
    for (i = 0; i < 256; i++) {
      gst_memory_unmap (mems[i], &maps[i]);
      gst_memory_unref (mems[i]);
    }
  }
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

static Suite *
pinnedallocator_suite (void)
{
  Suite *s = suite_create ("pinnedallocator");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_singleton);
  tcase_add_test (tc, test_wrap_slice);
  tcase_add_test (tc, test_wrap_outside);
  tcase_add_test (tc, test_fd_memory_layout);
  tcase_add_test (tc, test_resize_bounds);
  tcase_add_test (tc, test_share);
  tcase_add_test (tc, test_wrap_full_notify);
  tcase_add_test (tc, test_span);
  tcase_add_test (tc, test_copy);
  tcase_add_test (tc, test_readonly_segment);
  tcase_add_test (tc, test_alloc_vfunc);
  tcase_add_test (tc, test_one_mapping);
  tcase_add_test (tc, test_teardown);
  tcase_add_test (tc, test_wrap_maps_nothing);
  return s;
}

GST_CHECK_MAIN (pinnedallocator);
