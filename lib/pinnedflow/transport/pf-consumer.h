/* pinnedflow: the consumer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A consumer connects to a producer's socket, imports every announced segment
 * read-only after validating its fd, and hands out frames as pointers into
 * those mappings. Every frame must be released exactly once. One thread
 * receives; pf_consumer_release() may be called from any thread.
 *
 * Lifecycle: pf_consumer is refcounted (pf_consumer_connect() or
 * _new_from_fd() make it, pf_consumer_ref/_unref); a pf_event is a plain
 * value whose segment references pf_consumer_event_clear() drops. Its frame
 * is a pf_consumer_frame (pf-frame.h), not the wire struct; every received
 * frame is given back once with pf_consumer_release().
 */
#ifndef __PF_CONSUMER_H__
#define __PF_CONSUMER_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>

#include <pinnedflow/pf-frame.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Since: 0.1 */
typedef struct pf_consumer pf_consumer;

/* Since: 0.1 */
enum pf_event_type {
  PF_EVENT_CAPS = 1,
  PF_EVENT_FRAME = 2,
  PF_EVENT_EOS = 3,
  /* The producer's stream changed (liveness, segment, this consumer's
   * delivery): ev->stream. Only for consumers made with the _with() calls. */
  PF_EVENT_STREAM = 4,
};

/* Since: 0.1 */
typedef struct {
  int type;                     /* enum pf_event_type */
  /* PF_EVENT_CAPS: the new caps; valid until the next pf_consumer_receive() */
  const char *caps;
  uint32_t caps_seq;
  /* PF_EVENT_FRAME: the frame as sent (seq, timestamps, video meta, chunks
   * with the producer's segment ids) ... */
  pf_consumer_frame frame;
  /* ... and, per chunk, the local segment (one reference owned by the event:
   * pf_consumer_event_clear() drops it; take your own to keep it) and the
   * address of the chunk's first byte in our read-only mapping. */
  pf_segment *segments[PF_MAX_CHUNKS];
  const void *data[PF_MAX_CHUNKS];
  /* PF_EVENT_STREAM: what the producer said (also pf_consumer_get_stream()) */
  pf_stream_info stream;
} pf_event;

/**
 * pf_consumer_options:
 * @delivery: enum pf_delivery requested in the HELLO (0: the producer's
 *   default, from its liveness)
 * @flags: 0
 *
 * Options of pf_consumer_connect_with() and pf_consumer_new_from_fd_with().
 * NULL options mean all zero.
 *
 * Since: 0.1
 */
typedef struct {
  uint32_t delivery;
  uint32_t flags;
  uint64_t reserved[2];         /* 0 */
} pf_consumer_options;

/**
 * pf_consumer_connect:
 * @timeout_ms: the deadline of the whole call, waiting for a producer that
 *   is not up yet and for its HELLO; -1: forever; 0: one connect attempt,
 *   then up to 5 s for the HELLO
 *
 * Connects and completes the HELLO exchange. Same as
 * pf_consumer_connect_cancellable() with no cancel fd.
 *
 * Returns: 0, or
 *  -ETIMEDOUT: nobody accepted a connection before the deadline;
 *  -ETIME: a peer accepted the connection but sent no HELLO before the
 *   deadline (a stuck or silent producer);
 *  -EPIPE, -ECONNRESET: the peer hung up before its HELLO (a producer
 *   dying while we connect);
 *  -EPROTONOSUPPORT: the producer speaks another protocol version;
 *  -EUSERS: the producer refused us: it serves its maximum of consumers
 *   (pf_producer_config.max_clients);
 *  -EPROTO: its first message is not a valid producer HELLO;
 *  or another -errno. pf_consumer_connect_error() says which, naming the
 *  socket path.
 *
 * Since: 0.1
 */
PF_API int pf_consumer_connect (const char *socket_path, int timeout_ms,
    pf_consumer ** out);

/**
 * pf_consumer_connect_cancellable:
 * @timeout_ms: as for pf_consumer_connect()
 * @cancel_fd: an fd that becomes readable (POLLIN) to cancel, e.g. an
 *   eventfd or a pipe's read end; -1 for none. It is polled, never read.
 *
 * pf_consumer_connect() that can be interrupted at any point: while no
 * producer listens (between retries) and while waiting for the producer's
 * HELLO. The connect itself never blocks (a full backlog is retried). An
 * already readable @cancel_fd cancels before the first attempt.
 *
 * Returns: as pf_consumer_connect(), or -ECANCELED (nothing left open).
 *
 * Since: 0.1
 */
PF_API int pf_consumer_connect_cancellable (const char *socket_path, int timeout_ms,
    int cancel_fd, pf_consumer ** out);

