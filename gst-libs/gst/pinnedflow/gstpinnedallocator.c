/* GStreamer pinnedflow: allocator of GstMemory in pinned memfd segments
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every GstPinnedMemory is a slice of one GstPinnedSegment and uses the
 * segment's single mapping: no memory ever calls mmap(). A slice at segment
 * offset O of size S is a GstMemory with maxsize = O + S, offset = O and
 * size = S whose map function returns the segment base, so that
 *  - gst_memory_map() gives base + O (GstMemory adds mem->offset);
 *  - an fd-aware consumer reading gst_fd_memory_get_fd() at mem->offset for
 *    mem->size bytes reads the same bytes;
 *  - gst_memory_resize() cannot grow the slice past its end.
 *
 * GstPinnedAllocator derives from GstFdAllocator so that gst_is_fd_memory()
 * and gst_fd_memory_get_fd() work on its memories. Those functions cast the
 * memory to GstFdMemory, whose definition is private to gstfdmemory.c:
 *   { GstMemory mem; GstFdMemoryFlags flags; gint fd; ... }
 * GstPinnedMemory therefore starts with these three fields. GstFdAllocator's
 * map/unmap/share/free and alloc are all replaced here, so no other field of
 * GstFdMemory is ever read from our memories.
 *
 * Why not the public API (gst_fd_allocator_alloc() + gst_memory_share() or
 * gst_memory_resize(), as gstshmallocator.c does): it cannot express many
 * writable memories over one existing mapping.
 *  - gst_fd_allocator_alloc() makes a memory at offset 0 that mmap()s the fd
 *    itself at its first map: a second mapping of the segment per memory, at
 *    an address that the segment's CUDA host registration does not cover
 *    (the upload would stage every frame), and maxsize bytes from offset 0
 *    mapped for every slot.
 *  - gst_memory_share() of one root memory per segment (one mapping) gives
 *    sub-memories locked read-only (GST_MINI_OBJECT_FLAG_LOCK_READONLY):
 *    pool slots could not be mapped for writing by the producer.
 * So the head is mirrored, and the assumption is proved at run time: at
 * class init (check_fd_memory_layout()) a probe memory laid out as ours is
 * passed to the real gst_is_fd_memory()/gst_fd_memory_get_fd(); if the fd
 * read back is not the probe's, GStreamer's layout changed: a g_critical()
 * says so and every allocation and wrap fails (returns NULL, elements post
 * errors) instead of handing fd-aware consumers a wrong fd. The allocator
 * tests check the same on real memories (test_fd_memory_layout).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/pinnedflow/gstpinnedallocator.h>
#include "gstpinnedallocator-private.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_allocator_debug);
#define GST_CAT_DEFAULT gst_pinned_allocator_debug

/* Segment flags of the dedicated segments made by gst_allocator_alloc(). */
#define ALLOC_SEGMENT_FLAGS \
  (GST_PINNED_SEGMENT_FLAG_LOCK | GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS)

typedef struct
{
  /* Must match the head of gstfdmemory.c's private GstFdMemory: proved at
   * class init by check_fd_memory_layout(). */
  GstMemory mem;
  GstFdMemoryFlags flags;
  gint fd;

  /* Ours. Every memory (sub-memories included) holds a segment reference. */
  GstPinnedSegment *segment;
  guint8 *base;
  gboolean readonly;
  /* gst_pinned_allocator_wrap_full(): called when the memory is freed */
  GDestroyNotify notify;
  gpointer user_data;
  /* next on the free list while recycled */
  gpointer next_free;
} GstPinnedMemory;

/* Freed GstPinnedMemory structs kept for reuse, so that wrapping a frame
 * per buffer (pinnedshmsrc) allocates nothing at steady state. Bounded:
 * the rest go back to the heap. */
#define MEMORY_FREE_LIST_MAX 64
G_LOCK_DEFINE_STATIC (memory_free_list);
static GstPinnedMemory *memory_free_list;
static guint memory_free_list_len;

struct _GstPinnedAllocator
{
  GstFdAllocator parent;
};

G_DEFINE_TYPE (GstPinnedAllocator, gst_pinned_allocator, GST_TYPE_FD_ALLOCATOR);

/* Why memories cannot be made, or NULL: set once at class init. */
static const gchar *fd_layout_error;

/* An fd no real memory has, and bytes no field of ours holds. */
#define FD_PROBE 0x3c5a7e11
#define FILL_PROBE 0xa5

/* The proof that gst_fd_memory_get_fd() reads our fd field (see the top of
 * this file). The probe is a GstPinnedMemory followed by 256 more
 * FILL_PROBE bytes, so a longer GstFdMemory head reads filler, not the probe
 * fd; its allocator is a plain GstFdAllocator, which is all the two
 * functions look at besides the fd. */
