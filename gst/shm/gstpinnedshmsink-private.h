/* GStreamer pinnedflow: pinnedshmsink's insides, shared by its files
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The instance struct of pinnedshmsink and the functions its files call
 * in one another: the element (gstpinnedshmsink.c: properties, states,
 * events, signals), its pools (gstpinnedshmsinkpool.c), publishing a frame
 * (gstpinnedshmsinkrender.c), the producer's callbacks
 * (gstpinnedshmsinkbus.c), its stats (gstpinnedshmsinkstats.c) and its
 * memory:DMABuf caps and dmabuf reads (gstpinnedshmsinkdmabuf.c). Private to
 * the plugin: the public header is gstpinnedshmsink.h.
 *
 * Lock order, outermost first: a thread that holds one lock takes only
 * locks further down this list, never one above it.
 *  0. self->cuda_ensure_lock (gstpinnedshmsinkcuda.c): one look-up of the
 *     pipeline's GstCudaContext at a time, in propose_allocation (upstream's
 *     streaming thread, none of 1-4 held). Under it libgstcuda's own lock
 *     (gst_cuda_ensure_element_context ()), context queries to the peers,
 *     NEED_CONTEXT/HAVE_CONTEXT posted (an application's sync handler may
 *     run there) and set_context () on this thread, which takes 5.
 *  1. The base class's preroll lock (GST_BASE_SINK_PREROLL_LOCK), held by
 *     render (gstpinnedshmsinkrender.c) while it takes 3 to wait for a
 *     client. unlock() runs without it and takes 3 to wake that render.
 *  2. The object lock (GST_OBJECT_LOCK): the properties. set_property
 *     holds it across its whole switch, and inside it takes
 *       3 for reliable-timeout, reliable-timeout-action and live-max-lag
 *         (to pass them to the producer, which takes 4),
 *       3 for wait-for-connection and min-clients (to wake a render
 *         waiting in wait_for_client ()).
 *     start() and gst_pinned_shm_sink_check_pool_fits () take it alone.
 *  3. self->lock (with self->cond): the state below it in the struct.
 *     Under it: the producer's calls that take 4 (set_reliable_timeout,
 *     set_live_max_lag, set_live, set_segment, set_caps, send_eos,
 *     set_flushing) and the copy pool's own lock
 *     (gst_buffer_pool_set_flushing () in unlock() and
 *     gst_pinned_shm_sink_set_copy_pool ()).
 *  4. The producer's lock (inside libpinnedflow, pf-producer.c), and the
 *     copy pool's.
 *  5. self->cuda_lock: cuda_ctx and cuda_ensure_{thread,slot}. A leaf,
 *     taken by set_context () (any thread), the CONTEXT query (any
 *     thread), stop () and the look-up under 0: nothing is called under it
 *     but gst_cuda_handle_set_context () (which only parses the context)
 *     and g_object_ref (); references are dropped after it is released.
 * Nothing takes them the other way round: the producer runs its callbacks
 * (gstpinnedshmsinkbus.c) with its lock released, and they take 3 alone,
 * posting their messages and warnings outside it; nothing takes 2 while it
 * holds 3. pf_producer_close () is never called with 3 held (stop(): its
 * callbacks take 3).
 */
#ifndef __GST_PINNED_SHM_SINK_PRIVATE_H__
#define __GST_PINNED_SHM_SINK_PRIVATE_H__

#include "gstpinnedshmsink.h"
#include "gstpinnedshmcounter.h"

#include <gst/video/video.h>

#include <pinnedflow/pf-producer.h>
#ifdef GST_PINNED_SHM_CUDA
#include <gst/pinnedcuda/gstpinnedcudaloader.h>
#endif

G_BEGIN_DECLS GST_DEBUG_CATEGORY_EXTERN (gst_pinned_shm_sink_debug);

#define MAX_POOL_SIZE 256
/* Pool slots beyond what the consumers may hold: one upstream fills while
 * one is published. */
#define POOL_RESERVE 2
/* max-clients=0 (no limit) sizes an auto pool as if for this many */
#define UNLIMITED_POOL_CLIENTS 4

/* gstpinnedshmsinkslots.c: a device segment cut into slots (refcounted;
 * lock guards busy, cond is signalled when a slot is freed), and a token
 * holding one slot and a reference. */
#define GST_PINNED_SHM_SINK_MAX_SLOTS 64
typedef struct _GstPinnedShmSinkDevice GstPinnedShmSinkDevice;
typedef struct _GstPinnedShmSinkDomains GstPinnedShmSinkDomains;

