/* GStreamer pinnedflow: pinnedshmsink's memory:DMABuf caps and dmabufs
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The sink's side of memory:DMABuf (issue 34): the CAPS query answer
 * (video/x-raw(memory:DMABuf) kept only where /dev/udmabuf opens, so that
 * the pool proposed for such caps can hand out dmabufs; on GStreamer >=
 * 1.24 also format=DMA_DRM with a linear drm-format), the caps the
 * consumers get for them (system memory: a consumer maps the segment, it
 * never sees a dmabuf), and the copy of a buffer of foreign memory into
 * the copy pool, a foreign dmabuf mapped read-only by its fd here, checked
 * first so that a bad fd or one shorter than its memory is an error, not
 * a crash.
 *
 * Threads and lifetimes: get_caps runs in any thread that queries the
 * pad and touches no state of the sink; the rest runs in the streaming
 * thread. A mapping made here is unmapped before the function returns.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#include <gst/allocators/gstdmabuf.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/dma-buf.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

/* DRM_FORMAT_MOD_LINEAR (drm_fourcc.h): the only layout the slots have */
#define MOD_LINEAR G_GUINT64_CONSTANT (0)

gboolean
gst_pinned_shm_sink_udmabuf_available (void)
{
  int fd = open ("/dev/udmabuf", O_RDWR | O_CLOEXEC);

  if (fd < 0)
    return FALSE;
  close (fd);
  return TRUE;
}

#if GST_CHECK_VERSION(1, 24, 0)
/* A drm-format the slots can be: a known format, linear. */
static gboolean
drm_format_ok (const gchar * str)
{
  guint64 modifier = 0;
  guint32 fourcc = gst_video_dma_drm_fourcc_from_string (str, &modifier);

  return fourcc != 0 && modifier == MOD_LINEAR
      && gst_video_dma_drm_fourcc_to_format (fourcc) !=
      GST_VIDEO_FORMAT_UNKNOWN;
}

/* Keeps the linear formats of the drm-format field of @s; FALSE when none
 * is left (or there is none: DMA_DRM caps need it). */
static gboolean
filter_drm_formats (GstStructure * s)
{
  const GValue *v = gst_structure_get_value (s, "drm-format");
  GValue list = G_VALUE_INIT;
  guint i, n;

  if (v == NULL)
    return FALSE;
  if (G_VALUE_HOLDS_STRING (v))
    return drm_format_ok (g_value_get_string (v));
  if (!GST_VALUE_HOLDS_LIST (v))
    return FALSE;
  g_value_init (&list, GST_TYPE_LIST);
  n = gst_value_list_get_size (v);
  for (i = 0; i < n; i++) {
    const GValue *e = gst_value_list_get_value (v, i);

    if (G_VALUE_HOLDS_STRING (e) && drm_format_ok (g_value_get_string (e)))
      gst_value_list_append_value (&list, e);
  }
  n = gst_value_list_get_size (&list);
  if (n == 1)
    gst_structure_set_value (s, "drm-format",
        gst_value_list_get_value (&list, 0));
  else if (n > 1)
    gst_structure_set_value (s, "drm-format", &list);
  g_value_unset (&list);
  return n > 0;
}
#endif

/* Whether structure @i of @caps can stay in the answer. */
static gboolean
keep_structure (GstCaps * caps, guint i, gboolean dmabuf)
{
  GstStructure *s = gst_caps_get_structure (caps, i);
  GstCapsFeatures *f = gst_caps_get_features (caps, i);
  const gchar *format = gst_structure_get_string (s, "format");
  gboolean is_dmabuf = f && !gst_caps_features_is_any (f)
      && gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_DMABUF);
  gboolean is_drm = format && strcmp (format, "DMA_DRM") == 0;

  if (!is_dmabuf)
    return !is_drm;             /* DMA_DRM is memory:DMABuf only */
  if (!dmabuf || !gst_structure_has_name (s, "video/x-raw"))
    return FALSE;
  if (!is_drm)
    return TRUE;
#if GST_CHECK_VERSION(1, 24, 0)
  return filter_drm_formats (s);
#else
  return FALSE;
#endif
}

GstCaps *
gst_pinned_shm_sink_get_caps (GstBaseSink * bsink, GstCaps * filter)
{
  gboolean dmabuf;
  GstCaps *caps;
  gint i;

  /* The template is ANY (any stream crosses); an unfiltered query gets
   * that. A filter is answered with what of it the sink takes. */
  if (filter == NULL)
    return gst_pad_get_pad_template_caps (GST_BASE_SINK_PAD (bsink));
  dmabuf = gst_pinned_shm_sink_udmabuf_available ();
  caps = gst_caps_copy (filter);
  for (i = (gint) gst_caps_get_size (caps) - 1; i >= 0; i--) {
    if (!keep_structure (caps, i, dmabuf))
      gst_caps_remove_structure (caps, i);
  }
  GST_LOG_OBJECT (bsink, "udmabuf %s: %" GST_PTR_FORMAT,
      dmabuf ? "there" : "missing", caps);
  return caps;
}