typedef struct
{
  GstPinnedMemory pm;
  guint8 filler[256];
} FdProbe;

static const gchar *
check_fd_memory_layout (void)
{
  FdProbe probe;
  GstAllocator *fd_allocator = gst_fd_allocator_new ();
  const gchar *error = NULL;

  memset (&probe, FILL_PROBE, sizeof (probe));
  probe.pm.mem.allocator = fd_allocator;
  probe.pm.flags = GST_FD_MEMORY_FLAG_KEEP_MAPPED |
      GST_FD_MEMORY_FLAG_DONT_CLOSE;
  probe.pm.fd = FD_PROBE;
  if (!gst_is_fd_memory (GST_MEMORY_CAST (&probe.pm)))
    error = "gst_is_fd_memory() refuses a memory of a GstFdAllocator";
  else if (gst_fd_memory_get_fd (GST_MEMORY_CAST (&probe.pm)) != FD_PROBE)
    error = "gst_fd_memory_get_fd() does not read the fd where "
        "GstPinnedMemory keeps it: GstFdMemory's private layout changed";
  gst_object_unref (fd_allocator);
  return error;
}

static GstPinnedMemory *
pinned_memory_new (GstAllocator * allocator, GstMemoryFlags flags,
    GstMemory * parent, GstPinnedSegment * segment, gsize maxsize,
    gsize align, gsize offset, gsize size)
{
  GstPinnedMemory *pm;
  gboolean readonly =
      (pf_segment_get_state (segment) & PF_SEGMENT_STATE_READONLY) != 0;

  G_LOCK (memory_free_list);
  pm = memory_free_list;
  if (pm != NULL) {
    memory_free_list = pm->next_free;
    memory_free_list_len--;
  }
  G_UNLOCK (memory_free_list);
  if (pm == NULL)
    pm = g_new (GstPinnedMemory, 1);

  if (readonly)
    flags |= GST_MEMORY_FLAG_READONLY;
  gst_memory_init (GST_MEMORY_CAST (pm), flags, allocator, parent, maxsize,
      align, offset, size);
  pm->flags = GST_FD_MEMORY_FLAG_KEEP_MAPPED | GST_FD_MEMORY_FLAG_DONT_CLOSE;
  pm->fd = pf_segment_get_fd (segment);
  pm->segment = pf_segment_ref (segment);
  pm->base = pf_segment_get_base (segment);
  pm->readonly = readonly;
  pm->notify = NULL;
  pm->user_data = NULL;
  pm->next_free = NULL;
  return pm;
}

/* Largest alignment mask (up to the page) that @offset in a page-aligned
 * mapping satisfies. */
static gsize
offset_align (gsize offset)
{
  gsize page = pf_page_size ();

  if (offset == 0 || (offset & (page - 1)) == 0)
    return page - 1;
  return (offset & -offset) - 1;
}

static gpointer
pinned_mem_map (GstMemory * mem, gsize maxsize, GstMapFlags flags)
{
  GstPinnedMemory *pm = (GstPinnedMemory *) mem;

  if ((flags & GST_MAP_WRITE) && pm->readonly) {
    GST_DEBUG ("%p: write map of a read-only segment refused", mem);
    return NULL;
  }
  return pm->base;
}

static void
pinned_mem_unmap (GstMemory * mem)
{
  /* The segment mapping lives as long as the segment. */
}