/**
 * pf_consumer_connect_with:
 * @timeout_ms, @cancel_fd: as for pf_consumer_connect_cancellable()
 * @options: the delivery to request (NULL: the producer's default)
 *
 * The version-2 connect. Besides the delivery request, a consumer made with
 * it (or pf_consumer_new_from_fd_with()) reports, from pf_consumer_receive():
 *  - PF_EVENT_STREAM events;
 *  - -ECONNRESET when the producer went away without EOS since its last
 *    frame (crashed, killed, closed mid-stream);
 *  - -EPIPE when it hung up after an EOS (a clean end);
 *  - -ETIMEDOUT when a RELEASE could not be sent for 5 s (the producer
 *    stopped reading).
 * The consumers of the older calls see -EPIPE for all three and no STREAM
 * events; everything else is the same.
 *
 * Returns: as pf_consumer_connect_cancellable(); -EINVAL for an unknown
 * delivery or flag.
 *
 * Since: 0.1
 */
PF_API int pf_consumer_connect_with (const char *socket_path, int timeout_ms,
    int cancel_fd, const pf_consumer_options * options, pf_consumer ** out);

/* pf_consumer_new_from_fd() with @options, reporting as
 * pf_consumer_connect_with().
 * Since: 0.1
 */
PF_API int pf_consumer_new_from_fd_with (int fd, int timeout_ms,
    const pf_consumer_options * options, pf_consumer ** out);

/* Like pf_consumer_connect() on an already connected SOCK_SEQPACKET socket
 * (e.g. one end of a socketpair()): does the HELLO exchange, waiting up to
 * @timeout_ms (0: only a HELLO already queued, -1: forever) for the
 * producer's HELLO; -ETIME when none came. Takes @fd (closed on
 * failure).
 * Since: 0.1
 */
PF_API int pf_consumer_new_from_fd (int fd, int timeout_ms, pf_consumer ** out);

/* Why the last pf_consumer_connect()/pf_consumer_new_from_fd() of this
 * thread failed (there is no consumer to ask then).
 * Since: 0.1
 */
PF_API const char *pf_consumer_connect_error (void);
/* Since: 0.1 */
PF_API pf_consumer *pf_consumer_ref (pf_consumer * c);
/* Dropping the last reference closes the connection; releases of frames
 * still out are then no-ops (the producer reclaims them on hang-up).
 * Since: 0.1
 */
PF_API void pf_consumer_unref (pf_consumer * c);

/* Flags of #pf_consumer_budget.
 * Since: 0.1
 */
enum pf_consumer_budget_flags {
  /* Prefault every imported segment (MAP_POPULATE) instead of mapping it
   * lazily: no page fault on first use, but every page of every segment,
   * holes included, is committed at once. */
  PF_CONSUMER_PREFAULT = 1u << 0,
  /* Also try to mlock() every imported segment (implies PREFAULT; falls
   * back to unlocked when refused, see pf_segment_get_state()). */
  PF_CONSUMER_LOCK = 1u << 1,
};

/* Defaults of #pf_consumer_budget: a 4K RGBA pool of 16 frames (506 MiB)
 * fits, a 1 GiB segment does not. */
#define PF_CONSUMER_DEFAULT_MAX_BYTES (UINT64_C (768) * 1024 * 1024)
#define PF_CONSUMER_DEFAULT_MAX_SEGMENTS 64

/**
 * pf_consumer_budget:
 * @max_bytes: the most bytes of segments a producer may make this consumer
 *   map at once (0: %PF_CONSUMER_DEFAULT_MAX_BYTES; UINT64_MAX: no limit)
 * @max_segments: the most segments mapped at once (0:
 *   %PF_CONSUMER_DEFAULT_MAX_SEGMENTS; UINT32_MAX: no limit)
 * @flags: #pf_consumer_budget_flags (0: map lazily)
 *
 * What a consumer accepts from its producer. Mapped means announced and not
 * removed, or removed but still used by a frame the application holds.
 * A SEGMENT_ADD past either limit is refused before anything is mapped: its
 * fd is closed, the connection ends and pf_consumer_receive() returns
 * -EDQUOT, pf_consumer_get_error() naming the bytes and the budget.
 *
 * Since: 0.1
 */
typedef struct {
  uint64_t max_bytes;
  uint32_t max_segments;
  uint32_t flags;
} pf_consumer_budget;

/**
 * pf_consumer_set_budget:
 *
 * Sets the budget (zero fields take the defaults, which also apply when this
 * is never called). Call it before the first pf_consumer_receive() (the
 * producer announces its segments right after the HELLO, and they are read
 * there) or later from the receiving thread; it applies to every segment
 * imported from then on. Returns 0, or -EINVAL (unknown flag).
 *
 * Since: 0.1
 */
