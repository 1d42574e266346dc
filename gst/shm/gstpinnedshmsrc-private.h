/* GStreamer pinnedflow: pinnedshmsrc's insides, shared by its files
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The instance struct of pinnedshmsrc and the functions its files call in
 * one another: the element (gstpinnedshmsrc.c: properties, states,
 * queries), receiving (gstpinnedshmsrcreceive.c: create() and the events
 * it handles), the connection's life (gstpinnedshmconnect.c: probe,
 * connect, disconnect) and its stats and QoS (gstpinnedshmsrcstats.c).
 * Private to the plugin: the public header is gstpinnedshmsrc.h.
 */
#ifndef __GST_PINNED_SHM_SRC_PRIVATE_H__
#define __GST_PINNED_SHM_SRC_PRIVATE_H__

#ifdef GST_PINNED_SHM_CUDA
#include <gst/pinnedcuda/gstpinnedcudamemory.h>
#endif
#include "gstpinnedshmsrc.h"
#include "gstpinnedshmcounter.h"
#include "gstpinnedshmframe.h"
#include "gstpinnedshmframepool.h"

#include <gst/video/video.h>

#include <pinnedflow/pf-consumer.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_pinned_shm_src_debug);

/* see GstPinnedShmSrc.poll_first */
#define POLL_FIRST_PROBE 8
#define POLL_FIRST_LATE_NS (1000 * 1000)

/* Every frame starts with cold caches at paced rates: what create(), the
 * frame helpers and the stats touch per frame comes first, together
 * (issue 13), then what only connections, caps changes, state changes
 * and the stats query use. */
struct _GstPinnedShmSrc
{
  GstPushSrc parent;

  /* ---- per frame ---- */
  /* streaming thread (and start/stop) */
  GstPinnedShmFramePool *pool;  /* recycles our buffers; from start to stop */
  GstAllocator *allocator;
  /* written under lock (below); the streaming thread, its only writer
   * while streaming, reads it without */
  pf_consumer *consumer;
  /* an eventfd, readable between unlock and unlock_stop: every wait of the
   * streaming thread (connecting, the HELLO, the next frame) polls it */
  gint cancel_fd;
  /* property, set under the object lock, read atomically without it */
  guint busy_poll_us;
  /* the last frame came after a wait: wait before the next receive too,
   * instead of a receive that finds nothing (one syscall per frame at
   * paced rates). A frame that came more than POLL_FIRST_LATE_NS after
   * its send had waited in the socket: the next is received first, so a
   * stream that falls behind goes back to receiving without waiting
   * (issue 13: this replaced a receive first every POLL_FIRST_PROBE-th
   * frame, 0.12 recvmsg() per frame answering EAGAIN at paced rates);
   * without a send time from the producer, every POLL_FIRST_PROBE-th
   * frame still receives first (poll_first_probe). */
  gboolean poll_first;
  gboolean poll_first_probe;
  guint poll_first_count;
  /* the last frame's latency (gst_pinned_shm_src_count_frame()), G_MAXUINT64: unknown */
  guint64 last_latency;
  /* the connection's counters may have moved (a gap): gst_pinned_shm_src_update_counters() */
  gboolean counters_dirty;
  gboolean discont;
  gboolean clock_is_monotonic;  /* g_atomic_int: set_clock () vs create */
  /* decided going to PAUSED: a live source (clock-mapped timestamps) or
   * not (the producer's timestamps and segment) */
  gboolean live;
  /* the producer's timestamps and segment kept (not clock-mapped): a
   * non-live source, or a live one fed a non-live stream (its liveness
   * learnt from a STREAM with a segment, after going to PAUSED) */
  gboolean keep_ts;
  /* a live source fed a non-live stream: running time of its first
   * STREAM, added to the segment's base (once per connection) */
  gboolean have_ts_shift;
  GstClockTime ts_shift;
  guint64 last_seq;
  gboolean have_seq;
  gboolean have_pending_ev;
  gboolean have_pending_stream;
  gboolean is_video;
  /* what going to PAUSED read before the STREAM: the latest caps (and
   * see pending_ev below), handled by the first create() */
  gchar *pending_caps;
  /* QoS: gaps not posted yet, when the last message went */
  guint64 qos_pending;
  gint64 qos_last;
  /* stats every frame moves: written by the streaming thread alone (or
   * with it stopped) with relaxed atomic stores, read with relaxed atomic
   * loads, without the lock */
  guint64 frames;
  guint64 bytes;
  guint64 latency_last;
  guint64 latency_sum;
  guint64 latency_max;
  /* the last frame layout checked against vinfo (reset with the caps) */
  GstPinnedShmLayout layout;
  pf_stream_info stream;        /* the producer's last STREAM */
  GstVideoInfo vinfo;

