/* pinnedflow: dataflow-node API (loaned frames, simple consume), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A thin layer over pf_producer / pf_consumer for nodes of a dataflow
 * framework (dora, ROS-like graphs, plain programs): no GStreamer, no GLib.
 *
 * Producer side: a bounded pool of N slots in ONE pinned, write-sealed
 * segment. Loan a slot, fill it, publish it with caps and timestamps. A slot
 * comes back only when every consumer that received it released it (or went
 * away), so a frame is never overwritten while someone reads it. When every
 * slot is out, loaning waits up to a timeout and then fails with -ETIMEDOUT.
 *
 * Consumer side: connect (waiting for a producer not up yet), receive frames
 * as read-only pointers into the producer's segment, release them. The
 * socket fd can be polled by any event loop; pf_node_consumer_next() also
 * blocks with a timeout.
 *
 * Every frame exposes its segment (base, size, fd, process-local id), so a
 * CUDA node can register the whole segment once (see pf_segment_attach_once)
 * and DMA from it.
 *
 * Errors are negative errno values; pf_node_strerror() and the *_get_error()
 * functions say what happened. Nothing here re-implements the transport:
 * limits per client, dead-client reclaim and validation of every message and
 * fd come from pf_producer and pf_consumer.
 *
 * Lifecycle: pf_node_producer and pf_node_consumer are plain owned objects
 * (_new/_free); a pf_node_frame is given back with pf_node_frame_release().
 *
 * This header is the one to include for the whole node API; it pulls in
 * <pinnedflow/pf-video-layout.h> (plane layout, pf-video-layout.c) and
 * <pinnedflow/pf-caps.h> (caps text, pf-caps.c). The producer lives in
 * pf-node-producer.c, the consumer in pf-node-consumer.c, the error texts
 * in pf-node.c; the device side (pf_node_producer_new_device(),
 * pf_node_consumer_new_full(), pf_node_frame_get_device(): device frames,
 * docs/cuda.md "Device frames in nodes") in the CUDA layer,
 * cuda/pf-node-device.c.
 */
#ifndef __PF_NODE_H__
#define __PF_NODE_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-caps.h>
#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-video-layout.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a public struct below changes layout (bindings check it). */
#define PF_NODE_ABI_VERSION 1

/* pf_node_consumer_next() result besides 1 (frame), 0 (timeout), -errno. */
#define PF_NODE_EOS 2

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/**
 * pf_node_strerror:
 *
 * A description of a negative errno returned by this library.
 *
 * Since: 0.1
 */
PF_API const char *pf_node_strerror (int err);

/* Where a frame's bytes live (pf_node_frame.domain, pf_node_loan.domain).
 * Since: 0.1
 */
enum pf_node_domain {
  PF_NODE_DOMAIN_HOST = 0,      /* host memory: the producer's shm segment */
  PF_NODE_DOMAIN_DEVICE = 1,    /* CUDA device memory (a device segment) */
};

/* ------------------------------------------------------------------------ */
/* Producer                                                                  */
/* ------------------------------------------------------------------------ */

/* Since: 0.1 */
typedef struct pf_node_producer pf_node_producer;

/* Since: 0.1 */
enum pf_node_producer_flags {
  /* Do not try mlock() on the pool (it is tried by default, falling back
   * silently when RLIMIT_MEMLOCK refuses). */
  PF_NODE_PRODUCER_NO_LOCK = 1u << 0,
  /* Try huge pages for the pool. */
  PF_NODE_PRODUCER_HUGEPAGES = 1u << 1,
};

/* Since: 0.1 */
typedef struct {
  const char *socket_path;      /* required */
  unsigned int perms;           /* socket file mode; 0 means 0600 */
  unsigned int n_slots;         /* frames in the pool, >= 1; 0 means 4 */
  uint64_t slot_size;           /* bytes per frame, rounded up to a page */
  /* Frames one consumer may hold at once (received and not yet released,
   * as the producer's I/O thread last saw it); past it, frames skip that
   * consumer. 0 means n_slots: nothing is ever skipped for lack of room, a
   * consumer that holds every slot makes loans wait (backpressure). Lower
   * it so that one slow consumer cannot take the whole pool; frames are
   * then skipped for a consumer whose releases are still in flight. */
  unsigned int max_client_frames;
  unsigned int flags;           /* pf_node_producer_flags */
} pf_node_producer_config;

