/* pfemu-gstcuda: libgstcuda with 1.24's GstCudaStream, on a 1.22 host
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The plugin opens GStreamer's CUDA library by the name in
 * GST_PINNEDFLOW_GSTCUDA (gst-libs/gst/pinnedcuda/gstpinnedcudagst.c, the
 * loader it shares with the tensor functions); pointed at this library
 * (libpfemu-gstcuda.so), it finds what libgstcuda 1.24 and later
 * offer, so that the 1.24+ path (a GstCudaStream carried by the memory,
 * NEED_SYNC, gst_cuda_memory_sync) runs where only 1.22 is installed:
 *
 * - the 1.22 functions the plugin uses are forwarded to the real
 *   libgstcuda-1.0.so.0 (contexts, context sharing, GstCudaBufferPool,
 *   GstCudaMemory); gst_cuda_load_library is defined here, so the plugin
 *   reads no 1.22 version from the file name of the library behind it;
 * - gst_cuda_stream_new/_get_handle/_ref/_unref: a CUstream made with
 *   flags 0 (CU_STREAM_DEFAULT: a blocking stream, ordered with the legacy
 *   default stream) with the GstCudaContext pushed, as 1.24-1.28 do;
 * - gst_buffer_pool_config_set_cuda_stream: the stream a GstCudaBufferPool
 *   gives every memory it allocates (1.22's pool class gets its set_config
 *   and alloc_buffer wrapped, once per process: pools without a stream are
 *   unchanged); a set_config with a stream synchronizes that stream once
 *   (cuStreamSynchronize, its context pushed), as 1.26.2's does when it
 *   frees the memory it allocated to read the layout;
 * - gst_cuda_memory_get_stream, and gst_cuda_memory_sync as 1.24 does it:
 *   with NEED_SYNC set, the flag cleared and cuStreamSynchronize on the
 *   memory's stream with its context pushed (a context libgstcuda made
 *   with CU_CTX_SCHED_AUTO: the emulator counts the sync as spinning).
 * What 1.24 does on a CPU map of a NEED_SYNC memory (a sync first) is not
 * emulated: readers here map with GST_MAP_CUDA.
 *
 * Only for the tests (tests/cuda/meson.build: cuda-interop-1.24), with
 * the driver-API emulator (libcuda.so.1 of tests/cuda/emu) on
 * LD_LIBRARY_PATH. Threads: any; the real library and the driver symbols
 * are looked up once (g_once); a stream is refcounted atomically.
 */
#include <dlfcn.h>
#include <gst/gst.h>

#define EXPORT __attribute__ ((visibility ("default")))
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

/* gstcudamemory.h (1.24): GST_CUDA_MEMORY_TRANSFER_NEED_SYNC */
#define NEED_SYNC (GST_MEMORY_FLAG_LAST << 2)
/* cuda.h: CU_STREAM_DEFAULT, what gstcudastream.cpp passes */
#define STREAM_DEFAULT 0x0

typedef struct
{
  gint refs;
  gpointer context;             /* GstCudaContext, a reference */
  void *handle;                 /* CUstream */
} PfemuCudaStream;

static struct
{
  void *lib;
  /* libgstcuda 1.22 */
    gboolean (*load_library) (void);
    gboolean (*context_push) (gpointer ctx);
    gboolean (*context_pop) (gpointer * cu_ctx);
    gpointer (*context_get_handle) (gpointer ctx);
    gboolean (*ensure_element_context) (GstElement * element, gint device_id,
      gpointer * ctx);
    gboolean (*handle_set_context) (GstElement * element, GstContext * context,
      gint device_id, gpointer * ctx);
    gboolean (*handle_context_query) (GstElement * element, GstQuery * query,
      gpointer ctx);
  GstBufferPool *(*buffer_pool_new) (gpointer ctx);
    gboolean (*is_cuda_memory) (GstMemory * mem);
  void (*memory_init_once) (void);
  /* the driver (the emulator's libcuda.so.1) */
  int (*StreamCreate) (void **stream, unsigned int flags);
  int (*StreamDestroy) (void *stream);
  int (*StreamSynchronize) (void *stream);
} real;

static GQuark stream_quark;

