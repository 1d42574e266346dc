/* GStreamer pinnedflow CUDA: GStreamer's CUDA library, opened at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built into the static helper library gstpinnedcudagst, linked into the
 * plugin and into libgstpinnedflowcuda-1.0 (gstpinnedcudagst-private.h).
 *
 * Threads: gst_pinned_cuda_gst_get() may be called from any thread; the
 * table is made once (g_once) and read-only afterwards.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudagst-private.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_cuda_gst_debug);
#define GST_CAT_DEFAULT gst_pinned_cuda_gst_debug

#define DEFAULT_LIBRARY "libgstcuda-1.0.so.0"

/* The minor version in the real file name, libgstcuda-1.0.so.0.MMNN.P
 * (libtool-style versions of GStreamer's libraries: MM = minor). */
static guint
library_minor (void *handle, void *sym)
{
  Dl_info info;
  gchar *real;
  const gchar *p;
  guint minor = 0, micro = 0;

  (void) handle;
  if (dladdr (sym, &info) == 0 || info.dli_fname == NULL)
    return 0;
  real = realpath (info.dli_fname, NULL);
  if (real == NULL)
    return 0;
  p = strstr (real, ".so.0.");
  if (p == NULL || sscanf (p + strlen (".so.0."), "%u.%u", &minor, &micro) < 1)
    minor = 0;
  else
    minor /= 100;
  free (real);
  return minor;
}

/* The functions looked up, into the table's fields. */
#define SYM(field, name, required) \
  { name, G_STRUCT_OFFSET (GstPinnedCudaGst, field), required }
static const struct
{
  const gchar *name;
  glong offset;
  gboolean required;
} symbols[] = {
  /* 1.22: what the plugin's elements need */
  SYM (load_library, "gst_cuda_load_library", TRUE),
  SYM (context_push, "gst_cuda_context_push", TRUE),
  SYM (context_pop, "gst_cuda_context_pop", TRUE),
  SYM (context_get_handle, "gst_cuda_context_get_handle", TRUE),
  SYM (ensure_element_context, "gst_cuda_ensure_element_context", TRUE),
  SYM (handle_set_context, "gst_cuda_handle_set_context", TRUE),
  SYM (handle_context_query, "gst_cuda_handle_context_query", TRUE),
  SYM (buffer_pool_new, "gst_cuda_buffer_pool_new", TRUE),
  SYM (is_cuda_memory, "gst_is_cuda_memory", TRUE),
  SYM (memory_init_once, "gst_cuda_memory_init_once", TRUE),
  /* 1.22, optional: the plugin's wrapped context, the tensor import's
   * context of a device (a stand-in may lack them) */
  SYM (context_new_wrapped, "gst_cuda_context_new_wrapped", FALSE),
  SYM (context_new_cuda_context, "gst_context_new_cuda_context", FALSE),
  SYM (context_new, "gst_cuda_context_new", FALSE),
  /* 1.24+: GstCudaStream, the pool's stream, NEED_SYNC; the tensor
   * import's wrapped device memory */
  SYM (stream_new, "gst_cuda_stream_new", FALSE),
  SYM (stream_get_handle, "gst_cuda_stream_get_handle", FALSE),
  SYM (stream_unref, "gst_cuda_stream_unref", FALSE),
  SYM (memory_get_stream, "gst_cuda_memory_get_stream", FALSE),
  SYM (buffer_pool_config_set_cuda_stream,
      "gst_buffer_pool_config_set_cuda_stream", FALSE),
  SYM (memory_sync, "gst_cuda_memory_sync", FALSE),
  SYM (alloc_wrapped, "gst_cuda_allocator_alloc_wrapped", FALSE),
  /* 1.24+: virtual-memory pools and their export (pinnedshmsink's
   * zero-copy device frames) */
  SYM (buffer_pool_config_set_cuda_alloc_method,
      "gst_buffer_pool_config_set_cuda_alloc_method", FALSE),
  SYM (memory_get_alloc_method, "gst_cuda_memory_get_alloc_method", FALSE),
  SYM (memory_export, "gst_cuda_memory_export", FALSE),
};

#undef SYM