/* A loaned slot. The application writes data[0, size) and may set the
 * timestamps; pf_node_producer_publish() sends it.
 * Since: 0.1
 */
typedef struct {
  void *data;                   /* first byte of the slot, page-aligned */
  uint64_t size;                /* bytes the frame occupies (<= capacity) */
  uint64_t capacity;            /* the slot size */
  uint32_t slot;                /* index in the pool */
  uint32_t has_video_meta;      /* layout below is valid */
  pf_node_video_layout layout;
  /* Set before publishing (loan functions reset them to PF_TIME_NONE). */
  uint64_t pts, dts, duration;  /* ns */
  /* CLOCK_MONOTONIC ns at which the frame is due (e.g. capture time; what a
   * pinnedshmsrc turns into its PTS). Left PF_TIME_NONE with a valid pts,
   * it is derived from pts, anchored so that the first such frame is due
   * when published. */
  uint64_t clock_pts;
  uint32_t buffer_flags;        /* GstBufferFlags bits, usually 0 */
  /* enum pf_node_domain: PF_NODE_DOMAIN_DEVICE for a loan of a device
   * producer (pf_node_producer_new_device()): data is then a device
   * address (a CUdeviceptr), not host memory */
  uint32_t domain;
  uint64_t segment_offset;      /* where data lies in the segment */
  uint64_t loan_id;             /* private: catches double publish */
} pf_node_loan;

/**
 * pf_node_producer_new:
 *
 * Creates the pool segment (pf_segment_new with LOCK | SEAL_WRITERS) and a
 * listening pf_producer. Returns 0 or -errno; -EADDRINUSE when another
 * producer is live on the path.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_new (const pf_node_producer_config * config,
    pf_node_producer ** out);

/**
 * pf_node_producer_new_device:
 * @device: the CUDA device ordinal the slots live on
 *
 * pf_node_producer_new() with the pool in device memory: one device
 * segment (pf_device_segment_new(), CUDA virtual memory exported as an
 * fd) of n_slots slots of slot_size bytes (the LOCK, HUGEPAGES flags do
 * not apply). A loan's data is the slot's device address (a CUdeviceptr,
 * loan->domain PF_NODE_DOMAIN_DEVICE): write it with CUDA (cuMemcpy*,
 * kernels, a PyTorch tensor copy_()), never with the CPU.
 *
 * The rule of publishing: pf_node_producer_publish() sends the frame at
 * once, consumers may read it at once; every write into the slot must have
 * COMPLETED before it is called (cuStreamSynchronize /
 * cudaStreamSynchronize on the stream that wrote, or a synchronous copy).
 * No event travels with the frame.
 *
 * Only consumers that asked for device frames (PF_NODE_CONSUMER_DEVICE)
 * and could import the segment get the frames; the others are skipped
 * (the transport counts them: pf_client_stats.frames_skipped_device).
 *
 * Returns: 0 or -errno as pf_node_producer_new(), or
 * pf_device_segment_new()'s: -ENOENT (no CUDA driver), -ENODEV (no such
 * device), -ENOTSUP (it cannot export memory as an fd), -EIO
 * (pf_device_segment_error() says which call failed).
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_new_device (const pf_node_producer_config *
    config, int device, pf_node_producer ** out);

/**
 * pf_node_producer_free:
 *
 * Closes the producer (consumers see a hang-up; call send_eos() first for a
 * clean end), then frees it. Loans not published are lost with it.
 *
 * Since: 0.1
 */
PF_API void pf_node_producer_free (pf_node_producer * p);

