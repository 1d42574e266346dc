/* pinnedflow: the producer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A producer listens on a unix socket path, accepts consumers, sends each
 * segment's fd once per consumer, then small FRAME messages, and tracks which
 * consumer holds which frame. It runs its own I/O thread: consumers are
 * accepted, releases read and dead consumers reclaimed even while nobody
 * publishes. It never blocks on a consumer: a consumer that holds
 * max_client_frames frames, or whose socket is full, skips frames (counted as
 * drops for it). pinnedshmsink and the dataflow bridge are both built on it.
 *
 * Lifecycle: pf_producer is refcounted (pf_producer_new/_ref/_unref), and
 * pf_producer_close() stops it while references remain. The frame it
 * publishes is a plain pf_producer_frame (pf-frame.h) the caller owns.
 */
#ifndef __PF_PRODUCER_H__
#define __PF_PRODUCER_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>

#include <pinnedflow/pf-frame.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pf_producer pf_producer;

typedef struct {
  uint32_t client_id;           /* producer-local, never reused */
  int32_t pid;                  /* SO_PEERCRED at connect time */
  uint32_t uid;
  uint32_t gid;
  int error;                    /* on disconnect: 0 (hang-up) or -errno */
  char reason[128];             /* on disconnect: human readable */
} pf_client_info;

typedef struct {
  uint32_t client_id;
  int32_t pid;
  uint32_t uid;
  uint32_t held;                /* frames held right now */
  uint64_t frames_sent;
  uint64_t frames_released;
  uint64_t frames_dropped;      /* skipped: limit reached or socket full */
  uint64_t bytes_sent;          /* frame payload bytes made available */
} pf_client_stats;

/* Callbacks run without any producer lock held, on the I/O thread (or in
 * pf_producer_close()'s caller): they may call any pf_producer_* function,
 * publish, drop segments, even close the producer. */
typedef struct {
  /* Every consumer that received the frame released it, or went away.
   * Called once per published frame that reached at least one consumer,
   * from the I/O thread or from pf_producer_close(). */
  void (*frame_released) (void *user_data, void *frame_token);
  void (*client_connected) (void *user_data, const pf_client_info * info);
  void (*client_disconnected) (void *user_data, const pf_client_info * info);
  void *user_data;
} pf_producer_callbacks;

typedef struct {
  const char *socket_path;      /* required; a path, never abstract */
  unsigned int perms;           /* socket file mode, e.g. 0600 */
  unsigned int max_client_frames;       /* >= 1 */
  pf_producer_callbacks callbacks;
} pf_producer_config;

/**
 * pf_producer_new:
 *
 * Binds and listens on config->socket_path with config->perms. A stale
 * socket file (nobody accepts on it) is removed first; a live one makes this
 * fail with -EADDRINUSE. Starts the I/O thread.
 */
PF_API int pf_producer_new (const pf_producer_config * config, pf_producer ** out);
/**
 * pf_producer_ref:
 *
 * Returns: @p, with one more reference.
 */
PF_API pf_producer *pf_producer_ref (pf_producer * p);
/**
 * pf_producer_unref:
 *
 * Drops a reference; the last one closes the producer (pf_producer_close())
 * and frees it.
 */
PF_API void pf_producer_unref (pf_producer * p);

/**
 * pf_producer_close:
 *
 * Stops accepting, disconnects every consumer (frame_released runs for
 * every frame still held), stops the I/O thread and unlinks the socket.
 * Idempotent. The object stays valid until its last unref. Every segment
 * ever published holds a producer reference until it dies (its attachment
 * announces SEGMENT_REMOVE), so call this explicitly: the last
 * pf_producer_unref() may come much later.
 */
PF_API void pf_producer_close (pf_producer * p);

/**
 * pf_producer_set_caps:
 *
 * Sets the caps every later frame belongs to; sent to connected consumers
 * now and to later ones on connect. -EMSGSIZE if too long.
 */
PF_API int pf_producer_set_caps (pf_producer * p, const char *caps);

/**
 * pf_producer_publish:
 * @frame: chunks (segment_id = pf_segment_get_id()), timestamps, video meta
 *   (pf-frame.h); the producer adds its frame number, the caps number and
 *   the send time
 * @segments: the segment of each chunk (frame->n_chunks entries)
 * @token: handed back in frame_released
 *
 * Announces segments consumers have not seen yet (fd sent once per
 * consumer; the producer keeps a dup of the fd until the segment dies), then
 * sends the frame to every consumer below its limit. The producer also sets
 * caps_seq (to the caps of the last pf_producer_set_caps()). Never blocks on
 * a consumer.
 *
 * Returns: how many consumers got the frame (frame_released follows later
 * iff > 0), or a negative errno (-EINVAL: chunk outside its segment).
 */
PF_API int pf_producer_publish (pf_producer * p,
    const pf_producer_frame * frame,
    pf_segment * const *segments, void *token);

/**
 * pf_producer_send_eos:
 *
 * Sends EOS to every consumer.
 */
PF_API int pf_producer_send_eos (pf_producer * p);

/**
 * pf_producer_get_n_clients:
 *
 * Returns: the number of consumers past the handshake (connections still
 * waiting for their HELLO are not counted).
 */
PF_API unsigned int pf_producer_get_n_clients (pf_producer * p);

/**
 * pf_producer_get_client_stats:
 *
 * Fills up to @max entries; returns the number of clients.
 */
PF_API unsigned int pf_producer_get_client_stats (pf_producer * p,
    pf_client_stats * stats, unsigned int max);

/**
 * pf_producer_get_unsent:
 *
 * Frames published to nobody (no consumer connected or all at their limit).
 */
PF_API uint64_t pf_producer_get_unsent (pf_producer * p);

#ifdef __cplusplus
}
#endif
#endif /* __PF_PRODUCER_H__ */