  /* device frames (gstpinnedshmsrcdevice.c); streaming thread, or the
   * state change to PAUSED while it is stopped. device_import: this
   * connection asked for device segments (decided at each connect);
   * out_device: the caps set downstream carry memory:PinnedflowCUDA;
   * device_refused: the connection's refused device segments seen so far;
   * cuda_rt: the runtime (a GstPinnedCudaRuntime), with device_import */
  gboolean device_import;
  gboolean out_device;
  guint32 device_refused;
  gconstpointer cuda_rt;
  gchar *device_why_not;        /* why not device_import, or NULL */
  guint64 device_frames_out;    /* counter (stats), as frames */
  /* memory:CUDAMemory out (gstpinnedshmsrccuda.c, its rules):
   * out_cuda_memory: the device caps set carry it; cuda_ctx: the
   * GstCudaContext; cuda_pool (1.22's copy) for frames of cuda_pool_info;
   * domain_device (g_atomic_int): the device named in the last DOMAIN,
   * -1 none */
  gboolean out_cuda_memory;
  gpointer cuda_ctx;
  GstBufferPool *cuda_pool;
  GstVideoInfo cuda_pool_info;
  gint domain_device;
  guint64 device_copies;        /* counter (stats): 1.22's copies */

  /* ---- the rest ---- */
  /* current caps from the producer, without memory features (out_device
   * says what went downstream) */
  GstCaps *caps;
  gboolean ever_connected;
  /* one event going to PAUSED read after the caps (a FRAME or EOS), and
   * the STREAM */
  pf_event pending_ev;
  pf_stream_info pending_stream;

  /* properties, under the object lock (busy_poll_us: above) */
  gchar *socket_path;
  GstPinnedShmSrcOnDisconnect on_disconnect;
  gint connect_timeout;
  guint64 max_mapped_bytes;
  guint max_mapped_segments;
  gboolean lock_segments;
  GstPinnedShmSrcDelivery delivery;
  GstPinnedShmSrcIsLive is_live;
  GstPinnedShmSrcDeviceFrames device_frames;
  gint cuda_device_id;

  /* lock protects consumer (see above) and these stats */
  GMutex lock;
  guint64 reconnects;
  guint64 errors;
  guint64 gaps;
  guint64 stale_dropped;
  guint64 missed;
  guint delivery_in_force;
  gboolean demoted;
  /* of the current connection, to add the differences to the above */
  guint64 conn_stale, conn_missed;
};

/* gstpinnedshmconnect.c: the connection's life. Waits until @fd (if >= 0)
 * is readable (1), @timeout_ms passed (0) or the element is unlocked
 * (-1). */
G_GNUC_INTERNAL
gint gst_pinned_shm_src_wait_or_cancel (GstPinnedShmSrc * self, gint fd,
    gint timeout_ms);
/* Lets the connection go (frames still out keep it alive). */
G_GNUC_INTERNAL
void gst_pinned_shm_src_drop_connection (GstPinnedShmSrc * self);
/* Drops what going to PAUSED read ahead and create() did not take. */
G_GNUC_INTERNAL
void gst_pinned_shm_src_clear_pending (GstPinnedShmSrc * self);
/* Going to PAUSED: resets the connection state and the stats, decides
 * whether the element is live, asking the producer when it is up. */
G_GNUC_INTERNAL
void gst_pinned_shm_src_probe (GstPinnedShmSrc * self);
/* Connects (streaming thread): GST_FLOW_OK, GST_FLOW_FLUSHING (unlocked)
 * or GST_FLOW_ERROR (error posted). */
G_GNUC_INTERNAL
GstFlowReturn gst_pinned_shm_src_connect (GstPinnedShmSrc * self,
    gint timeout_ms);
/* The connection ended with @res: on-disconnect applied, *@retry set when
 * create() should connect again. */
G_GNUC_INTERNAL
GstFlowReturn gst_pinned_shm_src_handle_disconnect (GstPinnedShmSrc * self,
    gint res, const gchar * why, gboolean * retry);
/* A receive error other than the end of the connection: error posted,
 * connection dropped. */
G_GNUC_INTERNAL
GstFlowReturn gst_pinned_shm_src_receive_error (GstPinnedShmSrc * self,
    pf_consumer * c, gint res);

/* gstpinnedshmsrcreceive.c: the create vfunc. */
G_GNUC_INTERNAL
GstFlowReturn gst_pinned_shm_src_create (GstPushSrc * psrc,
    GstBuffer ** outbuf);

