/* GStreamer pinnedflow: pinnedshmsink's copies per memory domain
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The `domains` property (docs/elements.md; docs/cuda.md "One copy per
 * domain"): render publishes each frame through
 * gst_pinned_shm_sink_domains_publish (), which makes it available once in
 * each memory domain a connected consumer wants, with the producer-side
 * copier of libpinnedflow (pf-domains.h):
 * - a host stream whose consumers named device D (a DOMAIN message,
 *   pf_consumer_set_domain()): one upload per frame into a device pool on
 *   D, published as the frame's device variant; every consumer of D
 *   shares it, the others get the host frame;
 * - a device stream (memory:PinnedflowCUDA input, gstpinnedshmsinkdevice.c)
 *   with consumers in the host domain (those that did not ask for device
 *   segments or named another device; one that asked and named none takes
 *   the device frame, as before): one download per frame
 *   into a pinned host pool, published as the host variant (without it
 *   they get nothing: they skip device frames); with consumers that named
 *   another device of this process, one peer copy per frame into a device
 *   pool there (cuMemcpyPeer), published as that device's variant.
 * Nothing is copied into a domain nobody asked for. The copier is made at
 * the first frame that needs it, so a sink whose consumers never name a
 * device never loads CUDA; where CUDA is not usable here (no driver, cuInit
 * fails, the device is not in this process) the sink publishes as before,
 * logged once, never an error. domains=false: as before, always.
 *
 * Threads and lifetimes: publish runs on the streaming thread; the
 * copier (Holder, refcounted) is held by the sink (from its first use to
 * stop()) and by each variant's token (a GstBuffer the producer unrefs
 * when the consumers of that variant released it, on its I/O thread or in
 * pf_producer_close()), so it is freed after its last slot came back.
 * Dom.lock guards Dom.holder only (a leaf: the stats take a reference
 * under it and read the copier after dropping it); Dom.unavailable is the
 * streaming thread's (reset by stop()).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstpinnedshmsink-private.h"

#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-domains.h>

#include <errno.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_pinned_shm_sink_debug

/* Slots of a copier's pools per ... (pf_domains doubles it) */
#define DOMAIN_SLOTS 4
#define SLOT_ALIGN 4096

typedef struct
{
  gint refcount;
  pf_domains *ds;
  guint64 stride;
  gboolean device;              /* made for a device stream */
  guint8 home_uuid[16];         /* its device (device streams) */
} Holder;

struct _GstPinnedShmSinkDomains
{
  GMutex lock;
  Holder *holder;
  gboolean unavailable;
};

typedef struct
{
  Holder *holder;
  void *token;
} VariantToken;

static void
holder_unref (Holder * h)
{
  if (h == NULL || !g_atomic_int_dec_and_test (&h->refcount))
    return;
  pf_domains_free (h->ds);
  g_free (h);
}

static GQuark
variant_quark (void)
{
  return g_quark_from_static_string ("pinnedshmsink-domain-variant");
}

static void
variant_token_free (gpointer data)
{
  VariantToken *t = data;

  pf_domains_release (t->holder->ds, t->token);
  holder_unref (t->holder);
  g_free (t);
}

/* The token of a variant the copier made: its last unref gives the slot
 * back. */
static GstBuffer *
variant_token (Holder * h, void *token)
{
  VariantToken *t = g_new (VariantToken, 1);
  GstBuffer *b = gst_buffer_new ();

  g_atomic_int_inc (&h->refcount);
  t->holder = h;
  t->token = token;
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (b), variant_quark (), t,
      variant_token_free);
  return b;
}

void
gst_pinned_shm_sink_domains_init (GstPinnedShmSink * self)
{
  self->dom = g_new0 (GstPinnedShmSinkDomains, 1);
  g_mutex_init (&self->dom->lock);
  self->domains = TRUE;
}

void
gst_pinned_shm_sink_domains_stop (GstPinnedShmSink * self)
{
  Holder *h;

  g_mutex_lock (&self->dom->lock);
  h = self->dom->holder;
  self->dom->holder = NULL;
  g_mutex_unlock (&self->dom->lock);
  /* the copier goes with the last of its tokens (the producer is closed:
   * none is out now) */
  holder_unref (h);
  self->dom->unavailable = FALSE;
}

void
gst_pinned_shm_sink_domains_finalize (GstPinnedShmSink * self)
{
  gst_pinned_shm_sink_domains_stop (self);
  g_mutex_clear (&self->dom->lock);
  g_free (self->dom);
  self->dom = NULL;
}