static GstMemory *
pinned_mem_share (GstMemory * mem, gssize offset, gssize size)
{
  GstPinnedMemory *pm = (GstPinnedMemory *) mem;
  GstMemory *parent;

  if ((parent = mem->parent) == NULL)
    parent = mem;
  if (size == -1)
    size = (gssize) mem->size > offset ? (gssize) mem->size - offset : 0;

  /* Like every share, the sub-memory is read-only-locked and keeps its
   * parent (hence the slot of a pool) alive. */
  return GST_MEMORY_CAST (pinned_memory_new (mem->allocator,
          GST_MINI_OBJECT_FLAGS (parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY,
          parent, pm->segment, mem->maxsize, mem->align, mem->offset + offset,
          size));
}

static gboolean
pinned_mem_is_span (GstMemory * mem1, GstMemory * mem2, gsize * offset)
{
  GstPinnedMemory *pm1 = (GstPinnedMemory *) mem1;
  GstPinnedMemory *pm2 = (GstPinnedMemory *) mem2;

  if (pm1->segment != pm2->segment)
    return FALSE;
  if (mem1->offset + mem1->size != mem2->offset)
    return FALSE;
  if (offset)
    *offset = mem1->offset - (mem1->parent ? mem1->parent->offset : 0);
  return TRUE;
}

/* Copies go to system memory: a copy is private to this process, and a new
 * memfd per copy would cost a memfd_create/mmap each. */
static GstMemory *
pinned_mem_copy (GstMemory * mem, gssize offset, gssize size)
{
  GstPinnedMemory *pm = (GstPinnedMemory *) mem;
  GstAllocationParams params = { 0, mem->align, 0, 0, };
  GstMemory *copy;
  GstMapInfo map;

  if (size == -1)
    size = (gssize) mem->size > offset ? (gssize) mem->size - offset : 0;
  copy = gst_allocator_alloc (NULL, size, &params);
  if (copy == NULL || !gst_memory_map (copy, &map, GST_MAP_WRITE)) {
    if (copy)
      gst_memory_unref (copy);
    return NULL;
  }
  memcpy (map.data, pm->base + mem->offset + offset, size);
  gst_memory_unmap (copy, &map);
  return copy;
}

static void
gst_pinned_allocator_free (GstAllocator * allocator, GstMemory * mem)
{
  GstPinnedMemory *pm = (GstPinnedMemory *) mem;
  GDestroyNotify notify = pm->notify;
  gpointer user_data = pm->user_data;
  gboolean kept = FALSE;

  pf_segment_unref (pm->segment);
  G_LOCK (memory_free_list);
  if (memory_free_list_len < MEMORY_FREE_LIST_MAX) {
    pm->next_free = memory_free_list;
    memory_free_list = pm;
    memory_free_list_len++;
    kept = TRUE;
  }
  G_UNLOCK (memory_free_list);
  if (!kept)
    g_free (pm);
  /* last: the notify may release what the memory pointed into */
  if (notify != NULL)
    notify (user_data);
}

/* gst_allocator_alloc(): a dedicated segment for this one memory. */
static GstMemory *
gst_pinned_allocator_alloc (GstAllocator * allocator, gsize size,
    GstAllocationParams * params)
{
  GstPinnedSegment *seg;
  GstPinnedMemory *pm;
  GError *err = NULL;
  gsize total;

  if (fd_layout_error != NULL) {
    GST_ERROR_OBJECT (allocator, "no memory: %s", fd_layout_error);
    return NULL;
  }
  if (params->align >= pf_page_size ()) {
    GST_WARNING_OBJECT (allocator, "alignment %" G_GSIZE_FORMAT " exceeds the"
        " page size", params->align + 1);
    return NULL;
  }
  if (!g_size_checked_add (&total, params->prefix, size) ||
      !g_size_checked_add (&total, total, params->padding) || total == 0) {
    GST_WARNING_OBJECT (allocator, "bad size %" G_GSIZE_FORMAT, size);
    return NULL;
  }

  seg = gst_pinned_segment_new_full ("gst-pinned-alloc", total,
      ALLOC_SEGMENT_FLAGS, &err);
  if (seg == NULL) {
    GST_WARNING_OBJECT (allocator, "%s", err->message);
    g_error_free (err);
    return NULL;
  }
  /* A new memfd reads as zeroes. */
  pm = pinned_memory_new (allocator, params->flags |
      GST_MEMORY_FLAG_ZERO_PREFIXED | GST_MEMORY_FLAG_ZERO_PADDED, NULL, seg,
      total, pf_page_size () - 1, params->prefix, size);
  pf_segment_unref (seg);
  GST_LOG_OBJECT (allocator, "%p: dedicated segment %" G_GUINT64_FORMAT
      " of %" G_GUINT64_FORMAT " bytes", pm, pf_segment_get_id (pm->segment),
      pf_segment_get_size (pm->segment));
  return GST_MEMORY_CAST (pm);
}

static void
gst_pinned_allocator_class_init (GstPinnedAllocatorClass * klass)
{
  GstAllocatorClass *allocator_class = GST_ALLOCATOR_CLASS (klass);

  allocator_class->alloc = gst_pinned_allocator_alloc;
  allocator_class->free = gst_pinned_allocator_free;

  GST_DEBUG_CATEGORY_INIT (gst_pinned_allocator_debug, "pinnedallocator", 0,
      "pinnedflow GstMemory allocator");

  fd_layout_error = check_fd_memory_layout ();
  if (fd_layout_error != NULL)
    g_critical ("GstPinnedAllocator: %s; it will make no memory (an "
        "fd-aware consumer would read a wrong fd)", fd_layout_error);
}

static void
gst_pinned_allocator_init (GstPinnedAllocator * self)
{
  GstAllocator *alloc = GST_ALLOCATOR_CAST (self);

  alloc->mem_type = GST_ALLOCATOR_PINNED;
  alloc->mem_map = pinned_mem_map;
  alloc->mem_unmap = pinned_mem_unmap;
  alloc->mem_share = pinned_mem_share;
  alloc->mem_copy = pinned_mem_copy;
  alloc->mem_is_span = pinned_mem_is_span;
  /* GstFdAllocator sets GST_ALLOCATOR_FLAG_CUSTOM_ALLOC; it stays set: the
   * intended path is GstPinnedBufferPool (one segment for all buffers), and
   * generic elements should not make one memfd per allocation. */
}

/* gst_pinned_allocator_get()'s, once made (never freed) */
static GstAllocator *instance;

GstAllocator *
gst_pinned_allocator_get (void)
{
  static gsize init = 0;

  if (g_once_init_enter (&init)) {
    GstAllocator *a = g_object_new (GST_TYPE_PINNED_ALLOCATOR, NULL);

    gst_object_ref_sink (a);
    GST_OBJECT_FLAG_SET (a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    gst_allocator_register (GST_ALLOCATOR_PINNED, gst_object_ref (a));
    /* atomic: gst_is_pinned_memory() reads it without the once */
    g_atomic_pointer_set (&instance, a);
    g_once_init_leave (&init, 1);
  }
  return gst_object_ref (instance);
}

/* What gst_pinned_memory_tag_dmabuf() attaches. */
typedef struct
{
  GstPinnedSegment *segment;    /* a reference */
  gsize offset;
} DmabufTag;

static GQuark
dmabuf_tag_quark (void)
{
  static gsize q;

  if (g_once_init_enter (&q))
    g_once_init_leave (&q, g_quark_from_static_string ("GstPinnedDmabufTag"));
  return (GQuark) q;
}

static void
dmabuf_tag_free (gpointer data)
{
  DmabufTag *tag = data;

  pf_segment_unref (tag->segment);
  g_free (tag);
}

void
gst_pinned_memory_tag_dmabuf (GstMemory * mem, GstPinnedSegment * seg,
    gsize offset)
{
  DmabufTag *tag = g_new (DmabufTag, 1);

  tag->segment = pf_segment_ref (seg);
  tag->offset = offset;
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem), dmabuf_tag_quark (),
      tag, dmabuf_tag_free);
}

