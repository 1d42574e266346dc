/* GStreamer pinnedflow CUDA: GStreamer's CUDA library, opened at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * libgstcuda-1.0 (gst-plugins-bad: GstCudaContext, GstCudaMemory,
 * GstCudaBufferPool, the gst.cuda.context sharing of nvcodec's elements)
 * is opened with dlopen() the first time an element asks, so that the
 * plugin builds without libgstreamer-plugins-bad1.0-dev. Nothing of its
 * structs is used: contexts, streams and pools are opaque pointers, the
 * plane layout of a GstCudaMemory buffer is read from the GstVideoMeta the
 * pool attaches (1.22 and later), the device pointer from a GST_MAP_CUDA
 * map. The few values needed are copied below from the 1.22 and 1.28
 * headers (identical in both).
 *
 * 1.22 has no GstCudaStream; 1.24 adds it (gst_cuda_stream_new, the
 * pool's stream, the memory's NEED_SYNC flag and gst_cuda_memory_sync).
 * has_stream is TRUE when those symbols are all present and the library's
 * version (from its file name) is 1.24 or later.
 *
 * The one loader of libgstcuda, for the plugin (ext/cuda: contexts,
 * context sharing, GstCudaBufferPool, streams) and for the tensor
 * functions of libgstpinnedflowcuda-1.0 (gstpinnedcudatensor*.c:
 * GstCudaMemory in and out, gst_cuda_allocator_alloc_wrapped). Not
 * installed, not exported: built once as the static helper library
 * gstpinnedcudagst (gst-libs/gst/pinnedcuda/meson.build, hidden symbols)
 * and linked into both, so each keeps a table of its own: the same file
 * opened (a second dlopen() of one file gives the same handle), the same
 * debug category (pinnedcudagst), gst_cuda_load_library() and
 * gst_cuda_memory_init_once() run by each (both are once-only in
 * libgstcuda). A table is made once per process and copy and never freed
 * (the library is never closed).
 */
#ifndef __GST_PINNED_CUDA_GST_PRIVATE_H__
#define __GST_PINNED_CUDA_GST_PRIVATE_H__

#include <gst/gst.h>
#include <gst/video/video.h>
#include <gst/pinnedcuda/gstpinnedcudaloader.h>

G_BEGIN_DECLS

/* gstcudamemory.h, gstcudacontext.h (1.22 to 1.28) */
#define GST_PINNED_CUDA_GST_MAP_CUDA (GST_MAP_FLAG_LAST << 1)
#define GST_PINNED_CUDA_GST_CAPS_FEATURE "memory:CUDAMemory"
#define GST_PINNED_CUDA_GST_CONTEXT_TYPE "gst.cuda.context"
/* GstCudaMemoryAllocMethod, 1.24+ */
#define GST_PINNED_CUDA_GST_ALLOC_MMAP 2
/* GST_CUDA_MEMORY_TRANSFER_NEED_SYNC, 1.24+ */
#define GST_PINNED_CUDA_GST_MEMORY_NEED_SYNC (GST_MEMORY_FLAG_LAST << 2)

/* The public head of a GstCudaMemory (gstcudamemory.h, the same in 1.22
 * to 1.28): the memory, its GstCudaContext, the layout it was made with. */
typedef struct
{
  GstMemory mem;
  GObject *context;
  GstVideoInfo info;
} GstPinnedCudaGstMemoryHead;

