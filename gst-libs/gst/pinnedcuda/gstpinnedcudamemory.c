/* GStreamer pinnedflow CUDA: device memory and its application API
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudamemory-private.h"

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_memory_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_memory_debug

void
gst_pinned_cuda_set_error (GError ** error, const GstPinnedCudaRuntime * rt,
    const gchar * call, GstPinnedCudaError err)
{
  gchar *desc = gst_pinned_cuda_error_describe (rt, err);

  g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
      GST_PINNED_CUDA_RUNTIME_ERROR_CALL, "%s failed: %s", call, desc);
  g_free (desc);
}

void
gst_pinned_cuda_layout_init (GstPinnedCudaLayout * layout,
    const GstVideoInfo * info)
{
  guint p, c;
  gsize row = 0;

  memset (layout, 0, sizeof (*layout));
  layout->n_planes = GST_VIDEO_INFO_N_PLANES (info);
  for (p = 0; p < layout->n_planes; p++) {
    for (c = 0; c < GST_VIDEO_INFO_N_COMPONENTS (info); c++) {
      if (GST_VIDEO_INFO_COMP_PLANE (info, c) == p) {
        layout->width_bytes[p] = (gsize) GST_VIDEO_INFO_COMP_WIDTH (info, c) *
            GST_VIDEO_INFO_COMP_PSTRIDE (info, c);
        layout->rows[p] = GST_VIDEO_INFO_COMP_HEIGHT (info, c);
        break;
      }
    }
    layout->row_offset[p] = row;
    row += layout->rows[p];
    layout->max_width_bytes = MAX (layout->max_width_bytes,
        layout->width_bytes[p]);
  }
  layout->total_rows = row;
}

/* Every call of this file may run on an application's thread (map, unmap,
 * wait, is_ready, the last unref), and leaves nothing in that thread's
 * last-error slot: an application that checks cudaGetLastError after its
 * own work (PyTorch does) must not see ours. A cudaErrorNotReady is an
 * answer, taken when the slot holds it; a failure was reported (logged, or
 * a GError) and is taken too (a sticky one cannot be, and stays). */
static void
leave_no_error (const GstPinnedCudaRuntime * rt, GstPinnedCudaError err)
{
  if (err == GST_PINNED_CUDA_ERROR_NOT_READY) {
    if (rt->PeekAtLastError () == GST_PINNED_CUDA_ERROR_NOT_READY)
      rt->GetLastError ();
  } else if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_take_last_error (rt);
  }
}

/* ------------------------------------------------------------ allocator */

struct _GstPinnedCudaAllocator
{
  GstAllocator parent;
};

G_DEFINE_TYPE (GstPinnedCudaAllocator, gst_pinned_cuda_allocator,
    GST_TYPE_ALLOCATOR);

static GstMemory *
allocator_alloc (GstAllocator * allocator, gsize size,
    GstAllocationParams * params)
{
  g_warning ("pinnedflow CUDA memory is allocated by its buffer pool only");
  return NULL;
}

static void
allocator_free (GstAllocator * allocator, GstMemory * memory)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;
  const GstPinnedCudaRuntime *rt = mem->rt;
  GstPinnedCudaError err;
  int prev;

  /* The last unref can come from any thread. */
  prev = gst_pinned_cuda_context_push_enter (rt, mem->device_id, mem->cu_ctx);
  /* The runtime does not promise that cudaFree waits for the copies into
   * the memory: its event covers them (an error there is the copy's, the
   * memory goes either way). */
  if ((err = rt->EventSynchronize (mem->event)) != GST_PINNED_CUDA_SUCCESS) {
    GST_WARNING ("cudaEventSynchronize before cudaFree: %s",
        rt->GetErrorString (err));
    leave_no_error (rt, err);
  }
  if (mem->notify != NULL) {
    /* wrapped: its owner frees it */
    mem->notify (mem->notify_data);
  } else if ((err = rt->Free (mem->dev_ptr)) != GST_PINNED_CUDA_SUCCESS) {
    GST_ERROR ("cudaFree: %s", rt->GetErrorString (err));
    leave_no_error (rt, err);
  }
  if ((err = rt->EventDestroy (mem->event)) != GST_PINNED_CUDA_SUCCESS) {
    GST_ERROR ("cudaEventDestroy: %s", rt->GetErrorString (err));
    leave_no_error (rt, err);
  }
  gst_pinned_cuda_device_leave (rt, mem->device_id, prev);
  if (mem->ctx_owner)
    gst_object_unref (mem->ctx_owner);
  g_free (mem->shadow);
  g_mutex_clear (&mem->lock);
  g_free (mem);
}