/**
 * pf_node_producer_set_caps:
 *
 * Caps of later frames; sent to consumers now and on connect.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_set_caps (pf_node_producer * p, const char *caps);

/**
 * pf_node_producer_set_video:
 *
 * set_caps() with pf_node_video_caps(); also remembers the layout so that
 * pf_node_producer_loan_video() needs no arguments. -EMSGSIZE when one
 * frame does not fit in a slot.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_set_video (pf_node_producer * p, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d);

/**
 * pf_node_producer_loan:
 * @timeout_ms: how long to wait for a free slot: 0 fails at once with
 *   -EAGAIN, -1 waits forever, otherwise -ETIMEDOUT after that long
 *
 * Loans a whole slot (size = capacity, no video meta). While every slot is
 * out, consumers that hold slots and have released none for the reliable
 * timeout (pf_node_producer_set_reliable_timeout()) are disconnected, which
 * gives their slots back: consumers that stop releasing cannot stall the
 * producer for ever.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_loan (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan);

/**
 * pf_node_producer_loan_video:
 *
 * Loans a slot laid out for the video set with set_video() (strides and
 * plane offsets in loan->layout, size = layout size). -EINVAL if no video
 * was set.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_loan_video (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan);

/**
 * pf_node_producer_publish:
 *
 * Sends the loan to every connected consumer that can take it: an
 * every-frame consumer is waited for first (pf_producer_wait_ready(), at
 * most the reliable timeout, after which it is demoted or disconnected); a
 * newest-frame one at its limit is skipped. The slot returns to the pool
 * when all of them released it, or at once when nobody received it. The
 * loan is consumed either way.
 *
 * Returns: the number of consumers that got the frame (0 included), or
 * -EINVAL (not a current loan, size > capacity), or the transport's error.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_publish (pf_node_producer * p, pf_node_loan * loan);

/**
 * pf_node_producer_discard:
 *
 * Returns a loan to the pool without publishing it.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_discard (pf_node_producer * p, pf_node_loan * loan);

/**
 * pf_node_producer_send_eos:
 *
 * Sends EOS to every consumer.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_send_eos (pf_node_producer * p);

/**
 * pf_node_producer_wait_idle:
 *
 * Waits until every published slot came back (all consumers released or
 * left). 0, or -ETIMEDOUT.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_wait_idle (pf_node_producer * p, int timeout_ms);

/**
 * pf_node_producer_wait_clients:
 *
 * Waits until at least @n_clients consumers are connected (a camera that
 * must not lose its first frames). 0, or -ETIMEDOUT.
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_wait_clients (pf_node_producer * p,
    unsigned int n_clients, int timeout_ms);

/**
 * pf_node_producer_set_live:
 *
 * Whether this producer is live (a camera) or not (a file, a computation):
 * consumers that ask for no delivery of their own get newest frame from a
 * live producer, every frame from one that is not (the default, until this
 * is called). pf_producer_set_live().
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_set_live (pf_node_producer * p, int live);

/**
 * pf_node_producer_set_reliable_timeout:
 *
 * How long one every-frame consumer may hold back loans and publishes
 * (0: 5000 ms, -1: no bound) and what then happens to it (enum
 * pf_reliable_action: demoted to newest frame, the default, or
 * disconnected). pf_producer_set_reliable_timeout().
 *
 * Since: 0.1
 */
PF_API int pf_node_producer_set_reliable_timeout (pf_node_producer * p,
    int timeout_ms, int action);

/**
 * pf_node_producer_get_n_slots:
 *
 * Returns: the number of slots in the pool.
 *
 * Since: 0.1
 */
PF_API unsigned int pf_node_producer_get_n_slots (pf_node_producer * p);
/**
 * pf_node_producer_get_free_slots:
 *
 * Slots neither loaned nor held by a consumer.
 *
 * Since: 0.1
 */
PF_API unsigned int pf_node_producer_get_free_slots (pf_node_producer * p);
/**
 * pf_node_producer_get_n_clients:
 *
 * Returns: the number of connected consumers.
 *
 * Since: 0.1
 */
PF_API unsigned int pf_node_producer_get_n_clients (pf_node_producer * p);
/**
 * pf_node_producer_get_segment:
 *
 * The pool segment (no reference added).
 *
 * Since: 0.1
 */
PF_API pf_segment *pf_node_producer_get_segment (pf_node_producer * p);
/**
 * pf_node_producer_get_transport:
 *
 * The transport object, for stats (no reference added).
 *
 * Since: 0.1
 */
PF_API pf_producer *pf_node_producer_get_transport (pf_node_producer * p);

/* ------------------------------------------------------------------------ */
/* Consumer                                                                  */
/* ------------------------------------------------------------------------ */

/* Since: 0.1 */
typedef struct pf_node_consumer pf_node_consumer;

/* One received frame; read-only for the application. Valid until
 * pf_node_frame_release().
 * Since: 0.1
 */