GstMemory *
gst_pinned_allocator_wrap (GstAllocator * allocator,
    GstPinnedSegment * segment, gsize offset, gsize size)
{
  return gst_pinned_allocator_wrap_full (allocator, segment, offset, size,
      NULL, NULL);
}

GstMemory *
gst_pinned_allocator_wrap_full (GstAllocator * allocator,
    GstPinnedSegment * segment, gsize offset, gsize size, gpointer user_data,
    GDestroyNotify notify)
{
  GstPinnedMemory *pm;

  g_return_val_if_fail (GST_IS_PINNED_ALLOCATOR (allocator), NULL);
  g_return_val_if_fail (segment != NULL, NULL);

  if (fd_layout_error != NULL) {
    GST_ERROR_OBJECT (allocator, "no memory: %s", fd_layout_error);
    return NULL;
  }
  if (!pf_segment_contains (segment, offset, size)) {
    GST_WARNING_OBJECT (allocator, "slice [%" G_GSIZE_FORMAT ", +%"
        G_GSIZE_FORMAT ") outside segment %" G_GUINT64_FORMAT " of %"
        G_GUINT64_FORMAT " bytes", offset, size, pf_segment_get_id (segment),
        pf_segment_get_size (segment));
    return NULL;
  }
  pm = pinned_memory_new (allocator, 0, NULL, segment, offset + size,
      offset_align (offset), offset, size);
  pm->notify = notify;
  pm->user_data = user_data;
  return GST_MEMORY_CAST (pm);
}

gboolean
gst_is_pinned_memory (GstMemory * mem)
{
  /* the shared allocator first: no type check (a read of its class) per
   * frame and per memory (issue 13); another instance is checked */
  return mem != NULL && mem->allocator != NULL &&
      (mem->allocator == g_atomic_pointer_get (&instance) ||
      GST_IS_PINNED_ALLOCATOR (mem->allocator));
}

GstPinnedSegment *
gst_pinned_memory_get_segment (GstMemory * mem, gsize * offset)
{
  if (G_UNLIKELY (!gst_is_pinned_memory (mem))) {
    /* a slot exported as a dmabuf (gstpinnedbufferpool.c) */
    DmabufTag *tag = gst_mini_object_get_qdata (GST_MINI_OBJECT_CAST (mem),
        dmabuf_tag_quark ());

    if (tag == NULL)
      return NULL;
    if (offset)
      *offset = tag->offset + mem->offset;
    return tag->segment;
  }
  if (offset)
    *offset = mem->offset;
  return ((GstPinnedMemory *) mem)->segment;
}
