/* GStreamer pinnedflow: pinnedshmsink's memory:CUDAMemory input
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GStreamer's CUDA memory (libgstcuda's GstCudaMemory: nvcodec's
 * cudaupload, its decoders) published as device frames, with libgstcuda
 * opened at run time (gstpinnedcudagst-private.h: no build dependency):
 *
 * - the copy (every version): the buffer's one GstCudaMemory mapped
 *   GST_MAP_CUDA for its device pointer (after gst_cuda_memory_sync() on
 *   1.24+, so that upstream's stream is done), the memory's GstCudaContext
 *   pushed, each plane copied device to device (cudaMemcpy2D, at the video
 *   meta's offsets and strides, or the memory's own layout without one)
 *   into a slot of the sink's device segment (gstpinnedshmsinkdevice.c),
 *   synchronised before the frame is published. One copy per frame,
 *   counted in device-copies.
 * - zero copy (1.24+, gst_pinned_shm_sink_cuda_propose()): the sink
 *   proposes upstream a GstCudaBufferPool in the pipeline's GstCudaContext
 *   configured for virtual-memory allocations (cuda-alloc-method mmap:
 *   cuMemCreate exportable as a POSIX fd, minimum granularity); a buffer
 *   of such memory is published from the memory itself: its allocation is
 *   exported once (gst_cuda_memory_export(), the fd owned by the memory,
 *   dup'ed here) as a device segment (pf_segment_new_device) cached on the
 *   memory (qdata, freed with it), and the buffer is the frame's token, so
 *   upstream's pool gets it back only when every consumer released the
 *   frame.
 *
 * Threads and lifetimes: the streaming thread (render, and
 * propose_allocation, which runs in upstream's streaming thread); the
 * pipeline's GstCudaContext (cuda_ctx) is also set by set_context () and
 * read by the CONTEXT query in any thread, under cuda_lock (the lock order
 * at the top of gstpinnedshmsink-private.h: ensure_context ()), and
 * dropped by stop(). A memory's cached segment lives as long as the
 * memory: the producer holds its own reference while it announces it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#ifdef GST_PINNED_SHM_CUDA

#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#include <gst/pinnedcuda/gstpinnedcudagst-private.h>
#include <pinnedflow/pf-segment.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

/* cuda.h values and the CUmemAllocationProp layout (as pf-device-segment.c) */
#define CU_ALLOCATION_TYPE_PINNED 1
#define CU_LOCATION_TYPE_DEVICE 1
#define CU_GRANULARITY_MINIMUM 0