/* Mapping for the CPU: wait for the copy, download everything into a host
 * copy; a writable map uploads it again on the last unmap. */
static gpointer
mem_map (GstMemory * memory, GstMapInfo * info, gsize maxsize)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;
  const GstPinnedCudaRuntime *rt = mem->rt;
  gsize size = mem->pitch * mem->layout.total_rows;
  GstPinnedCudaError err;
  gpointer res = NULL;
  int prev;

  g_mutex_lock (&mem->lock);
  if (mem->map_count == 0) {
    /* The caller's thread keeps its current device. */
    prev = gst_pinned_cuda_context_push_enter (rt, mem->device_id, mem->cu_ctx);
    if (mem->shadow == NULL)
      mem->shadow = g_malloc (size);
    err = rt->EventSynchronize (mem->event);
    if (err == GST_PINNED_CUDA_SUCCESS)
      err = rt->Memcpy2D (mem->shadow, mem->pitch, mem->dev_ptr, mem->pitch,
          mem->pitch, mem->layout.total_rows,
          GST_PINNED_CUDA_MEMCPY_DEVICE_TO_HOST);
    gst_pinned_cuda_device_leave (rt, mem->device_id, prev);
    if (err != GST_PINNED_CUDA_SUCCESS) {
      GST_ERROR ("download for map failed: %s", rt->GetErrorString (err));
      leave_no_error (rt, err);
      goto out;
    }
    mem->map_flags = 0;
  }
  mem->map_count++;
  mem->map_flags |= info->flags;
  res = mem->shadow;
out:
  g_mutex_unlock (&mem->lock);
  return res;
}

static void
mem_unmap (GstMemory * memory, GstMapInfo * info)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;
  const GstPinnedCudaRuntime *rt = mem->rt;
  GstPinnedCudaError err;
  int prev;

  g_mutex_lock (&mem->lock);
  if (--mem->map_count == 0 && (mem->map_flags & GST_MAP_WRITE)) {
    prev = gst_pinned_cuda_context_push_enter (rt, mem->device_id, mem->cu_ctx);
    err = rt->Memcpy2D (mem->dev_ptr, mem->pitch, mem->shadow, mem->pitch,
        mem->pitch, mem->layout.total_rows,
        GST_PINNED_CUDA_MEMCPY_HOST_TO_DEVICE);
    /* From pageable memory the copy may land after the call returns, on
     * the legacy stream, which the consumers' non-blocking streams do not
     * wait for: the memory's event, recorded there, covers it. */
    if (err == GST_PINNED_CUDA_SUCCESS)
      err = rt->EventRecord (mem->event, NULL);
    gst_pinned_cuda_device_leave (rt, mem->device_id, prev);
    if (err != GST_PINNED_CUDA_SUCCESS) {
      GST_ERROR ("upload after write map failed: %s", rt->GetErrorString (err));
      leave_no_error (rt, err);
    }
  }
  g_mutex_unlock (&mem->lock);
}

static GstMemory *
mem_share (GstMemory * mem, gssize offset, gssize size)
{
  return NULL;
}

static void
gst_pinned_cuda_allocator_class_init (GstPinnedCudaAllocatorClass * klass)
{
  GstAllocatorClass *alloc_class = GST_ALLOCATOR_CLASS (klass);

  alloc_class->alloc = allocator_alloc;
  alloc_class->free = allocator_free;
  GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_memory_debug, "pinnedcudamemory",
      0, "pinnedflow CUDA device memory");
}