static gpointer
open_real (gpointer unused)
{
  void *cu;

  stream_quark = g_quark_from_static_string ("pfemu-gstcuda-stream");
  real.lib = dlopen ("libgstcuda-1.0.so.0", RTLD_NOW | RTLD_LOCAL);
  cu = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real.lib == NULL || cu == NULL) {
    g_printerr ("pfemu-gstcuda: %s\n", dlerror ());
    return NULL;
  }
#define SYM(lib, field, name) \
  *(gpointer *) (&real.field) = dlsym (lib, name); \
  if (real.field == NULL) { \
    g_printerr ("pfemu-gstcuda: no %s\n", name); \
    return NULL; \
  }
  SYM (real.lib, load_library, "gst_cuda_load_library");
  SYM (real.lib, context_push, "gst_cuda_context_push");
  SYM (real.lib, context_pop, "gst_cuda_context_pop");
  SYM (real.lib, context_get_handle, "gst_cuda_context_get_handle");
  SYM (real.lib, ensure_element_context, "gst_cuda_ensure_element_context");
  SYM (real.lib, handle_set_context, "gst_cuda_handle_set_context");
  SYM (real.lib, handle_context_query, "gst_cuda_handle_context_query");
  SYM (real.lib, buffer_pool_new, "gst_cuda_buffer_pool_new");
  SYM (real.lib, is_cuda_memory, "gst_is_cuda_memory");
  SYM (real.lib, memory_init_once, "gst_cuda_memory_init_once");
  SYM (cu, StreamCreate, "cuStreamCreate");
  SYM (cu, StreamDestroy, "cuStreamDestroy_v2");
  SYM (cu, StreamSynchronize, "cuStreamSynchronize");
#undef SYM
  return GINT_TO_POINTER (1);
}

static gboolean
ready (void)
{
  static GOnce once = G_ONCE_INIT;

  return g_once (&once, open_real, NULL) != NULL;
}

/* ------------------------------------------------------------ 1.22 */

EXPORT gboolean
gst_cuda_load_library (void)
{
  return ready () && real.load_library ();
}

EXPORT gboolean
gst_cuda_context_push (gpointer ctx)
{
  return ready () && real.context_push (ctx);
}

EXPORT gboolean
gst_cuda_context_pop (gpointer * cu_ctx)
{
  return ready () && real.context_pop (cu_ctx);
}

EXPORT gpointer
gst_cuda_context_get_handle (gpointer ctx)
{
  return ready ()? real.context_get_handle (ctx) : NULL;
}

EXPORT gboolean
gst_cuda_ensure_element_context (GstElement * element, gint device_id,
    gpointer * ctx)
{
  return ready () && real.ensure_element_context (element, device_id, ctx);
}

EXPORT gboolean
gst_cuda_handle_set_context (GstElement * element, GstContext * context,
    gint device_id, gpointer * ctx)
{
  return ready () && real.handle_set_context (element, context, device_id, ctx);
}

EXPORT gboolean
gst_cuda_handle_context_query (GstElement * element, GstQuery * query,
    gpointer ctx)
{
  return ready () && real.handle_context_query (element, query, ctx);
}

EXPORT gboolean
gst_is_cuda_memory (GstMemory * mem)
{
  return ready () && real.is_cuda_memory (mem);
}

EXPORT void
gst_cuda_memory_init_once (void)
{
  if (ready ())
    real.memory_init_once ();
}

/* ------------------------------------------------------------ streams */

EXPORT gpointer
gst_cuda_stream_new (gpointer context)
{
  PfemuCudaStream *s;
  void *handle = NULL;
  int err;

  if (!ready () || !real.context_push (context))
    return NULL;
  err = real.StreamCreate (&handle, STREAM_DEFAULT);
  real.context_pop (NULL);
  if (err != 0)
    return NULL;
  s = g_new0 (PfemuCudaStream, 1);
  s->refs = 1;
  s->context = gst_object_ref (context);
  s->handle = handle;
  return s;
}

EXPORT gpointer
gst_cuda_stream_get_handle (gpointer stream)
{
  return stream ? ((PfemuCudaStream *) stream)->handle : NULL;
}

EXPORT gpointer
gst_cuda_stream_ref (gpointer stream)
{
  g_atomic_int_inc (&((PfemuCudaStream *) stream)->refs);
  return stream;
}

