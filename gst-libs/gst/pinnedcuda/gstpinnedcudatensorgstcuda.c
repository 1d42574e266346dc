/* GStreamer pinnedflow CUDA: GstCudaContext and GstCudaMemory for tensors
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The tensor functions' view of GStreamer's CUDA library, through its one
 * loader (gst_pinned_cuda_gst_get(), gstpinnedcudagst.c, the plugin's
 * too): opened the first time a memory:CUDAMemory buffer or caps come
 * along. Nothing of its structs is read but the public
 * GstCudaMemory.context, checked to be a GstCudaContext.
 *
 * Threads: any; the loader's table is read-only once made.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedcudatensor-private.h"

gboolean
gst_pinned_tensor_gstcuda_is_context (gpointer obj)
{
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();
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
  const GstPinnedCudaGst *t = gst_pinned_cuda_gst_get ();
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

gpointer
gst_pinned_cuda_tensor_query_cuda_context (GstElement * element)
{
  GstPad *pad;
  GstQuery *query;
  GstContext *context = NULL;
  const GValue *v;
  gpointer res = NULL;

  g_return_val_if_fail (GST_IS_ELEMENT (element), NULL);
  if (gst_pinned_cuda_gst_get () == NULL)
    return NULL;
  pad = gst_element_get_static_pad (element, "src");
  if (pad == NULL)
    return NULL;
  query = gst_query_new_context (GST_PINNED_CUDA_GST_CONTEXT_TYPE);
  if (gst_pad_peer_query (pad, query)) {
    gst_query_parse_context (query, &context);
    if (context) {
      v = gst_structure_get_value (gst_context_get_structure (context),
          GST_PINNED_CUDA_GST_CONTEXT_TYPE);
      if (v && G_VALUE_HOLDS_OBJECT (v) &&
          gst_pinned_tensor_gstcuda_is_context (g_value_get_object (v)))
        res = g_value_dup_object (v);
    }
  }
  gst_query_unref (query);
  gst_object_unref (pad);
  return res;
}