static void
gst_pinned_cuda_allocator_init (GstPinnedCudaAllocator * self)
{
  GstAllocator *alloc = GST_ALLOCATOR (self);

  alloc->mem_type = GST_PINNED_CUDA_MEMORY_TYPE;
  alloc->mem_map_full = (GstMemoryMapFullFunction) mem_map;
  alloc->mem_unmap_full = (GstMemoryUnmapFullFunction) mem_unmap;
  alloc->mem_share = mem_share;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *
gst_pinned_cuda_allocator_get (void)
{
  static GstAllocator *allocator;

  if (g_once_init_enter (&allocator)) {
    GstAllocator *a = g_object_new (GST_TYPE_PINNED_CUDA_ALLOCATOR, NULL);
    gst_object_ref_sink (a);
    GST_OBJECT_FLAG_SET (a, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    g_once_init_leave (&allocator, a);
  }
  return gst_object_ref (allocator);
}

gboolean
gst_pinned_cuda_probe_pitch (const GstPinnedCudaRuntime * rt,
    const GstPinnedCudaLayout * layout, gsize * pitch, GError ** error)
{
  void *ptr = NULL;
  GstPinnedCudaError err;

  err = rt->MallocPitch (&ptr, pitch, layout->max_width_bytes, 1);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_set_error (error, rt, "cudaMallocPitch", err);
    leave_no_error (rt, err);
    return FALSE;
  }
  rt->Free (ptr);
  return TRUE;
}

GstPinnedCudaMemory *
gst_pinned_cuda_memory_new (const GstPinnedCudaRuntime * rt, gint device_id,
    const GstPinnedCudaLayout * layout, GstMemoryFlags flags, gsize size,
    gpointer dev_ptr, gsize pitch, GstPinnedCudaEvent event)
{
  GstPinnedCudaMemory *mem = g_new0 (GstPinnedCudaMemory, 1);
  GstAllocator *allocator = gst_pinned_cuda_allocator_get ();

  gst_memory_init (GST_MEMORY_CAST (mem), flags | GST_MEMORY_FLAG_NO_SHARE,
      allocator, NULL, size, 0, 0, size);
  gst_object_unref (allocator);
  mem->rt = rt;
  mem->device_id = device_id;
  mem->layout = *layout;
  mem->dev_ptr = dev_ptr;
  mem->pitch = pitch;
  mem->event = event;
  g_mutex_init (&mem->lock);
  return mem;
}

GstMemory *
gst_pinned_cuda_memory_alloc (const GstPinnedCudaRuntime * rt, gint device_id,
    const GstPinnedCudaLayout * layout, gpointer cu_ctx, GstObject * owner,
    GError ** error)
{
  GstPinnedCudaMemory *mem;
  void *ptr = NULL;
  gsize pitch = 0;
  GstPinnedCudaEvent event = NULL;
  GstPinnedCudaError err;

  err = rt->MallocPitch (&ptr, &pitch, layout->max_width_bytes,
      layout->total_rows);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_set_error (error, rt, "cudaMallocPitch", err);
    leave_no_error (rt, err);
    return NULL;
  }
  /* blocking: a wait on it sleeps instead of spinning a core */
  err = rt->EventCreateWithFlags (&event, GST_PINNED_CUDA_EVENT_BLOCKING_SYNC |
      GST_PINNED_CUDA_EVENT_DISABLE_TIMING);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_set_error (error, rt, "cudaEventCreateWithFlags", err);
    leave_no_error (rt, err);
    rt->Free (ptr);
    return NULL;
  }

  mem = gst_pinned_cuda_memory_new (rt, device_id, layout, 0,
      pitch * layout->total_rows, ptr, pitch, event);
  mem->cu_ctx = cu_ctx;
  mem->ctx_owner = owner ? gst_object_ref (owner) : NULL;
  return GST_MEMORY_CAST (mem);
}

/* ------------------------------------------------------------ public API */

gboolean
gst_is_pinned_cuda_memory (GstMemory * mem)
{
  return mem != NULL && mem->allocator != NULL &&
      GST_IS_PINNED_CUDA_ALLOCATOR (mem->allocator);
}