gboolean
gst_pinned_shm_sink_video_info (GstCaps * caps, GstVideoInfo * info)
{
#if GST_CHECK_VERSION(1, 24, 0)
  if (gst_video_is_dma_drm_caps (caps)) {
    GstVideoInfoDmaDrm drm;

    /* a linear drm-format is a plain layout; a tiled one is refused */
    return gst_video_info_dma_drm_from_caps (&drm, caps)
        && drm.drm_modifier == MOD_LINEAR
        && gst_video_info_dma_drm_to_video_info (&drm, info);
  }
#endif
  return gst_video_info_from_caps (info, caps);
}

GstCaps *
gst_pinned_shm_sink_wire_caps (GstCaps * caps, const GstVideoInfo * info)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, 0);
  const gchar *format;
  GstCaps *wire;

  if (f != NULL && !gst_caps_features_is_any (f)
      && (gst_caps_features_contains (f, "memory:PinnedflowCUDA")
          || gst_caps_features_contains (f, "memory:CUDAMemory"))) {
    /* device memory is mapped (downloaded) and copied into the host
     * segments: host frames, whose caps must not say device (pinnedshmsrc
     * would take them for a device stream) */
    wire = gst_caps_copy (caps);
    gst_caps_set_features (wire, 0, NULL);
    return wire;
  }
  if (f == NULL || gst_caps_features_is_any (f)
      || !gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_DMABUF))
    return gst_caps_ref (caps);
  format = gst_structure_get_string (gst_caps_get_structure (caps, 0),
      "format");
  if (info && format && strcmp (format, "DMA_DRM") == 0)
    return gst_video_info_to_caps (info);
  wire = gst_caps_copy (caps);
  gst_caps_set_features (wire, 0, NULL);        /* system memory */
  return wire;
}

/* Copies @size bytes at @offset of dmabuf @fd into @dest, by a read-only
 * mapping of it: 0 or a negative errno (-EBADF: not an open fd, -EINVAL:
 * shorter than its memory claims, or mmap's). */
static int
copy_dmabuf (int fd, gsize offset, gsize size, guint8 * dest)
{
  gsize page = sysconf (_SC_PAGESIZE), start = offset & ~(page - 1);
  struct dma_buf_sync sync = { 0, };
  struct stat st;
  off_t end;
  void *p;

  if (fd < 0 || fstat (fd, &st) < 0)
    return -EBADF;
  /* a mapping past the end of the file would fault (SIGBUS) */
  end = st.st_size;
  if ((guint64) end < (guint64) offset + size) {
    /* a dmabuf says its size to lseek (SEEK_END) */
    end = lseek (fd, 0, SEEK_END);
    if (end < 0)
      return -errno;
    if ((guint64) end < (guint64) offset + size)
      return -EINVAL;
  }
  p = mmap (NULL, offset - start + size, PROT_READ, MAP_SHARED, fd, start);
  if (p == MAP_FAILED)
    return -errno;
  /* cache coherency with the device, where the exporter has it */
  sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ;
  ioctl (fd, DMA_BUF_IOCTL_SYNC, &sync);
  memcpy (dest, (guint8 *) p + (offset - start), size);
  sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
  ioctl (fd, DMA_BUF_IOCTL_SYNC, &sync);
  munmap (p, offset - start + size);
  return 0;
}

gboolean
gst_pinned_shm_sink_copy_buffer (GstPinnedShmSink * self, GstBuffer * buf,
    guint8 * dest, gsize size)
{
  guint i, n = gst_buffer_n_memory (buf);
  gsize done = 0;

  for (i = 0; i < n && done < size; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);
    gsize len = MIN (mem->size, size - done);
    GstMapInfo map;
    int err;

    if (len == 0)
      continue;
    if (gst_is_dmabuf_memory (mem)) {
      int fd = gst_dmabuf_memory_get_fd (mem);

      err = copy_dmabuf (fd, mem->offset, len, dest + done);
      if (err < 0) {
        GST_ELEMENT_ERROR (self, RESOURCE, READ,
            ("Could not read a dmabuf frame"),
            ("memory %u: dmabuf fd %d, %" G_GSIZE_FORMAT " bytes at %"
                G_GSIZE_FORMAT ": %s", i, fd, len, mem->offset,
                g_strerror (-err)));
        return FALSE;
      }
    } else {
      if (!gst_memory_map (mem, &map, GST_MAP_READ)) {
        GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Could not read a frame"),
            ("memory %u (%s) could not be mapped", i,
                mem->allocator ? mem->allocator->mem_type : "?"));
        return FALSE;
      }
      memcpy (dest + done, map.data, MIN (len, map.size));
      gst_memory_unmap (mem, &map);
    }
    done += len;
  }
  return TRUE;
}