typedef struct
{
  int type;
  int requestedHandleTypes;
  struct
  {
    int type;
    int id;
  } location;
  void *win32HandleMetaData;
  struct
  {
    unsigned char compressionType, gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} cu_prop;

G_STATIC_ASSERT (sizeof (cu_prop) == 32);

/* The driver calls the export needs (the device's UUID and libgstcuda's
 * granularity), from the libcuda.so.1 libgstcuda opened: loaded once. */
typedef struct
{
  int (*DeviceGet) (int *dev, int ordinal);
  int (*DeviceGetUuid) (void *uuid, int dev);
  int (*MemGetAllocationGranularity) (size_t *g, const cu_prop * p, int opt);
} Driver;

static const Driver *
driver_get (void)
{
  static gsize once = 0;
  static Driver drv;
  static const Driver *table = NULL;

  if (g_once_init_enter (&once)) {
    void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (lib != NULL) {
      *(void **) (&drv.DeviceGet) = dlsym (lib, "cuDeviceGet");
      *(void **) (&drv.DeviceGetUuid) = dlsym (lib, "cuDeviceGetUuid_v2");
      if (drv.DeviceGetUuid == NULL)
        *(void **) (&drv.DeviceGetUuid) = dlsym (lib, "cuDeviceGetUuid");
      *(void **) (&drv.MemGetAllocationGranularity) = dlsym (lib,
          "cuMemGetAllocationGranularity");
      if (drv.DeviceGet && drv.DeviceGetUuid && drv.MemGetAllocationGranularity)
        table = &drv;
    }
    g_once_init_leave (&once, 1);
  }
  return table;
}

static GQuark
segment_quark (void)
{
  return g_quark_from_static_string ("pinnedshmsink-cuda-export");
}

/* set on a memory whose export failed once: copied from then on, without
 * asking (and logging) again every frame */
static GQuark
no_export_quark (void)
{
  return g_quark_from_static_string ("pinnedshmsink-cuda-no-export");
}

gboolean
gst_pinned_shm_sink_cuda_usable (void)
{
  return gst_pinned_cuda_gst_get () != NULL;
}

gboolean
gst_pinned_shm_sink_cuda_frame_map (GstPinnedShmSink * self, GstBuffer * buf,
    GstPinnedShmSinkCudaFrame * f)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  GstPinnedCudaGstMemoryHead *head;
  GstVideoMeta *meta = gst_buffer_get_video_meta (buf);
  const GstVideoInfo *vinfo = &self->vinfo;
  GstMemory *mem;
  guint p;

  memset (f, 0, sizeof (*f));
  mem = gst_buffer_n_memory (buf) == 1 ? gst_buffer_peek_memory (buf, 0) : NULL;
  if (gc == NULL || mem == NULL || !gc->is_cuda_memory (mem)) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("memory:CUDAMemory caps, and a buffer that is not one GstCudaMemory"),
        ("%u memories%s", gst_buffer_n_memory (buf),
            gc == NULL ? ", libgstcuda not loaded" : ""));
    return FALSE;
  }
  if (mem->offset != 0) {
    /* a GST_MAP_CUDA map gives the allocation's start, whatever the
     * memory's offset: a shared sub-memory is not read here */
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("A GstCudaMemory frame at an offset in its memory is not supported"),
        ("offset %" G_GSIZE_FORMAT, mem->offset));
    return FALSE;
  }
  head = (GstPinnedCudaGstMemoryHead *) mem;
  f->n_planes = GST_VIDEO_INFO_N_PLANES (vinfo);
  for (p = 0; p < f->n_planes; p++) {
    gint comp[GST_VIDEO_MAX_COMPONENTS];
    guint64 end;

    gst_video_format_info_component (vinfo->finfo, p, comp);
    f->rows[p] = GST_VIDEO_INFO_COMP_HEIGHT (vinfo, comp[0]);
    f->width[p] = (gsize) GST_VIDEO_INFO_COMP_WIDTH (vinfo, comp[0]) *
        GST_VIDEO_INFO_COMP_PSTRIDE (vinfo, comp[0]);
    f->offset[p] = meta ? meta->offset[p] : head->info.offset[p];
    f->stride[p] = meta ? meta->stride[p] : head->info.stride[p];
    end = (guint64) f->offset[p] + (guint64) f->stride[p] * (f->rows[p] - 1) +
        f->width[p];
    if (f->stride[p] <= 0 || (gsize) f->stride[p] < f->width[p]
        || end > mem->size || (meta && meta->n_planes != f->n_planes)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("A GstCudaMemory frame's planes do not fit its memory"),
          ("plane %u: offset %" G_GSIZE_FORMAT ", stride %d, %u rows of %"
              G_GSIZE_FORMAT " bytes, memory of %" G_GSIZE_FORMAT " bytes",
              p, f->offset[p], f->stride[p], f->rows[p], f->width[p],
              mem->size));
      return FALSE;
    }
  }
  /* 1.24+: upstream's stream done with it (a no-op without NEED_SYNC) */
  if (gc->memory_sync != NULL)
    gc->memory_sync (mem);
  if (!gst_memory_map (mem, &f->map, GST_MAP_READ |
          GST_PINNED_CUDA_GST_MAP_CUDA)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not map a GstCudaMemory frame for its device pointer"), (NULL));
    return FALSE;
  }
  f->mem = mem;
  f->size = mem->size;
  f->ctx = head->context;
  f->cu_ctx = head->context ? gc->context_get_handle (head->context) : NULL;
  f->device =
      head->context ? gst_pinned_cuda_gst_context_device (head->context) : 0;
  return TRUE;
}

void
gst_pinned_shm_sink_cuda_frame_unmap (GstPinnedShmSinkCudaFrame * f)
{
  if (f->mem != NULL) {
    gst_memory_unmap (f->mem, &f->map);
    f->mem = NULL;
  }
}