gint
gst_pinned_cuda_memory_get_device_id (GstMemory * mem)
{
  g_return_val_if_fail (gst_is_pinned_cuda_memory (mem), -1);
  return ((GstPinnedCudaMemory *) mem)->device_id;
}

guint
gst_pinned_cuda_memory_get_n_planes (GstMemory * mem)
{
  g_return_val_if_fail (gst_is_pinned_cuda_memory (mem), 0);
  return ((GstPinnedCudaMemory *) mem)->layout.n_planes;
}

gboolean
gst_pinned_cuda_memory_get_plane (GstMemory * memory, guint plane,
    gpointer * dev_ptr, gsize * pitch, gsize * width_bytes, gsize * rows)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;

  if (!gst_is_pinned_cuda_memory (memory) || plane >= mem->layout.n_planes)
    return FALSE;
  if (dev_ptr)
    *dev_ptr = mem->dev_ptr + mem->pitch * mem->layout.row_offset[plane];
  if (pitch)
    *pitch = mem->pitch;
  if (width_bytes)
    *width_bytes = mem->layout.width_bytes[plane];
  if (rows)
    *rows = mem->layout.rows[plane];
  return TRUE;
}

gpointer
gst_pinned_cuda_memory_get_event (GstMemory * mem)
{
  g_return_val_if_fail (gst_is_pinned_cuda_memory (mem), NULL);
  return ((GstPinnedCudaMemory *) mem)->event;
}

gboolean
gst_pinned_cuda_memory_wait (GstMemory * memory, GError ** error)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;
  GstPinnedCudaError err;
  int prev;

  if (!gst_is_pinned_cuda_memory (memory)) {
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_CALL, "not pinnedflow CUDA memory");
    return FALSE;
  }
  /* Called from application threads: no context of another device is
   * initialised on their behalf. */
  prev = gst_pinned_cuda_context_push_enter (mem->rt, mem->device_id,
      mem->cu_ctx);
  err = mem->rt->EventSynchronize (mem->event);
  gst_pinned_cuda_device_leave (mem->rt, mem->device_id, prev);
  if (err != GST_PINNED_CUDA_SUCCESS) {
    gst_pinned_cuda_set_error (error, mem->rt, "cudaEventSynchronize", err);
    leave_no_error (mem->rt, err);
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_pinned_cuda_memory_is_ready (GstMemory * memory)
{
  GstPinnedCudaMemory *mem = (GstPinnedCudaMemory *) memory;
  GstPinnedCudaError err;
  int prev;

  g_return_val_if_fail (gst_is_pinned_cuda_memory (memory), FALSE);
  prev = gst_pinned_cuda_context_push_enter (mem->rt, mem->device_id,
      mem->cu_ctx);
  err = mem->rt->EventQuery (mem->event);
  /* "not ready" is this function's FALSE, not the application's error */
  leave_no_error (mem->rt, err);
  gst_pinned_cuda_device_leave (mem->rt, mem->device_id, prev);
  return err == GST_PINNED_CUDA_SUCCESS;
}

gboolean
gst_pinned_cuda_buffer_get_plane (GstBuffer * buffer, guint plane,
    gpointer * dev_ptr, gsize * pitch)
{
  if (gst_buffer_n_memory (buffer) < 1)
    return FALSE;
  return gst_pinned_cuda_memory_get_plane (gst_buffer_peek_memory (buffer, 0),
      plane, dev_ptr, pitch, NULL, NULL);
}

gboolean
gst_pinned_cuda_buffer_wait (GstBuffer * buffer, GError ** error)
{
  if (gst_buffer_n_memory (buffer) < 1) {
    g_set_error (error, GST_PINNED_CUDA_RUNTIME_ERROR,
        GST_PINNED_CUDA_RUNTIME_ERROR_CALL, "empty buffer");
    return FALSE;
  }
  return gst_pinned_cuda_memory_wait (gst_buffer_peek_memory (buffer, 0),
      error);
}