/* gstpinnedshmsrcdevice.c: device frames (memory:PinnedflowCUDA). Each
 * connect: decides whether to ask for device segments (sets the flag in
 * @options; device-frames, CUDA, downstream), and once connected makes @c
 * import them (FALSE: error posted). */
G_GNUC_INTERNAL
void gst_pinned_shm_src_device_options (GstPinnedShmSrc * self,
    pf_consumer_options * options);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_device_enable (GstPinnedShmSrc * self,
    pf_consumer * c);
/* Strips memory features from @caps (writable): TRUE when one said device
 * memory (memory:PinnedflowCUDA or memory:CUDAMemory). */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_device_strip (GstCaps * caps);
/* @caps (no memory feature) with the device memory feature downstream
 * takes (gst_pinned_shm_src_cuda_choose_caps()), transfer full. */
G_GNUC_INTERNAL
GstCaps *gst_pinned_shm_src_device_caps (GstPinnedShmSrc * self,
    GstCaps * caps);
/* A device stream that cannot come here: posts why (not-negotiated) and
 * returns GST_FLOW_NOT_NEGOTIATED; GST_FLOW_OK when it can. */
G_GNUC_INTERNAL
GstFlowReturn gst_pinned_shm_src_device_check (GstPinnedShmSrc * self,
    pf_consumer * c);
/* @ev's device frame as a buffer of one read-only pinnedflow CUDA memory
 * over the producer's device segment (no copy), released when it is
 * freed; FALSE with *@why (transfer full) when it cannot be wrapped. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_device_wrap (GstPinnedShmSrc * self,
    pf_consumer * c, const pf_event * ev, GstBuffer ** out, guint64 * total,
    gchar ** why);

/* gstpinnedshmsrccuda.c (built with CUDA only): the device caps to set
 * for @base (memory:PinnedflowCUDA, else memory:CUDAMemory, whichever
 * downstream takes first; sets out_cuda_memory); the GstCudaContext for
 * memory:CUDAMemory (FALSE: error posted); context set and query; the
 * DOMAIN of the connection (FALSE: error posted); the state dropped at
 * stop and finalize; the frame at @data as memory:CUDAMemory (wrapped
 * 1.24+, copied 1.22; takes @loan, freed by @loan_free once the frame
 * can go back; FALSE with *@why, transfer full). */
G_GNUC_INTERNAL
GstCaps *gst_pinned_shm_src_cuda_choose_caps (GstPinnedShmSrc * self,
    GstCaps * base);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_cuda_ensure (GstPinnedShmSrc * self);
G_GNUC_INTERNAL
void gst_pinned_shm_src_cuda_set_context (GstPinnedShmSrc * self,
    GstContext * context);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_cuda_query (GstPinnedShmSrc * self,
    GstQuery * query);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_cuda_set_domain (GstPinnedShmSrc * self,
    pf_consumer * c);
G_GNUC_INTERNAL
void gst_pinned_shm_src_cuda_stop (GstPinnedShmSrc * self);
G_GNUC_INTERNAL
void gst_pinned_shm_src_cuda_finalize (GstPinnedShmSrc * self);
#ifdef GST_PINNED_SHM_CUDA
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_cuda_out (GstPinnedShmSrc * self, gint ordinal,
    const GstPinnedCudaLayout * layout, guint8 * data, gsize pitch,
    gpointer loan, GDestroyNotify loan_free, GstBuffer ** out, gchar ** why);
#endif

/* gstpinnedshmsrcstats.c: the stats property's structure, the counters
 * (reset going to PAUSED; per frame; the connection's) and QoS. */
G_GNUC_INTERNAL
GstStructure *gst_pinned_shm_src_get_stats (GstPinnedShmSrc * self);
G_GNUC_INTERNAL
void gst_pinned_shm_src_reset_stats (GstPinnedShmSrc * self);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_src_note_sequence (GstPinnedShmSrc * self,
    const pf_consumer_frame * f, GstBuffer * buf);
G_GNUC_INTERNAL
void gst_pinned_shm_src_count_frame (GstPinnedShmSrc * self,
    const pf_consumer_frame * f, guint64 total);
G_GNUC_INTERNAL
void gst_pinned_shm_src_post_qos (GstPinnedShmSrc * self, GstBuffer * buf,
    gboolean flush);
G_GNUC_INTERNAL
void gst_pinned_shm_src_update_counters (GstPinnedShmSrc * self,
    pf_consumer * c);

G_END_DECLS
#endif /* __GST_PINNED_SHM_SRC_PRIVATE_H__ */