typedef struct {
  uint64_t seq;                 /* producer's frame number */
  /* The frame bytes: contiguous when n_chunks == 1 (always for frames from
   * pf_node_producer and from pinnedshmsink fed by its own pool); for
   * n_chunks > 1, data is NULL and chunk_data/chunk_size list the pieces. */
  const void *data;
  uint64_t size;                /* total bytes, all chunks */
  uint32_t n_chunks;
  uint32_t caps_seq;
  const void *chunk_data[PF_MAX_CHUNKS];
  uint64_t chunk_size[PF_MAX_CHUNKS];

  /* Caps the frame belongs to and what they say (valid with the frame). */
  const char *caps;
  pf_node_caps_info info;

  /* Video meta: from the producer's meta when has_video_meta, else the
   * default layout computed from the caps when the format is known
   * (n_planes 0 otherwise). */
  uint32_t has_video_meta;
  pf_node_video_layout layout;

  /* Timestamps, ns; PF_TIME_NONE when unset. */
  uint64_t pts, dts, duration;
  uint64_t clock_pts;           /* PTS on CLOCK_MONOTONIC, if the producer knew */
  uint64_t send_time;           /* CLOCK_MONOTONIC when published */
  uint64_t recv_time;           /* CLOCK_MONOTONIC when received here */
  uint32_t buffer_flags;
  /* 1: the mapping is read-only (host frames: always; device frames: where
   * the driver mapped the segment read-only, pf_device_segment_get_access) */
  uint32_t readonly;

  /* The segment of chunk 0: register it once with a GPU runtime. */
  pf_segment *segment;
  const void *segment_base;     /* NULL for a device frame */
  uint64_t segment_size;
  int32_t segment_fd;
  /* enum pf_node_domain. PF_NODE_DOMAIN_DEVICE (only for a consumer made
   * with PF_NODE_CONSUMER_DEVICE): the bytes are device memory; data,
   * chunk_data and segment_base are NULL, pf_node_frame_get_device() gives
   * the device addresses. */
  uint32_t domain;
  uint64_t segment_id;          /* process-local, never reused */
  uint64_t segment_offset;      /* of chunk 0 */
} pf_node_frame;

/**
 * pf_node_consumer_new:
 * @timeout_ms: how long to wait for the producer to appear and send its
 *   HELLO (-1: forever; 0: one attempt, up to 5 s for the HELLO)
 *
 * Returns: 0, -ETIMEDOUT (nobody listening), -ETIME (a peer accepted but
 * sent no HELLO in time), or the transport's error
 * (pf_consumer_connect_error() says which).
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_new (const char *socket_path, int timeout_ms,
    pf_node_consumer ** out);

/**
 * pf_node_consumer_new_with:
 * @delivery: enum pf_delivery to ask for: PF_DELIVERY_EVERY_FRAME (never
 *   skipped; the producer waits for this consumer, up to its reliable
 *   timeout), PF_DELIVERY_NEWEST_FRAME (skipped when behind; stale queued
 *   frames are dropped here for the newest), or PF_DELIVERY_DEFAULT (the
 *   producer's: newest frame when it is live, every frame when not)
 *
 * pf_node_consumer_new() with a delivery request. -EINVAL for another value.
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_new_with (const char *socket_path, int timeout_ms,
    uint32_t delivery, pf_node_consumer ** out);

/* Since: 0.1 */
enum pf_node_consumer_flags {
  /* Accept device frames (docs/cuda.md, "Device frames in nodes"): the
   * producer's device segments are imported once (read-only where the
   * driver allows) and their frames delivered with domain
   * PF_NODE_DOMAIN_DEVICE, no copy. A segment this process cannot import
   * (no CUDA driver, no device with its UUID, no virtual-memory fd
   * support) is refused and its frames released unseen, counted
   * (pf_node_consumer_get_device_stats()); host frames come as usual. */
  PF_NODE_CONSUMER_DEVICE = 1u << 0,
};

/**
 * pf_node_consumer_new_full:
 * @delivery: as pf_node_consumer_new_with()
 * @flags: #pf_node_consumer_flags
 *
 * pf_node_consumer_new_with() with flags. Without PF_NODE_CONSUMER_DEVICE
 * the producer never sends device frames to this consumer.
 *
 * Returns: as pf_node_consumer_new_with(); -EINVAL for an unknown flag.
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_new_full (const char *socket_path,
    int timeout_ms, uint32_t delivery, uint32_t flags,
    pf_node_consumer ** out);

/**
 * pf_node_consumer_get_device_stats:
 * @skipped: (out) (optional): frames released unseen because their device
 *   segment could not be imported here
 * @refused: (out) (optional): device segments refused
 *
 * Returns: why the last device segment was refused ("" if none).
 *
 * Since: 0.1
 */