gboolean
gst_pinned_shm_sink_cuda_frame_copy (GstPinnedShmSink * self,
    GstPinnedShmSinkCudaFrame * f, guint64 dst)
{
  GError *error = NULL;
  const GstPinnedCudaRuntime *rt = gst_pinned_cuda_runtime_get (&error);
  GstPinnedCudaError err = GST_PINNED_CUDA_SUCCESS;
  const gchar *call = "cudaMemcpy2D";
  guint p;
  int prev;

  if (rt == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not copy a GstCudaMemory frame: no CUDA runtime"),
        ("%s", error->message));
    g_error_free (error);
    return FALSE;
  }
  /* in the memory's own context, as libgstcuda's elements copy */
  prev = gst_pinned_cuda_context_push_enter (rt, f->device, f->cu_ctx);
  for (p = 0; p < f->n_planes && err == GST_PINNED_CUDA_SUCCESS; p++)
    err = rt->Memcpy2D ((void *) (uintptr_t) (dst + f->offset[p]),
        f->stride[p], f->map.data + f->offset[p], f->stride[p], f->width[p],
        f->rows[p], GST_PINNED_CUDA_MEMCPY_DEVICE_TO_DEVICE);
  return gst_pinned_shm_sink_device_copy_finish (self, rt, f->device, prev,
      err, call);
}

/* ---- zero copy: libgstcuda's virtual-memory pool (1.24+) ---------------- */

/* Where a GstCudaContext set on the element goes: the slot of the look-up
 * this thread runs (ensure_context ()), else cuda_ctx. Under cuda_lock. */
static GObject **
context_slot_locked (GstPinnedShmSink * self)
{
  if (self->cuda_ensure_slot != NULL
      && self->cuda_ensure_thread == g_thread_self ())
    return self->cuda_ensure_slot;
  return &self->cuda_ctx;
}

void
gst_pinned_shm_sink_cuda_set_context (GstPinnedShmSink * self,
    GstContext * context)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();

  if (gc == NULL)
    return;
  /* gst_cuda_handle_set_context () only parses the context and keeps the
   * first one found: no lock, message or query of its own */
  g_mutex_lock (&self->cuda_lock);
  gc->handle_set_context (GST_ELEMENT (self), context, -1,
      (gpointer *) context_slot_locked (self));
  g_mutex_unlock (&self->cuda_lock);
}

/* A new reference to cuda_ctx, or NULL */
static GObject *
context_ref (GstPinnedShmSink * self)
{
  GObject *ctx;

  g_mutex_lock (&self->cuda_lock);
  ctx = self->cuda_ctx ? g_object_ref (self->cuda_ctx) : NULL;
  g_mutex_unlock (&self->cuda_lock);
  return ctx;
}

gboolean
gst_pinned_shm_sink_cuda_query (GstPinnedShmSink * self, GstQuery * query)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  GObject *ctx;
  gboolean ret;

  if (gc == NULL || GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT)
    return FALSE;
  /* answered with a reference of our own: stop () may drop cuda_ctx */
  ctx = context_ref (self);
  ret = ctx != NULL
      && gc->handle_context_query (GST_ELEMENT (self), query, ctx);
  if (ctx != NULL)
    g_object_unref (ctx);
  return ret;
}

void
gst_pinned_shm_sink_cuda_stop (GstPinnedShmSink * self)
{
  GObject *ctx;

  g_mutex_lock (&self->cuda_lock);
  ctx = self->cuda_ctx;
  self->cuda_ctx = NULL;
  g_mutex_unlock (&self->cuda_lock);
  if (ctx != NULL)
    g_object_unref (ctx);
}

/* The pipeline's GstCudaContext, kept in cuda_ctx: a new reference, or
 * NULL. A look-up (gst_cuda_ensure_element_context (): context queries both
 * ways, NEED_CONTEXT, else a context of its own, set on the element and
 * announced with HAVE_CONTEXT) runs under cuda_ensure_lock, never under
 * cuda_lock: libgstcuda writes the context it finds through the pointer
 * it is given, in the gst_element_set_context () calls it makes on this
 * thread, so it gets a slot of its own (cuda_ensure_slot, which
 * set_context () fills on this thread) and the result is stored in
 * cuda_ctx under cuda_lock. A context set meanwhile from another thread
 * stays (the first one set is kept, as gst_cuda_handle_set_context ()
 * keeps it). */