static GstPinnedCudaGst *
open_table (void)
{
  const gchar *env = g_getenv ("GST_PINNEDFLOW_GSTCUDA");
  const gchar *name = env && *env ? env : DEFAULT_LIBRARY;
  const gchar *missing = NULL;
  GstPinnedCudaGst *t;
  GType (*context_get_type) (void) = NULL;
  void *handle;
  guint i;

  if (g_strcmp0 (name, "none") == 0) {
    GST_INFO ("GST_PINNEDFLOW_GSTCUDA=none: memory:CUDAMemory disabled");
    return NULL;
  }
  /* the handle the other user holds, if it opened the library first */
  handle = dlopen (name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    GST_INFO ("%s not loadable (%s): memory:CUDAMemory and context sharing "
        "with nvcodec disabled, the elements use their own device memory",
        name, dlerror ());
    return NULL;
  }
  t = g_new0 (GstPinnedCudaGst, 1);
  for (i = 0; i < G_N_ELEMENTS (symbols); i++) {
    gpointer *field = G_STRUCT_MEMBER_P (t, symbols[i].offset);

    *field = dlsym (handle, symbols[i].name);
    if (*field == NULL && symbols[i].required) {
      missing = symbols[i].name;
      goto failed;
    }
  }
  /* the GstCudaContext type, where the library has a get_type to call */
  *(gpointer *) (&context_get_type) = dlsym (handle,
      "gst_cuda_context_get_type");
  if (!t->stream_new || !t->stream_get_handle || !t->stream_unref ||
      !t->memory_get_stream) {
    t->stream_new = NULL;
    t->stream_get_handle = NULL;
    t->stream_unref = NULL;
    t->memory_get_stream = NULL;
  }

  t->library = g_strdup (name);
  t->minor = library_minor (handle, (gpointer) t->load_library);
  t->has_vmm_export = t->buffer_pool_config_set_cuda_alloc_method &&
      t->memory_get_alloc_method && t->memory_export &&
      (t->minor == 0 || t->minor >= 24);
  t->has_stream = t->stream_new && t->stream_get_handle && t->stream_unref &&
      t->buffer_pool_config_set_cuda_stream && t->memory_get_stream &&
      t->memory_sync && (t->minor == 0 || t->minor >= 24);

  /* Opens libcuda.so.1 and resolves the driver's symbols (once). */
  if (!t->load_library ()) {
    GST_INFO ("%s loaded, but gst_cuda_load_library() failed (no CUDA "
        "driver, libcuda.so.1): memory:CUDAMemory disabled", name);
    g_free (t->library);
    g_free (t);
    return NULL;
  }
  /* registers GstCudaAllocator, which GstCudaBufferPool looks up by name
   * (nvcodec does this when it loads; it may not be loaded) */
  t->memory_init_once ();
  /* registered by now (a context exists) where the library has no
   * get_type of its own to call (a stand-in) */
  t->context_type = context_get_type ? context_get_type () :
      g_type_from_name ("GstCudaContext");
  GST_INFO ("%s (1.%u): memory:CUDAMemory enabled, %s, tensors %s", name,
      t->minor, t->has_stream ? "GstCudaStream + NEED_SYNC path (1.24+)" :
      "frames pushed once their copy completed (1.22 path)",
      t->alloc_wrapped && t->stream_new ? "wrapped (1.24+)" :
      "copied into a GstCudaBufferPool buffer (1.22)");
  return t;

failed:
  GST_INFO ("%s lacks %s: memory:CUDAMemory disabled", name, missing);
  g_free (t);
  return NULL;
}


const GstPinnedCudaGst *
gst_pinned_cuda_gst_get (void)
{
  static gsize once = 0;
  static const GstPinnedCudaGst *table = NULL;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_cuda_gst_debug, "pinnedcudagst", 0,
        "pinnedflow: GStreamer's CUDA library (libgstcuda) at run time");
    table = open_table ();
    g_once_init_leave (&once, 1);
  }
  return table;
}

gint
gst_pinned_cuda_gst_context_device (gpointer ctx)
{
  guint id = G_MAXUINT;

  if (ctx == NULL || !g_object_class_find_property (G_OBJECT_GET_CLASS (ctx),
          "cuda-device-id"))
    return -1;
  g_object_get (ctx, "cuda-device-id", &id, NULL);
  return id > G_MAXINT ? -1 : (gint) id;
}

gboolean
gst_pinned_cuda_gst_caps_is_cuda_memory (const GstCaps * caps)
{
  GstCapsFeatures *f;

  if (caps == NULL || gst_caps_get_size (caps) == 0)
    return FALSE;
  f = gst_caps_get_features (caps, 0);
  return f != NULL && gst_caps_features_contains (f,
      GST_PINNED_CUDA_GST_CAPS_FEATURE);
}