PF_API const char *pf_node_consumer_get_device_stats (pf_node_consumer * c,
    uint64_t * skipped, uint32_t * refused);

/* Where a device frame lives in this process (pf_node_frame_get_device()).
 * Since: 0.1
 */
typedef struct {
  int32_t ordinal;              /* the CUDA device ordinal here */
  uint32_t access;              /* enum pf_device_access: 1 read, 3 read-write */
  uint8_t uuid[16];             /* the device's UUID */
  uint64_t ptr;                 /* device address of the frame's first byte */
  uint64_t chunk_ptr[PF_MAX_CHUNKS];    /* of each chunk (n_chunks) */
} pf_node_device_info;

/**
 * pf_node_frame_get_device:
 *
 * The device side of a device frame (domain PF_NODE_DOMAIN_DEVICE): its
 * device, the access of this process's mapping and the device addresses.
 * Read it with CUDA (cuMemcpyDtoH, kernels, a DLPack/CUDA array interface
 * consumer), never with the CPU. The producer published it complete: no
 * wait is needed before reading. Every read must have completed before
 * pf_node_frame_release() (or the last export's death), when the producer
 * may write the slot again: name the streams that read it with
 * pf_node_frame_read_on() and the release waits for them.
 *
 * Returns: 0, or -EINVAL (a host frame, NULL).
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_get_device (const pf_node_frame * frame,
    pf_node_device_info * info);

/**
 * pf_node_frame_read_on:
 * @stream: a CUstream / cudaStream_t value that reads the frame (1: the
 *   legacy default stream, 2: the per-thread default stream, as DLPack
 *   numbers them); 0 is refused
 *
 * Names @stream a reader of the device frame @frame: its release
 * (pf_node_frame_release(), or the last export's death) first waits for
 * the work queued on @stream (cuStreamSynchronize; 1 and 2 in the
 * releasing thread's current context, else the device's primary context),
 * so the producer never writes a slot again under a late read. At most 8
 * streams per frame; naming one twice counts once. The DLPack export of
 * the Python binding calls it with the consumer's stream. Reads on a
 * stream not named must have completed before the release.
 *
 * Returns: 0, -EINVAL (a host frame, stream 0), -ENOSPC (8 already).
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_read_on (pf_node_frame * frame, uintptr_t stream);

/**
 * pf_node_device_sync_errors:
 *
 * Returns: how many releases of device frames in this process could not
 * wait for their readers' streams (no driver, a failed
 * cuStreamSynchronize); the frame was released anyway and
 * pf_node_frame_release() returned -EIO or -ENOENT (an export's deleter
 * has nobody to tell).
 *
 * Since: 0.1
 */
PF_API uint64_t pf_node_device_sync_errors (void);

/**
 * pf_node_consumer_set_budget:
 * @max_bytes: the most bytes of the producer's segments mapped at once (0:
 *   PF_CONSUMER_DEFAULT_MAX_BYTES, 768 MiB; UINT64_MAX: no limit)
 * @max_segments: the most segments mapped at once (0:
 *   PF_CONSUMER_DEFAULT_MAX_SEGMENTS, 64; UINT32_MAX: no limit)
 * @flags: #pf_consumer_budget_flags: 0 maps segments lazily,
 *   PF_CONSUMER_LOCK prefaults and mlocks each one
 *
 * What this consumer accepts from its producer (pf_consumer_set_budget()).
 * Call it before the first pf_node_consumer_next(): the producer's
 * segments, sent right after its HELLO, are read there. Past the budget
 * pf_node_consumer_next() fails with -EDQUOT, pf_node_consumer_get_error()
 * naming the bytes and the budget. The defaults apply without this call.
 *
 * Returns: 0, or -EINVAL (unknown flag).
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_set_budget (pf_node_consumer * c,
    uint64_t max_bytes, uint32_t max_segments, uint32_t flags);

/**
 * pf_node_consumer_free:
 *
 * Drops the application's handle. Frames not yet released stay valid; the
 * connection closes when the last of them is released.
 *
 * Since: 0.1
 */
PF_API void pf_node_consumer_free (pf_node_consumer * c);

