/* GStreamer pinnedflow CUDA: libgstcuda for the tensor code, at run time
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The tensor functions' view of GStreamer's CUDA library: opened with
 * dlopen() the first time a memory:CUDAMemory buffer or caps come along
 * (the file the plugin opens, ext/cuda/gstpinnedcudagst.c, whose loader is
 * the plugin's own: a second dlopen() of one file gives the same handle),
 * the public calls it needs looked up, the library's own CUDA driver
 * loader run once. Nothing of its structs is read but the public
 * GstCudaMemory.context, checked to be a GstCudaContext.
 *
 * Threads: the table is made once (g_once) and read-only afterwards.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudatensor-private.h"

#include <dlfcn.h>

GST_DEBUG_CATEGORY_STATIC (gst_pinned_tensor_gstcuda_debug);
#define GST_CAT_DEFAULT gst_pinned_tensor_gstcuda_debug

/* ------------------------------------------------------------ libgstcuda */

#define LOOKUP(field, name, required) G_STMT_START {                  \
  *(gpointer *) (&t->field) = dlsym (handle, name);                   \
  if (t->field == NULL && (required)) {                               \
    missing = name;                                                   \
    goto failed;                                                      \
  }                                                                   \
} G_STMT_END

static GstPinnedTensorGstCuda *
gstcuda_open (void)
{
  const gchar *env = g_getenv ("GST_PINNEDFLOW_GSTCUDA");
  const gchar *name = env && *env ? env : "libgstcuda-1.0.so.0";
  const gchar *missing = NULL;
  GstPinnedTensorGstCuda *t;
  gboolean (*load_library) (void) = NULL;
  void (*memory_init_once) (void) = NULL;
  GType (*context_get_type) (void) = NULL;
  void *handle;

  if (g_strcmp0 (name, "none") == 0)
    return NULL;
  /* the handle the plugin holds, if it opened the library first */
  handle = dlopen (name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    GST_INFO ("%s not loadable: %s", name, dlerror ());
    return NULL;
  }
  t = g_new0 (GstPinnedTensorGstCuda, 1);
  *(gpointer *) (&load_library) = dlsym (handle, "gst_cuda_load_library");
  *(gpointer *) (&memory_init_once) = dlsym (handle,
      "gst_cuda_memory_init_once");
  *(gpointer *) (&context_get_type) = dlsym (handle,
      "gst_cuda_context_get_type");
  if (load_library == NULL || memory_init_once == NULL) {
    missing = "gst_cuda_load_library/memory_init_once";
    goto failed;
  }
  LOOKUP (is_cuda_memory, "gst_is_cuda_memory", TRUE);
  LOOKUP (context_push, "gst_cuda_context_push", TRUE);
  LOOKUP (context_pop, "gst_cuda_context_pop", TRUE);
  LOOKUP (buffer_pool_new, "gst_cuda_buffer_pool_new", TRUE);
  LOOKUP (context_new, "gst_cuda_context_new", FALSE);
  LOOKUP (memory_get_stream, "gst_cuda_memory_get_stream", FALSE);
  LOOKUP (stream_new, "gst_cuda_stream_new", FALSE);
  LOOKUP (stream_get_handle, "gst_cuda_stream_get_handle", FALSE);
  LOOKUP (stream_unref, "gst_cuda_stream_unref", FALSE);
  LOOKUP (alloc_wrapped, "gst_cuda_allocator_alloc_wrapped", FALSE);
  if (!t->memory_get_stream || !t->stream_new || !t->stream_get_handle ||
      !t->stream_unref) {
    t->memory_get_stream = NULL;
    t->stream_new = NULL;
    t->stream_get_handle = NULL;
    t->stream_unref = NULL;
  }
  if (!load_library ()) {
    GST_INFO ("%s: gst_cuda_load_library() failed (no CUDA driver)", name);
    g_free (t);
    return NULL;
  }
  memory_init_once ();
  /* registered by now (a context exists) where the library has no
   * get_type of its own to call (a stand-in) */
  t->context_type = context_get_type ? context_get_type () :
      g_type_from_name ("GstCudaContext");
  GST_INFO ("%s: memory:CUDAMemory tensors, %s", name, t->alloc_wrapped ?
      "wrapped device tensors (1.24+)" : "device tensors copied (1.22)");
  return t;

failed:
  GST_INFO ("%s lacks %s: no memory:CUDAMemory tensors", name, missing);
  g_free (t);
  return NULL;
}

#undef LOOKUP

const GstPinnedTensorGstCuda *
gst_pinned_tensor_gstcuda_get (void)
{
  static gsize once = 0;
  static const GstPinnedTensorGstCuda *table;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_pinned_tensor_gstcuda_debug,
        "pinnedcudatensorgstcuda", 0,
        "pinnedflow: libgstcuda for the tensor functions, at run time");
    table = gstcuda_open ();
    g_once_init_leave (&once, 1);
  }
  return table;
}

gboolean
gst_pinned_tensor_gstcuda_is_context (gpointer obj)
{
  const GstPinnedTensorGstCuda *t = gst_pinned_tensor_gstcuda_get ();
  GType type;

  if (t == NULL || obj == NULL)
    return FALSE;
  type = t->context_type ? t->context_type :
      g_type_from_name ("GstCudaContext");
  return type != 0 && G_TYPE_CHECK_INSTANCE_TYPE (obj, type);
}

gpointer
gst_pinned_tensor_gstcuda_memory_context (GstMemory * mem)
{
  const GstPinnedTensorGstCuda *t = gst_pinned_tensor_gstcuda_get ();
  /* GstCudaMemory { GstMemory mem; GstCudaContext *context; ... }: a
   * public field, read where no function gives it; checked below */
  struct
  {
    GstMemory mem;
    gpointer context;
  } *pub = (gpointer) mem;

  if (t == NULL || !t->is_cuda_memory (mem) ||
      !gst_pinned_tensor_gstcuda_is_context (pub->context))
    return NULL;
  return pub->context;
}

gint
gst_pinned_tensor_gstcuda_device_id (gpointer ctx)
{
  guint id = G_MAXUINT;

  if (ctx == NULL || !g_object_class_find_property (G_OBJECT_GET_CLASS (ctx),
          "cuda-device-id"))
    return -1;
  g_object_get (ctx, "cuda-device-id", &id, NULL);
  return id > G_MAXINT ? -1 : (gint) id;
}

gpointer
gst_pinned_cuda_tensor_query_cuda_context (GstElement * element)
{
  GstPad *pad;
  GstQuery *query;
  GstContext *context = NULL;
  const GValue *v;
  gpointer res = NULL;

  g_return_val_if_fail (GST_IS_ELEMENT (element), NULL);
  if (gst_pinned_tensor_gstcuda_get () == NULL)
    return NULL;
  pad = gst_element_get_static_pad (element, "src");
  if (pad == NULL)
    return NULL;
  query = gst_query_new_context ("gst.cuda.context");
  if (gst_pad_peer_query (pad, query)) {
    gst_query_parse_context (query, &context);
    if (context) {
      v = gst_structure_get_value (gst_context_get_structure (context),
          "gst.cuda.context");
      if (v && G_VALUE_HOLDS_OBJECT (v) &&
          gst_pinned_tensor_gstcuda_is_context (g_value_get_object (v)))
        res = g_value_dup_object (v);
    }
  }
  gst_query_unref (query);
  gst_object_unref (pad);
  return res;
}