PF_API int pf_consumer_set_budget (pf_consumer * c,
    const pf_consumer_budget * budget);
/* The budget in force, defaults filled in.
 * Since: 0.1
 */
PF_API void pf_consumer_get_budget (pf_consumer * c,
    pf_consumer_budget * budget);
/* What counts against the budget now (bytes, segments; either may be
 * NULL). Receiving thread only.
 * Since: 0.1
 */
PF_API void pf_consumer_get_mapped (pf_consumer * c, uint64_t * bytes,
    uint32_t * count);

/* What to poll for POLLIN to integrate with any event loop: the socket,
 * or, when the consumer asks for a frame ring (the default; see
 * docs/protocol.md, FRAME_RING), an epoll fd holding the socket and the
 * ring's doorbell. The same fd for the connection's life.
 * Since: 0.1
 */
PF_API int pf_consumer_get_fd (pf_consumer * c);
/* Receiving thread, before it polls pf_consumer_get_fd(): acknowledges
 * the frames taken from the frame ring (reads their doorbell rings), so
 * that the fd does not poll readable for them; done here, the read is off
 * the next frame's path. Optional (pf_consumer_receive() does it when it
 * was not). 0, or the negative errno that failed the connection.
 * Since: 0.1
 */
PF_API int pf_consumer_prepare_wait (pf_consumer * c);

/**
 * pf_consumer_receive:
 * @timeout_ms: 0 polls, -1 blocks
 *
 * Handles HELLO/SEGMENT_ADD/SEGMENT_REMOVE internally and returns the next
 * CAPS, FRAME, EOS (or STREAM, pf_consumer_connect_with()). Every message
 * and fd is validated; on a violation the connection is closed, every fd
 * received is closed, and an error returned.
 *
 * With newest-frame delivery in force, a FRAME is not returned while a
 * newer FRAME is already queued behind it: the stale one is released at
 * once and counted (pf_consumer_stats.frames_stale_dropped).
 *
 * Returns: 1 (event filled), 0 (timeout), -EPIPE (producer gone; with
 * pf_consumer_connect_with(): after an EOS), -ECONNRESET (with _with():
 * the producer went away without EOS), -ETIMEDOUT (with _with(): it stopped
 * reading RELEASEs), -EPROTO (protocol violation), -EDQUOT (a segment over
 * the budget, see pf_consumer_set_budget()); pf_consumer_get_error() says
 * what happened.
 *
 * Since: 0.1
 */
PF_API int pf_consumer_receive (pf_consumer * c, int timeout_ms, pf_event * ev);

/* Drops the references a FRAME event holds (its segments and data
 * pointers are NULL after, and its type 0). Safe on any event, and twice.
 * Since: 0.1
 */
PF_API void pf_consumer_event_clear (pf_event * ev);

/* Releases frame @seq. -ENOENT if not held, -EPIPE if disconnected.
 * Since: 0.1
 */
PF_API int pf_consumer_release (pf_consumer * c, uint64_t seq);

/* Frames received and not yet released.
 * Since: 0.1
 */
PF_API unsigned int pf_consumer_get_held (pf_consumer * c);
/* The producer's per-client limit from its HELLO.
 * Since: 0.1
 */
PF_API uint32_t pf_consumer_get_max_held (pf_consumer * c);
/* Since: 0.1 */
PF_API uint64_t pf_consumer_get_session_id (pf_consumer * c);
/* The last error, human readable (empty if none).
 * Since: 0.1
 */
PF_API const char *pf_consumer_get_error (pf_consumer * c);

/* The delivery in force (enum pf_delivery: 1 or 2) as the producer's last
 * STREAM said; 0 before the first STREAM was received. Receiving thread.
 * Since: 0.1
 */
PF_API uint32_t pf_consumer_get_delivery (pf_consumer * c);
/* The producer's last STREAM (all zero before one came). Receiving
 * thread.
 * Since: 0.1
 */
PF_API void pf_consumer_get_stream (pf_consumer * c, pf_stream_info * info);

/* Since: 0.1 */
typedef struct {
  uint64_t frames_received;     /* FRAMEs read, stale ones included */
  /* newest frame: queued frames released unseen for a newer one */
  uint64_t frames_stale_dropped;
  /* gaps in seq: frames the producer did not send us (drops, key-frame
   * waits) after our first frame */
  uint64_t frames_missed;
  uint32_t delivery;            /* as pf_consumer_get_delivery() */
  uint32_t demoted;             /* 1: the producer demoted us */
} pf_consumer_stats;

/* Counters of this connection. Receiving thread.
 * Since: 0.1
 */
PF_API void pf_consumer_get_stats (pf_consumer * c, pf_consumer_stats * stats);

#ifdef __cplusplus
}
#endif
#endif /* __PF_CONSUMER_H__ */