/**
 * pf_node_consumer_get_fd:
 *
 * Poll it for POLLIN, then call pf_node_consumer_next() with timeout 0
 * until it returns 0.
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_get_fd (pf_node_consumer * c);

/**
 * pf_node_consumer_next:
 * @timeout_ms: 0 polls, -1 blocks
 * @frame: (out): a new frame, to give back with pf_node_frame_release()
 *
 * Caps changes are absorbed (see pf_node_consumer_get_caps()). Besides the
 * transport's checks, a frame's video meta must lie inside the frame. After
 * -EPROTO every later call fails the same way: free the consumer.
 *
 * Returns: 1 (frame), PF_NODE_EOS, 0 (timeout), -ECONNRESET (the producer
 * went away without EOS: crashed, killed, or closed mid-stream),
 * -ECONNABORTED (it disconnected this consumer for falling behind, and
 * said so), -EPIPE (it hung up after EOS), -ETIMEDOUT (it stopped reading
 * our releases),
 * -EPROTO (the producer broke the protocol), -EDQUOT (its segments exceed
 * the budget, pf_node_consumer_set_budget()); pf_node_consumer_get_error()
 * says what happened.
 *
 * Since: 0.1
 */
PF_API int pf_node_consumer_next (pf_node_consumer * c, int timeout_ms,
    pf_node_frame ** frame);

/**
 * pf_node_frame_release:
 *
 * Releases the frame (the producer gets its slot back once every consumer
 * released it) and frees it; a device frame first waits for the streams
 * named with pf_node_frame_read_on(). NULL is ignored. Returns 0 or -errno
 * (-EPIPE: the producer is gone; -EIO, -ENOENT: a reader's stream could not
 * be waited for; the frame is freed anyway).
 *
 * Since: 0.1
 */
PF_API int pf_node_frame_release (pf_node_frame * frame);

/**
 * pf_node_consumer_get_caps:
 *
 * The latest caps received, or NULL (valid until the next call of next()).
 *
 * Since: 0.1
 */
PF_API const char *pf_node_consumer_get_caps (pf_node_consumer * c);
/**
 * pf_node_consumer_get_held:
 *
 * Returns: how many frames this consumer holds (received, not released).
 *
 * Since: 0.1
 */
PF_API unsigned int pf_node_consumer_get_held (pf_node_consumer * c);
/**
 * pf_node_consumer_get_max_held:
 *
 * Returns: the limit the producer announced (frames one consumer may hold).
 *
 * Since: 0.1
 */
PF_API uint32_t pf_node_consumer_get_max_held (pf_node_consumer * c);
/**
 * pf_node_consumer_get_error:
 *
 * Returns: a readable reason for the last failure ("" if none).
 *
 * Since: 0.1
 */
PF_API const char *pf_node_consumer_get_error (pf_node_consumer * c);
/**
 * pf_node_consumer_get_delivery:
 *
 * Returns: the delivery in force (enum pf_delivery, 1 or 2; 0 until the
 * producer said, on the first next()). A demoted every-frame consumer
 * reads PF_DELIVERY_NEWEST_FRAME.
 *
 * Since: 0.1
 */
PF_API uint32_t pf_node_consumer_get_delivery (pf_node_consumer * c);
/**
 * pf_node_consumer_get_stream:
 *
 * The producer's liveness, segment and this consumer's delivery
 * (pf_consumer_get_stream()).
 *
 * Since: 0.1
 */
PF_API void pf_node_consumer_get_stream (pf_node_consumer * c,
    pf_stream_info * info);
/**
 * pf_node_consumer_get_stats:
 *
 * Frames received, stale frames dropped here, frames the producer skipped
 * (pf_consumer_get_stats()).
 *
 * Since: 0.1
 */
PF_API void pf_node_consumer_get_stats (pf_node_consumer * c,
    pf_consumer_stats * stats);

/**
 * pf_node_consumer_get_transport:
 *
 * The transport object (no reference added).
 *
 * Since: 0.1
 */
PF_API pf_consumer *pf_node_consumer_get_transport (pf_node_consumer * c);

/**
 * pf_node_abi_sizeof:
 *
 * sizeof the public structs, for bindings that mirror them.
 *
 * Since: 0.1
 */
PF_API size_t pf_node_abi_sizeof (const char *type_name);

#ifdef __cplusplus
}
#endif
#endif /* __PF_NODE_H__ */