struct _GstPinnedShmSinkDevice
{
  gint refcount;
  GMutex lock;
  GCond cond;
  pf_segment *seg;
  guint64 base;                 /* device address of the segment */
  gsize frame_size, slot_size;
  guint n_slots;
  guint64 busy;                 /* bit per slot, under lock */
  gint device;
};

typedef struct
{
  GstPinnedShmSinkDevice *pool;
  guint slot;
} GstPinnedShmSinkSlotToken;

/* Slots for frames of @frame_size bytes on @device (2 to MAX_SLOTS), or
 * NULL (*@why). */
G_GNUC_INTERNAL
GstPinnedShmSinkDevice *gst_pinned_shm_sink_slots_new (gint device,
    gsize frame_size, guint n_slots, gchar ** why);
G_GNUC_INTERNAL
void gst_pinned_shm_sink_slots_unref (GstPinnedShmSinkDevice * pool);
/* A free slot marked busy, or -1 (lock held). */
G_GNUC_INTERNAL
gint gst_pinned_shm_sink_slots_take_locked (GstPinnedShmSinkDevice * pool);
/* Frees the token's slot (signals cond) and drops its reference. */
G_GNUC_INTERNAL
void gst_pinned_shm_sink_slot_token_free (gpointer token);

struct _GstPinnedShmSink
{
  GstBaseSink parent;

  /* properties, under the object lock */
  gchar *socket_path;
  guint perms;
  guint pool_size;
  guint max_client_buffers;
  guint max_clients;
  gint reliable_timeout;
  GstPinnedShmSinkTimeoutAction reliable_timeout_action;
  gint live_max_lag;

  /* lock protects everything below; cond wakes a render waiting for a
   * client. Never held across pf_producer_close() (its callbacks take it).
   * producer is set by start() and cleared by stop(), when no render runs
   * (the sink pad is inactive in READY): render reads it without the lock.
   * n_clients is also read without it (atomically): a render that finds a
   * client takes no lock (issue 13). */
  GMutex lock;
  GCond cond;
  pf_producer *producer;
  gboolean wait_for_connection;
  guint min_clients;            /* the first frame waits for this many */
  gboolean unlocked;
  guint n_clients;
  /* streaming thread only: the first frame since start() went out (later
   * frames wait for one client, not min_clients) */
  gboolean first_sent;

  /* streaming thread only; what render reads every frame first, with the
   * counters it updates (each frame starts with cold caches) */
  gboolean is_video;
  gboolean clock_is_monotonic;  /* g_atomic_int: set_clock () vs render */
  /* gst_base_sink_get_latency(), cached by start() and at each LATENCY
   * event (the only thing that changes it): COUNTER_GET/SET */
  guint64 latency;
  guint64 lock_checked_segment; /* id of the last segment checked for mlock */
  gboolean lock_warned;
  gboolean live;                /* upstream's, as last queried */

  /* statistics: written by the streaming thread alone (COUNTER_ADD), read
   * by any (COUNTER_GET), no lock; released by the producer's callbacks
   * (one thread at a time: its I/O thread, then close()'s caller). in-flight
   * is published - released. Reset by start(). */
  guint64 frames;
  guint64 bytes;
  guint64 zero_copy_frames;
  guint64 copies;
  guint64 drops;
  guint64 published;
  guint64 released;

  /* streaming thread only: the caps (read per frame only for a buffer
   * without video meta) and the copy path */
  GstVideoInfo vinfo;
  GstBufferPool *copy_pool;
  gsize copy_pool_size;
  /* streaming thread only: memory:PinnedflowCUDA input published as
   * device frames (gstpinnedshmsinkdevice.c), and its slots (NULL until
   * the first such frame); device_copies counts as the stats above */
  gboolean device_mode;
  GstPinnedShmSinkDevice *device;
  guint64 device_copies;
  /* streaming thread only: device_mode's input is memory:CUDAMemory
   * (gstpinnedshmsinkcuda.c), not memory:PinnedflowCUDA */
  gboolean cuda_memory_input;
  /* under cuda_lock (5 above): the pipeline's GstCudaContext (set by
   * set_context in any thread, or found at propose_allocation in
   * upstream's streaming thread; dropped by stop()), and while a look-up
   * runs (under cuda_ensure_lock, 0 above) its thread and the slot that
   * set_context fills on that thread */
  GMutex cuda_ensure_lock;
  GMutex cuda_lock;
  GObject *cuda_ctx;
  GThread *cuda_ensure_thread;
  GObject **cuda_ensure_slot;

  /* copies per domain (gstpinnedshmsinkdomains.c): the property
   * (g_atomic_int: set under the object lock, read by render) and the
   * copier's state (its own lock; made by init, freed by finalize) */
  gboolean domains;
  GstPinnedShmSinkDomains *dom;
  /* under lock (the client-event callback, any thread) */
  guint64 demotions;
  guint64 refused;
};