static GObject *
ensure_context (GstPinnedShmSink * self, const GstPinnedCudaGst * gc)
{
  GObject *ctx, *found = NULL, *drop = NULL;
  gboolean ok;

  ctx = context_ref (self);
  if (ctx != NULL)
    return ctx;
  g_mutex_lock (&self->cuda_ensure_lock);
  ctx = context_ref (self);
  if (ctx != NULL)
    goto done;
  g_mutex_lock (&self->cuda_lock);
  self->cuda_ensure_thread = g_thread_self ();
  self->cuda_ensure_slot = &found;
  g_mutex_unlock (&self->cuda_lock);

  ok = gc->ensure_element_context (GST_ELEMENT (self), -1,
      (gpointer *) & found);

  g_mutex_lock (&self->cuda_lock);
  self->cuda_ensure_thread = NULL;
  self->cuda_ensure_slot = NULL;
  if (!ok || found == NULL) {
    drop = found;
  } else if (self->cuda_ctx == NULL) {
    self->cuda_ctx = found;
  } else {
    drop = found;
  }
  ctx = self->cuda_ctx ? g_object_ref (self->cuda_ctx) : NULL;
  g_mutex_unlock (&self->cuda_lock);
  if (drop != NULL)
    g_object_unref (drop);
done:
  g_mutex_unlock (&self->cuda_ensure_lock);
  return ctx;
}

gboolean
gst_pinned_shm_sink_cuda_context (GstPinnedShmSink * self, gpointer * gst_ctx,
    gpointer * cu_ctx, gint * device)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  GObject *ctx;

  if (gc == NULL || (ctx = ensure_context (self, gc)) == NULL)
    return FALSE;
  *gst_ctx = ctx;
  *cu_ctx = gc->context_get_handle (ctx);
  *device = gst_pinned_cuda_gst_context_device (ctx);
  return TRUE;
}

gboolean
gst_pinned_shm_sink_cuda_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  GstBufferPool *pool;
  GstStructure *config;
  GObject *ctx;
  guint size;

  if (gc == NULL || !gc->has_vmm_export) {
    GST_DEBUG_OBJECT (self, "no virtual-memory GstCudaBufferPool here "
        "(libgstcuda %s): one device copy per frame",
        gc ? "before 1.24" : "not loaded");
    return FALSE;
  }
  /* the pipeline's context (upstream's, asked for), or one of our own */
  ctx = ensure_context (self, gc);
  if (ctx == NULL) {
    GST_INFO_OBJECT (self, "no GstCudaContext: one device copy per frame");
    return FALSE;
  }
  /* the pool keeps its own reference */
  pool = gc->buffer_pool_new (ctx);
  g_object_unref (ctx);
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (info),
      0, count);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gc->buffer_pool_config_set_cuda_alloc_method (config,
      GST_PINNED_CUDA_GST_ALLOC_MMAP);
  /* refused where the device has no virtual memory or POSIX-fd handles */
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_INFO_OBJECT (self, "the device cannot make exportable virtual "
        "memory: one device copy per frame");
    gst_object_unref (pool);
    return FALSE;
  }
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  GST_DEBUG_OBJECT (self, "proposing a virtual-memory GstCudaBufferPool of "
      "up to %u x %u bytes", count, size);
  gst_query_add_allocation_pool (query, pool, size, 0, count);
  gst_object_unref (pool);
  return TRUE;
}

/* The device segment of @mem's allocation (exported once, cached on it),
 * or NULL with *@why set (the memory stays usable: the caller copies). */