typedef struct
{
  gchar *library;               /* the file opened */
  guint minor;                  /* GStreamer minor version of the library,
                                 * 0 if unknown */
  gboolean has_stream;          /* the 1.24+ GstCudaStream path */
  gboolean has_vmm_export;      /* the three 1.24+ virtual-memory calls
                                 * below, and the library is 1.24+ */
  GType context_type;           /* GstCudaContext */

  /* 1.22 */
  gboolean (*load_library) (void);
  gboolean (*context_push) (gpointer ctx);
  gboolean (*context_pop) (gpointer * cu_ctx);
  gpointer (*context_get_handle) (gpointer ctx);
  gboolean (*ensure_element_context) (GstElement * element, gint device_id,
      gpointer * ctx);
  gboolean (*handle_set_context) (GstElement * element,
      GstContext * context, gint device_id, gpointer * ctx);
  gboolean (*handle_context_query) (GstElement * element, GstQuery * query,
      gpointer ctx);
  GstBufferPool *(*buffer_pool_new) (gpointer ctx);
  gboolean (*is_cuda_memory) (GstMemory * mem);
  void (*memory_init_once) (void);
  /* 1.22 too, but optional: without them a context the element must make
   * is libgstcuda's own (cuCtxCreate), not the wrapped primary one */
  gpointer (*context_new_wrapped) (gpointer cu_ctx, gint cu_device);
  GstContext *(*context_new_cuda_context) (gpointer ctx);
  /* 1.22, optional: a GstCudaContext of a device (the tensor import) */
  gpointer (*context_new) (guint device_id);

  /* 1.24+, NULL before; stream_new, stream_get_handle, stream_unref and
   * memory_get_stream are all set or all NULL */
  gpointer (*stream_new) (gpointer ctx);
  gpointer (*stream_get_handle) (gpointer stream);
  void (*stream_unref) (gpointer stream);
  gpointer (*memory_get_stream) (GstMemory * mem);
  void (*buffer_pool_config_set_cuda_stream) (GstStructure * config,
      gpointer stream);
  void (*memory_sync) (GstMemory * mem);
  GstMemory *(*alloc_wrapped) (gpointer allocator, gpointer ctx,
      gpointer stream, const GstVideoInfo * info, guintptr dev_ptr,
      gpointer user_data, GDestroyNotify notify);
  /* 1.24+, NULL before: a pool of virtual-memory allocations
   * (GST_PINNED_CUDA_GST_ALLOC_MMAP), a memory's method, and its
   * allocation exported as a POSIX fd (owned by the memory: never close
   * it) */
  void (*buffer_pool_config_set_cuda_alloc_method) (GstStructure * config,
      gint method);
  gint (*memory_get_alloc_method) (GstMemory * mem);
  gboolean (*memory_export) (GstMemory * mem, gpointer os_handle);
} GstPinnedCudaGst;

/* The table, or NULL when libgstcuda-1.0.so.0 (or the file the environment
 * variable GST_PINNEDFLOW_GSTCUDA names; "none" never loads one) cannot be
 * opened, lacks a 1.22 symbol, or its own loader finds no CUDA driver
 * (gst_cuda_load_library). Why is logged once at debug level. */
const GstPinnedCudaGst *gst_pinned_cuda_gst_get (void);

/* The device ordinal of the GstCudaContext @ctx (its cuda-device-id), -1
 * for NULL or an object without that property. */
gint gst_pinned_cuda_gst_context_device (gpointer ctx);

/* TRUE when @caps' first structure has the memory:CUDAMemory feature. */
gboolean gst_pinned_cuda_gst_caps_is_cuda_memory (const GstCaps * caps);

/* gstpinnedcudagstcopy.c: device frames into memory:CUDAMemory on 1.22
 * (no gst_cuda_allocator_alloc_wrapped), for the tensor import and
 * pinnedshmsrc. */

/* A GstCudaBufferPool of @ctx for frames of @info (memory:CUDAMemory
 * caps), configured and active; NULL when libgstcuda refuses. */
GstBufferPool *gst_pinned_cuda_gst_pool_new (const GstPinnedCudaGst * t,
    gpointer ctx, const GstVideoInfo * info, guint min, guint max);

/* A pitched device frame: plane p at row row_offset[p] of @data, each row
 * @pitch bytes apart, row_bytes[p] of them used; total_rows rows. */
typedef struct
{
  const guint8 *data;
  gsize pitch;
  guint n_planes;
  gsize row_offset[GST_VIDEO_MAX_PLANES];
  gsize row_bytes[GST_VIDEO_MAX_PLANES];
  gsize total_rows;
} GstPinnedCudaGstPlanes;

/* One device-to-device copy of @src into @out (a buffer of one GstCudaMemory
 * with its video meta, from gst_pinned_cuda_gst_pool_new()), ordered after
 * @stream (NULL: the legacy default stream) with device @device's primary
 * context pushed (cudaMemcpyDefault: unified addressing finds both
 * pointers), complete on return. FALSE: *@err is the CUDA error of the
 * call *@what names, or GST_PINNED_CUDA_SUCCESS with *@what saying what
 * else failed (no video meta, no GST_MAP_CUDA map). */
gboolean gst_pinned_cuda_gst_copy_planes (const GstPinnedCudaRuntime * rt,
    gint device, GstBuffer * out, const GstPinnedCudaGstPlanes * src,
    GstPinnedCudaStream stream, const gchar ** what,
    GstPinnedCudaError * err);

G_END_DECLS
#endif /* __GST_PINNED_CUDA_GST_PRIVATE_H__ */