/* The copier for frames of @size bytes (@home: the device stream's
 * segment, NULL for a host stream), made or remade when the one there
 * does not fit; NULL where CUDA is not usable here. Streaming thread. */
static Holder *
get_holder (GstPinnedShmSink * self, gsize size, pf_segment * home)
{
  GstPinnedShmSinkDomains *dom = self->dom;
  const pf_segment_device *hd = home ? pf_segment_get_device (home) : NULL;
  Holder *h = dom->holder, *old;
  guint64 stride = ((guint64) size + SLOT_ALIGN - 1) & ~(guint64) (SLOT_ALIGN
      - 1);
  pf_domains *ds = NULL;
  int res;

  if (h != NULL && h->stride >= size && h->device == (home != NULL) &&
      (hd == NULL || memcmp (h->home_uuid, hd->uuid, 16) == 0))
    return h;
  if (dom->unavailable || (home != NULL && hd == NULL))
    return NULL;
  res = pf_domains_new (stride, DOMAIN_SLOTS, home, &ds);
  if (res < 0) {
    /* not an error: the consumers get what they got before */
    GST_INFO_OBJECT (self, "no copies per domain in this process: %s",
        res == -ENOENT ? "no CUDA driver" : res == -ENODEV ?
        "cuInit failed or the device is not here" : g_strerror (-res));
    dom->unavailable = TRUE;
    return NULL;
  }
  h = g_new0 (Holder, 1);
  h->refcount = 1;
  h->ds = ds;
  h->stride = stride;
  h->device = home != NULL;
  if (hd != NULL)
    memcpy (h->home_uuid, hd->uuid, 16);
  GST_DEBUG_OBJECT (self, "copies per domain for %s frames of up to %"
      G_GUINT64_FORMAT " bytes", home ? "device" : "host", stride);
  g_mutex_lock (&dom->lock);
  old = dom->holder;
  dom->holder = h;
  g_mutex_unlock (&dom->lock);
  holder_unref (old);           /* freed once its tokens are back */
  return h;
}

/* Publishes @v (@n variants; @v[@mine].token is render's @token, the
 * others ours): the variants nobody got are released here, render's token
 * too when others were sent (render unrefs it only when nothing was). */
static int
publish_variants (pf_producer * producer, pf_producer_variant * v,
    unsigned int n, unsigned int mine)
{
  int sent[PF_PRODUCER_MAX_VARIANTS];
  unsigned int i;
  int res;

  /* consumers of device segments that named no domain (pinnedshmsrc
   * device-frames before it sends a DOMAIN): the device frame of a device
   * stream, as before; the host frame of a host stream, as before */
  res = pf_producer_publish_domains_full (producer, v, n, mine, sent);
  for (i = 0; i < n; i++) {
    if (i == mine) {
      if (res > 0 && sent[i] == 0)
        gst_buffer_unref (GST_BUFFER_CAST (v[i].token));
    } else if (res < 0 || sent[i] == 0) {
      gst_buffer_unref (GST_BUFFER_CAST (v[i].token));
    }
  }
  return res;
}