/* gstpinnedshmsinkdevice.c: device frames. set_caps: TRUE when @caps
 * (memory:PinnedflowCUDA video) will be published as device frames (the
 * wire caps keep the feature); FALSE: host frames. render, in device mode:
 * one device-to-device copy of @buf into a device segment slot, @frame's
 * chunk and @segs set; returns the token to publish with (its last unref
 * frees the slot), or NULL with *@ret (an error posted, or FLUSHING). */
G_GNUC_INTERNAL
    gboolean gst_pinned_shm_sink_device_set_caps (GstPinnedShmSink * self,
    GstCaps * caps);
G_GNUC_INTERNAL
    GstBuffer * gst_pinned_shm_sink_device_copy (GstPinnedShmSink * self,
    GstBuffer * buf, pf_producer_frame * frame, pf_segment ** segs,
    GstFlowReturn * ret);
G_GNUC_INTERNAL
void gst_pinned_shm_sink_device_stop (GstPinnedShmSink * self);
/* gstpinnedshmsinkcudapool.c: ALLOCATION for memory:PinnedflowCUDA in
 * device mode: a pool of buffers that are slots of a device segment
 * (pinnedcudaupload writes into them); FALSE: none proposed. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_device_propose (GstPinnedShmSink * self,
    GstQuery * query, GstCaps * caps, const GstVideoInfo * info, guint count);
/* render, device mode: a buffer of that pool published from its slot once
 * upstream's copy into it is complete (its event), with no copy, @frame's
 * chunk and @segs set, the token returned (a reference to @buf); NULL:
 * not such a buffer (*@ret GST_FLOW_OK), or an error posted. */
G_GNUC_INTERNAL
GstBuffer *gst_pinned_shm_sink_device_publish_slot (GstPinnedShmSink * self,
    GstBuffer * buf, pf_producer_frame * frame, pf_segment ** segs,
    GstFlowReturn * ret);

/* gstpinnedshmsinkcuda.c: memory:CUDAMemory input. usable: libgstcuda
 * loaded. frame_map: @buf's one GstCudaMemory mapped for its device
 * pointer, its planes (video meta, else the memory's layout) checked to
 * fit it, into @f (FALSE: an element error posted); frame_copy: one
 * device-to-device copy per plane into the device address @dst, at the
 * same offsets and strides, synchronised (FALSE: error posted);
 * frame_unmap: undoes frame_map (again: nothing). export (1.24+): a
 * buffer of libgstcuda virtual memory published with no copy: @frame's
 * chunk and @segs set, the token returned (a reference to @buf); NULL:
 * not such memory, copy it. propose: adds a virtual-memory
 * GstCudaBufferPool to @query (FALSE: none here). set_context, query
 * (a CONTEXT query answered), stop: the GstCudaContext. */
typedef struct
{
  GstMemory *mem;
  GstMapInfo map;
  gpointer ctx, cu_ctx;
  gint device;
  guint n_planes;
  gsize offset[GST_VIDEO_MAX_PLANES], width[GST_VIDEO_MAX_PLANES];
  gint stride[GST_VIDEO_MAX_PLANES];
  guint rows[GST_VIDEO_MAX_PLANES];
  gsize size;
} GstPinnedShmSinkCudaFrame;

G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_usable (void);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_frame_map (GstPinnedShmSink * self,
    GstBuffer * buf, GstPinnedShmSinkCudaFrame * f);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_frame_copy (GstPinnedShmSink * self,
    GstPinnedShmSinkCudaFrame * f, guint64 dst);
G_GNUC_INTERNAL
void gst_pinned_shm_sink_cuda_frame_unmap (GstPinnedShmSinkCudaFrame * f);
G_GNUC_INTERNAL
GstBuffer *gst_pinned_shm_sink_cuda_export (GstPinnedShmSink * self,
    GstBuffer * buf, pf_producer_frame * frame, pf_segment ** segs);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_propose (GstPinnedShmSink * self,
    GstQuery * query, GstCaps * caps, const GstVideoInfo * info, guint count);
G_GNUC_INTERNAL
void gst_pinned_shm_sink_cuda_set_context (GstPinnedShmSink * self,
    GstContext * context);
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_query (GstPinnedShmSink * self,
    GstQuery * query);
