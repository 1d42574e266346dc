/* pinnedflow: the consumer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A consumer connects to a producer's socket, imports every announced segment
 * read-only after validating its fd, and hands out frames as pointers into
 * those mappings. Every frame must be released exactly once. One thread
 * receives; pf_consumer_release() may be called from any thread.
 */
#ifndef __PF_CONSUMER_H__
#define __PF_CONSUMER_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>

#include <pinnedflow/pf-protocol.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_consumer pf_consumer;

enum pf_event_type {
  PF_EVENT_CAPS = 1,
  PF_EVENT_FRAME = 2,
  PF_EVENT_EOS = 3,
};

typedef struct {
  int type;                     /* enum pf_event_type */
  /* PF_EVENT_CAPS: the new caps; valid until the next pf_consumer_receive() */
  const char *caps;
  uint32_t caps_seq;
  /* PF_EVENT_FRAME: the frame as sent (seq, timestamps, video meta, chunks
   * with the producer's segment ids) ... */
  struct pf_msg_frame frame;
  /* ... and, per chunk, the local segment (one reference owned by the event:
   * pf_consumer_event_clear() drops it; take your own to keep it) and the
   * address of the chunk's first byte in our read-only mapping. */
  pf_segment *segments[PF_MAX_CHUNKS];
  const void *data[PF_MAX_CHUNKS];
} pf_event;

/**
 * pf_consumer_connect:
 * @timeout_ms: how long to wait for a producer that is not up yet
 *   (0: try once, -1: forever)
 *
 * Connects and completes the HELLO exchange. The HELLO is awaited for
 * at least 5 s (for ever with -1). Same as
 * pf_consumer_connect_cancellable() with no cancel fd.
 * Returns: 0, -ETIMEDOUT, -EPROTONOSUPPORT (version), or -errno.
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
 */
PF_API int pf_consumer_connect_cancellable (const char *socket_path, int timeout_ms,
    int cancel_fd, pf_consumer ** out);

/* Like pf_consumer_connect() on an already connected SOCK_SEQPACKET socket
 * (e.g. one end of a socketpair()): does the HELLO exchange, waiting up to
 * @timeout_ms for the producer's HELLO. Takes @fd (closed on failure). */
PF_API int pf_consumer_new_from_fd (int fd, int timeout_ms, pf_consumer ** out);

/* Why the last pf_consumer_connect()/pf_consumer_new_from_fd() of this
 * thread failed (there is no consumer to ask then). */
PF_API const char *pf_consumer_connect_error (void);
PF_API pf_consumer *pf_consumer_ref (pf_consumer * c);
/* Dropping the last reference closes the connection; releases of frames
 * still out are then no-ops (the producer reclaims them on hang-up). */
PF_API void pf_consumer_unref (pf_consumer * c);

/* The socket: poll it for POLLIN to integrate with any event loop. */
PF_API int pf_consumer_get_fd (pf_consumer * c);

/**
 * pf_consumer_receive:
 * @timeout_ms: 0 polls, -1 blocks
 *
 * Handles HELLO/SEGMENT_ADD/SEGMENT_REMOVE internally and returns the next
 * CAPS, FRAME or EOS. Every message and fd is validated; on a violation the
 * connection is closed, every fd received is closed, and an error returned.
 *
 * Returns: 1 (event filled), 0 (timeout), -EPIPE (producer gone),
 * -EPROTO (protocol violation; see pf_consumer_get_error()).
 */
PF_API int pf_consumer_receive (pf_consumer * c, int timeout_ms, pf_event * ev);

/* Drops the references a FRAME event holds. Safe on any event. */
PF_API void pf_consumer_event_clear (pf_event * ev);

/* Releases frame @seq. -ENOENT if not held, -EPIPE if disconnected. */
PF_API int pf_consumer_release (pf_consumer * c, uint64_t seq);

/* Frames received and not yet released. */
PF_API unsigned int pf_consumer_get_held (pf_consumer * c);
/* The producer's per-client limit from its HELLO. */
PF_API uint32_t pf_consumer_get_max_held (pf_consumer * c);
PF_API uint64_t pf_consumer_get_session_id (pf_consumer * c);
/* The last error, human readable (empty if none). */
PF_API const char *pf_consumer_get_error (pf_consumer * c);

#ifdef __cplusplus
}
#endif
#endif /* __PF_CONSUMER_H__ */