int
gst_pinned_shm_sink_domains_publish (GstPinnedShmSink * self,
    pf_producer * producer, pf_producer_frame * frame, pf_segment ** segs,
    GstBuffer * token)
{
  pf_producer_frame frames[PF_PRODUCER_MAX_VARIANTS];
  pf_segment *vsegs[PF_PRODUCER_MAX_VARIANTS];
  void *tokens[PF_PRODUCER_MAX_VARIANTS];
  pf_producer_variant v[PF_PRODUCER_MAX_VARIANTS];
  gsize size = frame->chunks[0].size;
  const guint8 *bytes;
  unsigned int n, i;
  Holder *h;

  if (!g_atomic_int_get (&self->domains) || frame->n_chunks != 1)
    return pf_producer_publish (producer, frame, segs, token);

  if (self->device_mode) {
    unsigned int n_host = 0, k;

    /* a device stream: its host variant first, when someone wants it,
     * then the frame, then its copies on other devices */
    if (pf_segment_get_device (segs[0]) == NULL ||
        pf_producer_get_n_clients (producer) == 0 ||
        (h = get_holder (self, size, segs[0])) == NULL ||
        (n = pf_domains_copy_device (h->ds, producer, frame,
                pf_device_segment_get_ptr (segs[0]) +
                frame->chunks[0].offset, frames, vsegs, tokens,
                PF_PRODUCER_MAX_VARIANTS - 1, &n_host)) == 0)
      return pf_producer_publish (producer, frame, segs, token);
    for (i = 0; i <= n; i++) {
      k = i < n_host ? i : i - 1;
      v[i].frame = i == n_host ? frame : &frames[k];
      v[i].segments = i == n_host ? segs : &vsegs[k];
      v[i].token = i == n_host ? (void *) token : variant_token (h, tokens[k]);
    }
    return publish_variants (producer, v, n + 1, n_host);
  }

  /* a host stream: a device variant per device its consumers named */
  bytes = pf_segment_get_base (segs[0]);
  if (bytes == NULL || pf_producer_get_device_domains (producer, NULL, 0) == 0
      || (h = get_holder (self, size, NULL)) == NULL)
    return pf_producer_publish (producer, frame, segs, token);
  n = pf_domains_upload (h->ds, producer, frame,
      bytes + frame->chunks[0].offset, frames + 1, vsegs + 1, tokens + 1,
      PF_PRODUCER_MAX_VARIANTS - 1);
  if (n == 0)
    return pf_producer_publish (producer, frame, segs, token);
  v[0].frame = frame;
  v[0].segments = segs;
  v[0].token = token;
  for (i = 1; i <= n; i++) {
    v[i].frame = &frames[i];
    v[i].segments = &vsegs[i];
    v[i].token = variant_token (h, tokens[i]);
  }
  return publish_variants (producer, v, n + 1, 0);
}

void
gst_pinned_shm_sink_domains_add_stats (GstPinnedShmSink * self,
    GstStructure * s)
{
  pf_node_domain_stats st;
  GValue arr = G_VALUE_INIT;
  pf_producer *producer = NULL;
  guint wanted = 0;
  Holder *h;
  guint i;

  /* the devices the connected consumers named */
  g_mutex_lock (&self->lock);
  if (self->producer)
    producer = pf_producer_ref (self->producer);
  g_mutex_unlock (&self->lock);
  if (producer != NULL) {
    wanted = pf_producer_get_device_domains (producer, NULL, 0);
    pf_producer_unref (producer);
  }
  g_mutex_lock (&self->dom->lock);
  h = self->dom->holder;
  if (h != NULL)
    g_atomic_int_inc (&h->refcount);
  g_mutex_unlock (&self->dom->lock);
  memset (&st, 0, sizeof (st));
  if (h != NULL) {
    pf_domains_get_stats (h->ds, &st);
    holder_unref (h);
  }
  g_value_init (&arr, GST_TYPE_ARRAY);
  for (i = 0; i < st.n_domains; i++) {
    const pf_node_domain_info *d = &st.domain[i];
    GValue v = G_VALUE_INIT;
    gchar uuid[33];
    guint k;

    for (k = 0; k < 16; k++)
      g_snprintf (uuid + 2 * k, 3, "%02x", d->uuid[k]);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v, gst_structure_new ("domain",
            "uuid", G_TYPE_STRING, uuid,
            "ordinal", G_TYPE_INT, d->ordinal,
            "slots", G_TYPE_UINT, d->n_slots,
            "free-slots", G_TYPE_UINT, d->free_slots,
            "uploads", G_TYPE_UINT64, d->uploads,
            "bytes", G_TYPE_UINT64, d->bytes,
            "device-bytes", G_TYPE_UINT64, d->device_bytes,
            "no-slot", G_TYPE_UINT64, d->no_slot,
            "peer-copies", G_TYPE_UINT64, d->peer_copies,
            "waits", G_TYPE_UINT64, d->waits, NULL));
    gst_value_array_append_and_take_value (&arr, &v);
  }
  gst_structure_set (s,
      "domains-wanted", G_TYPE_UINT, wanted,
      "domain-frames", G_TYPE_UINT64, st.frames,
      "domain-uploads", G_TYPE_UINT64, st.uploads,
      "domain-unreachable", G_TYPE_UINT64, st.unreachable,
      "domain-downloads", G_TYPE_UINT64, st.downloads,
      "domain-peer-copies", G_TYPE_UINT64, st.peer_copies,
      "domain-download-bytes", G_TYPE_UINT64, st.download_bytes,
      "domain-host-no-slot", G_TYPE_UINT64, st.host_no_slot,
      "domain-host-bytes", G_TYPE_UINT64, st.host_bytes,
      "domain-device-bytes", G_TYPE_UINT64, st.device_bytes, NULL);
  gst_structure_take_value (s, "domains", &arr);
}