EXPORT void
gst_cuda_stream_unref (gpointer stream)
{
  PfemuCudaStream *s = stream;

  if (!g_atomic_int_dec_and_test (&s->refs))
    return;
  if (real.context_push (s->context)) {
    real.StreamDestroy (s->handle);
    real.context_pop (NULL);
  }
  gst_object_unref (s->context);
  g_free (s);
}

/* ------------------------------------------------------------ pools */

#define CONFIG_FIELD "pfemu-cuda-stream"

static gboolean (*pool_set_config) (GstBufferPool * pool,
    GstStructure * config);
static GstFlowReturn (*pool_alloc_buffer) (GstBufferPool * pool,
    GstBuffer ** buffer, GstBufferPoolAcquireParams * params);

/* The stream the config names (a reference) goes with the pool; it is
 * synchronized once, as 1.26's set_config does (its probe memory, which
 * carries the stream, is freed with a cuStreamSynchronize). */
static gboolean
wrapped_set_config (GstBufferPool * pool, GstStructure * config)
{
  PfemuCudaStream *stream = NULL;

  if (!pool_set_config (pool, config))
    return FALSE;
  if (gst_structure_get (config, CONFIG_FIELD, G_TYPE_POINTER, &stream,
          NULL) && stream) {
    g_object_set_qdata_full (G_OBJECT (pool), stream_quark,
        gst_cuda_stream_ref (stream), gst_cuda_stream_unref);
    if (real.context_push (stream->context)) {
      real.StreamSynchronize (stream->handle);
      real.context_pop (NULL);
    }
  } else
    g_object_set_qdata (G_OBJECT (pool), stream_quark, NULL);
  return TRUE;
}

/* Every memory of a pool with a stream carries it (a reference). */
static GstFlowReturn
wrapped_alloc_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  gpointer stream = g_object_get_qdata (G_OBJECT (pool), stream_quark);
  GstFlowReturn ret = pool_alloc_buffer (pool, buffer, params);
  guint i;

  if (ret != GST_FLOW_OK || stream == NULL)
    return ret;
  for (i = 0; i < gst_buffer_n_memory (*buffer); i++)
    gst_mini_object_set_qdata (GST_MINI_OBJECT (gst_buffer_peek_memory
            (*buffer, i)), stream_quark, gst_cuda_stream_ref (stream),
        gst_cuda_stream_unref);
  return ret;
}

static gpointer
wrap_pool_class (gpointer type)
{
  GstBufferPoolClass *klass = g_type_class_ref (GPOINTER_TO_SIZE (type));

  pool_set_config = klass->set_config;
  pool_alloc_buffer = klass->alloc_buffer;
  klass->set_config = wrapped_set_config;
  klass->alloc_buffer = wrapped_alloc_buffer;
  return klass;
}

EXPORT GstBufferPool *
gst_cuda_buffer_pool_new (gpointer context)
{
  static GOnce once = G_ONCE_INIT;
  GstBufferPool *pool;

  if (!ready () || (pool = real.buffer_pool_new (context)) == NULL)
    return NULL;
  g_once (&once, wrap_pool_class, GSIZE_TO_POINTER (G_OBJECT_TYPE (pool)));
  return pool;
}

EXPORT void
gst_buffer_pool_config_set_cuda_stream (GstStructure * config, gpointer stream)
{
  gst_structure_set (config, CONFIG_FIELD, G_TYPE_POINTER, stream, NULL);
}

/* ------------------------------------------------------------ memory */

EXPORT gpointer
gst_cuda_memory_get_stream (GstMemory * mem)
{
  return gst_mini_object_get_qdata (GST_MINI_OBJECT (mem), stream_quark);
}

EXPORT void
gst_cuda_memory_sync (GstMemory * mem)
{
  PfemuCudaStream *s = gst_cuda_memory_get_stream (mem);

  if (s == NULL || !GST_MEMORY_FLAG_IS_SET (mem, NEED_SYNC))
    return;
  GST_MINI_OBJECT_FLAG_UNSET (mem, NEED_SYNC);
  if (real.context_push (s->context)) {
    real.StreamSynchronize (s->handle);
    real.context_pop (NULL);
  }
}