G_GNUC_INTERNAL
void gst_pinned_shm_sink_cuda_stop (GstPinnedShmSink * self);
/* The pipeline's GstCudaContext (found or made, kept in cuda_ctx: a new
 * reference in *@gst_ctx, the caller's to drop), its CUcontext and device;
 * FALSE without libgstcuda. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_cuda_context (GstPinnedShmSink * self,
    gpointer * gst_ctx, gpointer * cu_ctx, gint * device);

/* gstpinnedshmsinkdomains.c: copies per memory domain. publish: render's
 * pf_producer_publish () with the frame's variants in the domains its
 * consumers want (same return; @token as pf_producer_publish () takes
 * it); add_stats: the copies into the stats structure; stop: after the
 * producer was closed. */
G_GNUC_INTERNAL void gst_pinned_shm_sink_domains_init (GstPinnedShmSink * self);
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_domains_finalize (GstPinnedShmSink * self);
G_GNUC_INTERNAL void gst_pinned_shm_sink_domains_stop (GstPinnedShmSink * self);
G_GNUC_INTERNAL
    int gst_pinned_shm_sink_domains_publish (GstPinnedShmSink * self,
    pf_producer * producer, pf_producer_frame * frame, pf_segment ** segs,
    GstBuffer * token);
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_domains_add_stats (GstPinnedShmSink * self,
    GstStructure * s);
/* gstpinnedshmsinkbus.c: the producer's callbacks of @self (frames
 * released, clients connected and gone, drops, demotions, refusals) into
 * @callbacks. */
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_set_callbacks (GstPinnedShmSink * self,
    pf_producer_callbacks * callbacks);

/* gstpinnedshmsinkpool.c: the pools' slots (object lock held), the warning
 * when they cannot serve every consumer, the copy pool, the ALLOCATION
 * answer, the copy path and the mlock check. */
G_GNUC_INTERNAL
    guint gst_pinned_shm_sink_pool_count_locked (GstPinnedShmSink * self);
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_check_pool_fits (GstPinnedShmSink * self);
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_set_copy_pool (GstPinnedShmSink * self,
    GstBufferPool * pool);
G_GNUC_INTERNAL
    gboolean gst_pinned_shm_sink_propose_allocation (GstBaseSink * bsink,
    GstQuery * query);
G_GNUC_INTERNAL
    GstBuffer * gst_pinned_shm_sink_copy_to_pool (GstPinnedShmSink * self,
    GstBuffer * buf, GstFlowReturn * ret);
G_GNUC_INTERNAL
    void gst_pinned_shm_sink_check_locked (GstPinnedShmSink * self,
    pf_segment * seg);

/* gstpinnedshmsinkdmabuf.c: memory:DMABuf caps (offered where
 * /dev/udmabuf opens), the caps consumers get for them, the video info of
 * (DMA_DRM) caps and the copy of a buffer (foreign dmabufs mapped
 * read-only) into @dest: FALSE with an element error posted. */
G_GNUC_INTERNAL gboolean gst_pinned_shm_sink_udmabuf_available (void);
G_GNUC_INTERNAL
    GstCaps * gst_pinned_shm_sink_get_caps (GstBaseSink * bsink,
    GstCaps * filter);
G_GNUC_INTERNAL gboolean gst_pinned_shm_sink_video_info (GstCaps * caps,
    GstVideoInfo * info);
G_GNUC_INTERNAL GstCaps *gst_pinned_shm_sink_wire_caps (GstCaps * caps,
    const GstVideoInfo * info);
G_GNUC_INTERNAL gboolean gst_pinned_shm_sink_copy_buffer (GstPinnedShmSink *
    self, GstBuffer * buf, guint8 * dest, gsize size);

#ifdef GST_PINNED_SHM_CUDA
/* gstpinnedshmsinkslots.c: the end of a device-to-device copy into a
 * slot made in the context gst_pinned_cuda_context_push_enter () made
 * current (@prev, @device): synchronised when @err is still success (then
 * @call is "cudaStreamSynchronize"), the context left, the thread's error
 * slot cleared and an element error naming @call posted on failure. */
G_GNUC_INTERNAL
gboolean gst_pinned_shm_sink_device_copy_finish (GstPinnedShmSink * self,
    const GstPinnedCudaRuntime * rt, gint device, int prev,
    GstPinnedCudaError err, const gchar * call);
#endif

/* gstpinnedshmsinkrender.c: the render vfunc. */
G_GNUC_INTERNAL
    GstFlowReturn gst_pinned_shm_sink_render (GstBaseSink * bsink,
    GstBuffer * buf);

/* gstpinnedshmsinkstats.c: the stats property's structure. */
G_GNUC_INTERNAL
    GstStructure * gst_pinned_shm_sink_get_stats (GstPinnedShmSink * self);

G_END_DECLS
#endif /* __GST_PINNED_SHM_SINK_PRIVATE_H__ */