static pf_segment *
memory_segment (GstMemory * mem, gint device, gchar ** why)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  const Driver *drv = driver_get ();
  pf_segment *seg = gst_mini_object_get_qdata (GST_MINI_OBJECT_CAST (mem),
      segment_quark ());
  pf_segment_device dev;
  cu_prop prop;
  size_t g = 0;
  int fd = -1, dup_fd, cu_dev = 0, err;

  if (seg != NULL)
    return seg;
  if (drv == NULL) {
    *why = g_strdup ("libcuda.so.1 lacks cuDeviceGetUuid or "
        "cuMemGetAllocationGranularity");
    return NULL;
  }
  if (!gc->memory_export (mem, &fd) || fd < 0) {
    *why = g_strdup ("gst_cuda_memory_export failed");
    return NULL;
  }
  memset (&dev, 0, sizeof (dev));
  memset (&prop, 0, sizeof (prop));
  prop.type = CU_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = PF_DEVICE_HANDLE_POSIX_FD;
  prop.location.type = CU_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  if ((err = drv->DeviceGet (&cu_dev, device)) != 0
      || (err = drv->DeviceGetUuid (dev.uuid, cu_dev)) != 0
      || (err = drv->MemGetAllocationGranularity (&g, &prop,
              CU_GRANULARITY_MINIMUM)) != 0 || g == 0 || (g & (g - 1))
      || mem->maxsize % g != 0) {
    *why = g_strdup_printf ("device %d: CUDA error %d, granularity %"
        G_GSIZE_FORMAT ", allocation of %" G_GSIZE_FORMAT " bytes", device,
        err, (gsize) g, mem->maxsize);
    return NULL;
  }
  dev.granularity = g;
  dev.handle_type = PF_DEVICE_HANDLE_POSIX_FD;
  dev.ordinal = device;
  /* the memory keeps its own fd */
  dup_fd = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0) {
    *why = g_strdup_printf ("dup of the exported fd: %s", g_strerror (errno));
    return NULL;
  }
  err = pf_segment_new_device (dup_fd, mem->maxsize, &dev, &seg);
  if (err < 0) {
    close (dup_fd);
    *why = g_strdup_printf ("pf_segment_new_device: %s", g_strerror (-err));
    return NULL;
  }
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem), segment_quark (), seg,
      (GDestroyNotify) pf_segment_unref);
  return seg;
}

GstBuffer *
gst_pinned_shm_sink_cuda_export (GstPinnedShmSink * self, GstBuffer * buf,
    pf_producer_frame * frame, pf_segment ** segs)
{
  const GstPinnedCudaGst *gc = gst_pinned_cuda_gst_get ();
  GstMemory *mem = gst_buffer_n_memory (buf) == 1 ?
      gst_buffer_peek_memory (buf, 0) : NULL;
  GstPinnedCudaGstMemoryHead *head = (GstPinnedCudaGstMemoryHead *) mem;
  pf_segment *seg;
  gchar *why = NULL;

  if (gc == NULL || !gc->has_vmm_export || mem == NULL
      || !gc->is_cuda_memory (mem)
      || gc->memory_get_alloc_method (mem) != GST_PINNED_CUDA_GST_ALLOC_MMAP
      || head->context == NULL || mem->offset != 0)
    return NULL;
  if (gst_mini_object_get_qdata (GST_MINI_OBJECT_CAST (mem),
          no_export_quark ()) != NULL)
    return NULL;
  seg =
      memory_segment (mem, gst_pinned_cuda_gst_context_device (head->context),
      &why);
  if (seg == NULL) {
    GST_WARNING_OBJECT (self, "virtual-memory frame not exportable, this "
        "memory's frames are copied instead: %s", why);
    g_free (why);
    gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem), no_export_quark (),
        GINT_TO_POINTER (1), NULL);
    return NULL;
  }
  /* upstream's writes done before the frame is published */
  if (gc->memory_sync != NULL)
    gc->memory_sync (mem);
  frame->n_chunks = 1;
  frame->chunks[0].segment_id = pf_segment_get_id (seg);
  frame->chunks[0].offset = 0;
  frame->chunks[0].size = mem->size;
  segs[0] = seg;
  return gst_buffer_ref (buf);
}

#else /* !GST_PINNED_SHM_CUDA */

gboolean
gst_pinned_shm_sink_cuda_usable (void)
{
  return FALSE;
}

gboolean
gst_pinned_shm_sink_cuda_context (GstPinnedShmSink * self, gpointer * gst_ctx,
    gpointer * cu_ctx, gint * device)
{
  return FALSE;
}

gboolean
gst_pinned_shm_sink_cuda_propose (GstPinnedShmSink * self, GstQuery * query,
    GstCaps * caps, const GstVideoInfo * info, guint count)
{
  return FALSE;
}

void
gst_pinned_shm_sink_cuda_set_context (GstPinnedShmSink * self,
    GstContext * context)
{
}

gboolean
gst_pinned_shm_sink_cuda_query (GstPinnedShmSink * self, GstQuery * query)
{
  return FALSE;
}

void
gst_pinned_shm_sink_cuda_stop (GstPinnedShmSink * self)
{
}

#endif /* GST_PINNED_SHM_CUDA */
