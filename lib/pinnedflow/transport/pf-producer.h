/* pinnedflow: the producer end of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A producer listens on a unix socket path, accepts consumers, sends each
 * segment's fd once per consumer, then small FRAME messages, and tracks which
 * consumer holds which frame. It runs its own I/O thread: consumers are
 * accepted, releases read and dead consumers reclaimed even while nobody
 * publishes. pinnedshmsink and the dataflow bridge are both built on it.
 *
 * Delivery (docs/protocol.md, "Delivery"): each consumer has a policy, its
 * own request or else the producer's default from its liveness (live:
 * newest frame, not live: every frame; pf_producer_set_live()).
 *  - newest frame (leaky): a consumer that holds max_client_frames frames,
 *    or whose socket is full, is skipped (a drop, counted with its reason);
 *  - every frame (reliable): never skipped by a publisher that first calls
 *    pf_producer_wait_ready(), which waits until every reliable consumer can
 *    take one more frame; frames its full socket cannot take are queued.
 *    One that blocks the wait longer than the reliable timeout is demoted to
 *    newest frame, or disconnected (pf_producer_set_reliable_timeout()),
 *    and reported (client_event). pf_producer_publish() itself never blocks.
 *  - a live stream is paced by itself, not by its slowest consumer: the
 *    waits for every-frame consumers spend from a lag budget
 *    (pf_producer_set_live_max_lag()); the one that overspends it is
 *    demoted (or disconnected) and its process gets newest-frame delivery
 *    for 60 s, whenever it reconnects.
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
extern "C"
{
#endif

/* Since: 0.1 */
  typedef struct pf_producer pf_producer;

/* Since: 0.1 */
  typedef struct
  {
    uint32_t client_id;         /* producer-local, never reused */
    int32_t pid;                /* SO_PEERCRED at connect time */
    uint32_t uid;
    uint32_t gid;
    int error;                  /* on disconnect: 0 (hang-up) or -errno */
    char reason[128];           /* on disconnect: human readable */
    uint32_t requested;         /* enum pf_delivery the consumer asked for */
    uint32_t delivery;          /* enum pf_delivery in force (1 or 2) */
  } pf_client_info;

/* Why a frame skipped a consumer (pf_client_stats, pf_client_event).
 * Since: 0.1
 */
  enum pf_drop_reason
  {
    PF_DROP_NONE = 0,
    /* newest frame: it holds max_client_frames frames */
    PF_DROP_LIMIT = 1,
    /* newest frame: its socket is full, or control messages wait for it */
    PF_DROP_SOCKET_FULL = 2,
    /* every frame: it holds max_client_frames frames and the publisher did
     * not wait (pf_producer_wait_ready()) or its wait failed */
    PF_DROP_NOT_READY = 3,
  };

/* Since: 0.1 */
  typedef struct
  {
    uint32_t client_id;
    int32_t pid;
    uint32_t uid;
    uint32_t held;              /* frames held right now */
    uint64_t frames_sent;
    uint64_t frames_released;
    uint64_t frames_dropped;    /* skipped, all reasons (sum of the three below) */
    uint64_t bytes_sent;        /* frame payload bytes made available */
    uint64_t dropped_limit;     /* PF_DROP_LIMIT */
    uint64_t dropped_socket;    /* PF_DROP_SOCKET_FULL */
    uint64_t dropped_not_ready; /* PF_DROP_NOT_READY */
    /* Delta frames (GstBuffer DELTA_UNIT) skipped because this consumer
     * waits for a key frame: after it connected, or after a drop. Not
     * drops: it could not have used them. */
    uint64_t frames_skipped_key;
    uint32_t requested;         /* enum pf_delivery asked for */
    uint32_t delivery;          /* enum pf_delivery in force */
    uint32_t demoted;           /* 1: demoted after the reliable timeout */
    /* Frames with a chunk in a device segment not sent to this consumer:
     * it did not ask for device segments (docs/protocol.md, 3.11). Not
     * drops: it could not have used them. */
    uint32_t frames_skipped_device;
    /* Rings read from its release doorbell (frame ring only), modulo
     * 2^32: about one per release while something waits for releases
     * (pf_producer_want_releases()), none otherwise (a consumer that
     * rings after every release is one from before issue 35). */
    uint32_t release_rings;
    uint32_t reserved;          /* 0 */
  } pf_client_stats;

/* pf_client_event.type
 * Since: 0.1
 */
  enum pf_client_event_type
  {
    /* Frames skipped this consumer. Rate-limited: the first drop is reported
     * at once, later ones at most once per second per consumer, @dropped
     * counting every drop since the previous report. */
    PF_CLIENT_EVENT_DROPPED = 1,
    /* An every-frame consumer blocked pf_producer_wait_ready() past the
     * reliable timeout and now gets newest-frame delivery (told with a
     * STREAM, PF_STREAM_DEMOTED). */
    PF_CLIENT_EVENT_DEMOTED = 2,
    /* The same, with PF_RELIABLE_TIMEOUT_DISCONNECT: it was disconnected
     * (client_disconnected follows, error -ETIMEDOUT). */
    PF_CLIENT_EVENT_TIMED_OUT = 3,
    /* A consumer's HELLO came while max_clients consumers were connected: it
     * got a REFUSE (its connect fails with -EUSERS) and was closed. It was
     * never connected: no client_connected/_disconnected. */
    PF_CLIENT_EVENT_REFUSED = 4,
  };

/* Since: 0.1 */
  typedef struct
  {
    int type;                   /* enum pf_client_event_type */
    uint32_t client_id;
    int32_t pid;
    uint32_t delivery;          /* in force after the event */
    int reason;                 /* DROPPED: enum pf_drop_reason of the latest */
    uint64_t dropped;           /* DROPPED: drops since the previous report */
    uint64_t frames_dropped;    /* this consumer's drops so far, all reasons */
    uint64_t last_seq;          /* DROPPED: the frame of the latest drop */
    uint64_t blocked_ns;        /* DEMOTED, TIMED_OUT: how long it blocked */
    char message[160];          /* one readable sentence */
  } pf_client_event;

/* What happens to an every-frame consumer past the reliable timeout.
 * Since: 0.1
 */
  enum pf_reliable_action
  {
    PF_RELIABLE_TIMEOUT_DEMOTE = 0,     /* newest frame from then on */
    PF_RELIABLE_TIMEOUT_DISCONNECT = 1, /* the connection is closed */
  };

#define PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS 5000
#define PF_PRODUCER_DEFAULT_LIVE_MAX_LAG_MS 100

/* Callbacks run without any producer lock held, on the I/O thread (or in
 * pf_producer_close()'s caller; client_event also on the thread of
 * pf_producer_publish(), _wait_ready() or _reclaim_stalled() that saw the
 * event): they may call any pf_producer_* function, publish, drop
 * segments, even close the producer.
 * Since: 0.1
 */
  typedef struct
  {
    /* Every consumer that received the frame released it, or went away.
     * Called once per published frame that reached at least one consumer,
     * from the I/O thread, from pf_producer_close(), or on the thread of
     * pf_producer_publish(), pf_producer_wait_ready() or
     * pf_producer_want_releases(), which take the releases consumers
     * published in their release rings. A consumer with a frame ring
     * wakes the I/O thread for a release only while something waits for
     * one (pf_producer_wait_ready() blocked, pf_producer_want_releases()),
     * while it lags (more than half max_client_frames held at a publish)
     * and after an EOS: otherwise its releases are taken at the next publish, or by the
     * I/O thread once nothing was published for 500 ms (issue 35). */
    void (*frame_released) (void *user_data, void *frame_token);
    void (*client_connected) (void *user_data, const pf_client_info * info);
    void (*client_disconnected) (void *user_data, const pf_client_info * info);
    void *user_data;
    /* Drops, demotions, reliable timeouts (pf_client_event). Runs on the
     * thread that saw it: the publisher (after pf_producer_publish() or
     * pf_producer_wait_ready() unlocked) or the I/O thread. */
    void (*client_event) (void *user_data, const pf_client_event * event);
  } pf_producer_callbacks;

/* Since: 0.1 */
  typedef struct
  {
    const char *socket_path;    /* required; a path, never abstract */
    unsigned int perms;         /* socket file mode, e.g. 0600 */
    unsigned int max_client_frames;     /* >= 1 */
    pf_producer_callbacks callbacks;
    /* The stream is live (default delivery newest frame) or not (every
     * frame); pf_producer_set_live() changes it later. */
    int live;
    /* How long an every-frame consumer may block pf_producer_wait_ready():
     * 0: PF_PRODUCER_DEFAULT_RELIABLE_TIMEOUT_MS; -1: no bound (only
     * pf_producer_set_flushing() ends the wait). */
    int reliable_timeout_ms;
    int reliable_action;        /* enum pf_reliable_action */
    /* Consumers served at once (past the handshake); 0: no limit (up to the
     * 256 connections of the reference producer). One more is refused. */
    unsigned int max_clients;
  } pf_producer_config;

/**
 * pf_producer_new:
 *
 * Binds and listens on config->socket_path with config->perms. A stale
 * socket file (nobody accepts on it) is removed first; a live one makes this
 * fail with -EADDRINUSE. Starts the I/O thread.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_new (const pf_producer_config * config,
      pf_producer ** out);
/**
 * pf_producer_ref:
 *
 * Returns: @p, with one more reference.
 *
 * Since: 0.1
 */
  PF_API pf_producer *pf_producer_ref (pf_producer * p);
/**
 * pf_producer_unref:
 *
 * Drops a reference; the last one closes the producer (pf_producer_close())
 * and frees it.
 *
 * Since: 0.1
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
 *
 * Since: 0.1
 */
  PF_API void pf_producer_close (pf_producer * p);

/**
 * pf_producer_set_caps:
 *
 * Sets the caps every later frame belongs to; sent to connected consumers
 * now and to later ones on connect. -EMSGSIZE if too long.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_caps (pf_producer * p, const char *caps);

/**
 * pf_producer_set_caps_full:
 * @caps: what consumers that asked for device segments get
 * @host_caps: (nullable): what the others get, or NULL (@caps for all)
 *
 * pf_producer_set_caps() with other caps for the consumers that did not ask
 * for device segments (HELLO bit DEVICE_SEGMENTS): a device stream whose
 * producer gives them host frames (one download per frame,
 * pf_domains_download ()) sends them the caps of those host frames, e.g.
 * without the memory:PinnedflowCUDA feature, so a host-only consumer
 * negotiates what it will get. One caps number for both. -EINVAL, -EMSGSIZE
 * as pf_producer_set_caps().
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_caps_full (pf_producer * p, const char *caps,
      const char *host_caps);

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
 * sends the frame to every consumer that can take it (Delivery, above); an
 * every-frame consumer's frame that its socket cannot take now is queued.
 * A consumer waiting for a key frame (after it connected or missed a frame)
 * skips frames flagged DELTA_UNIT (0x2000). The producer also sets caps_seq
 * (to the caps of the last pf_producer_set_caps()). Never blocks on a
 * consumer; drops are reported through client_event after unlocking, on
 * this thread.
 *
 * Returns: how many consumers got the frame (frame_released follows later
 * iff > 0), or a negative errno: -EINVAL, the frame breaks a rule (a chunk
 * outside its segment, or a FRAME's rules, docs/protocol.md: chunks,
 * planes, video fields; pf_producer_get_error() says which), -EPIPE
 * (closed), -ENOMEM.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_publish (pf_producer * p,
      const pf_producer_frame * frame,
      pf_segment * const *segments, void *token);

/* One variant of a frame published in several memory domains
 * (pf_producer_publish_domains()): its chunks, their segments and the
 * token frame_released hands back once every consumer that got this
 * variant released it.
 * Since: 0.1
 */
  typedef struct
  {
    const pf_producer_frame *frame;
    pf_segment *const *segments;
    void *token;
  } pf_producer_variant;

/* A device domain some connected consumer wants
 * (pf_producer_get_device_domains()).
 * Since: 0.1
 */
  typedef struct
  {
    uint8_t uuid[16];           /* the device (cuDeviceGetUuid) */
    uint32_t n_clients;         /* consumers that asked for it */
  } pf_producer_domain;

/* Variants of one frame pf_producer_publish_domains() takes, at most. */
#define PF_PRODUCER_MAX_VARIANTS 8

/**
 * pf_producer_publish_domains:
 * @variants: @n_variants variants of one frame: [0] the host (default)
 *   variant, each later one with every chunk in device segments of one
 *   device (a device not named twice)
 * @n_variants: 1 .. %PF_PRODUCER_MAX_VARIANTS
 * @sent: (out) (optional): @n_variants entries, the consumers that got
 *   each variant: frame_released follows for variants[i].token iff
 *   sent[i] > 0
 *
 * pf_producer_publish() of one frame in several memory domains (issue
 * 32, "one copy per domain"; docs/protocol.md 3.12): one frame number,
 * each consumer gets the variant in the domain it asked for
 * (pf_consumer_set_domain()), else variants[0]. Delivery, drops and
 * key-frame waits as pf_producer_publish().
 *
 * Returns: how many consumers got the frame, all variants together, or
 * -EINVAL (a variant breaks publish's rules, or a device variant is not
 * on one device: pf_producer_get_error() says which), -EPIPE, -ENOMEM.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_publish_domains (pf_producer * p,
      const pf_producer_variant * variants, unsigned int n_variants, int *sent);

/**
 * pf_producer_publish_domains_full:
 * @device_default: the variant a consumer that asked for device segments
 *   but named no domain gets (0: the host one, as
 *   pf_producer_publish_domains(); a device stream's own variant, so that
 *   such consumers keep getting its device frames)
 *
 * pf_producer_publish_domains() with @device_default.
 *
 * Returns: as pf_producer_publish_domains(); -EINVAL also for
 * @device_default >= @n_variants.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_publish_domains_full (pf_producer * p,
      const pf_producer_variant * variants, unsigned int n_variants,
      unsigned int device_default, int *sent);

/**
 * pf_producer_get_host_domain_clients:
 * @device_uuid: the device of a device stream
 *
 * The connected consumers that would get the host variant of a device
 * stream's frame on @device_uuid (pf_producer_publish_domains_full() with
 * that frame as @device_default): those that did not ask for device
 * segments, and those that named another device. What is worth
 * downloading a device frame for. Any thread.
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_producer_get_host_domain_clients (pf_producer * p,
      const uint8_t device_uuid[16]);

/**
 * pf_producer_get_host_domain_clients_full:
 * @device_uuids: the devices a device stream's frame will be published on
 *   (its own device first, then those it was copied to)
 * @n_uuids: how many, at least 1
 *
 * pf_producer_get_host_domain_clients() for a frame in several devices:
 * the connected consumers that did not ask for device segments, and those
 * that named a device not in @device_uuids. Any thread.
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_producer_get_host_domain_clients_full (pf_producer *
      p, const uint8_t (*device_uuids)[16], unsigned int n_uuids);

/**
 * pf_producer_get_device_domains:
 * @domains: (out) (optional): up to @max entries
 *
 * The device domains the connected consumers asked for (a DOMAIN after a
 * HELLO with device segments): what is worth copying a host frame into
 * before pf_producer_publish_domains(). Any thread.
 *
 * Returns: the number of distinct devices (may exceed @max).
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_producer_get_device_domains (pf_producer * p,
      pf_producer_domain * domains, unsigned int max);

/**
 * pf_producer_get_error:
 *
 * Why pf_producer_publish() last refused a frame with -EINVAL, in the
 * words a consumer would have used ("" if it never did; docs/design.md,
 * "Error text"). Read it on the thread that publishes, before its next
 * publish.
 *
 * Since: 0.1
 */
  PF_API const char *pf_producer_get_error (pf_producer * p);

/**
 * pf_producer_send_eos:
 *
 * Sends EOS to every consumer.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_send_eos (pf_producer * p);

/**
 * pf_producer_set_live:
 *
 * Whether the stream is live. Consumers that asked for the default delivery
 * switch with it (live: newest frame; not live: every frame) and are told
 * with a STREAM message; a demoted consumer stays newest frame. A
 * pinnedshmsink calls it once it learns its upstream's liveness.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_live (pf_producer * p, int live);

/**
 * pf_producer_set_segment:
 * @segment: the segment later frames belong to, or NULL for none
 *
 * Sent to every consumer (STREAM message) now and on connect, before the
 * next frame. A non-live stream's timestamps keep their meaning against it.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_segment (pf_producer * p,
      const pf_stream_segment * segment);

/**
 * pf_producer_set_reliable_timeout:
 * @timeout_ms: 0: the default (5000 ms); -1: no bound; else ms
 * @action: enum pf_reliable_action
 *
 * The bound of pf_producer_wait_ready() per every-frame consumer: one that
 * keeps it waiting this long (no release in between) is demoted or
 * disconnected, reported through client_event. Any time, any thread.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_reliable_timeout (pf_producer * p, int timeout_ms,
      int action);

/**
 * pf_producer_set_live_max_lag:
 * @max_lag_ms: -1: no budget (strict lossless delivery from a live
 *   source); 0: never wait in a live stream; else ms
 *
 * The lag budget of a live stream (PF_PRODUCER_DEFAULT_LIVE_MAX_LAG_MS
 * from pf_producer_new()): what pf_producer_wait_ready() may wait for
 * every-frame consumers, all of them together, in a live stream; it refills
 * at 1/32 of real time. The wait that would overspend it demotes (or
 * disconnects: the reliable timeout's action) the consumers it waits for,
 * reported as the reliable timeout is (client_event); a process demoted so
 * gets newest-frame delivery on every connection for the next 60 s (keyed
 * on its SO_PEERCRED uid and pid). With -1, every-frame consumers pace a
 * live stream as a non-live one, each wait bounded by the reliable timeout
 * only: the others lose the frames the source makes meanwhile. Not live:
 * no effect. Any time, any thread.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_set_live_max_lag (pf_producer * p, int max_lag_ms);

/**
 * pf_producer_wait_ready:
 * @timeout_ms: -1: until ready; 0: check once (and apply the reliable
 *   timeout to consumers overdue); else at most that long
 *
 * Waits until every every-frame consumer can take one more frame (holds
 * fewer than max_client_frames), so that the next pf_producer_publish()
 * skips none. Consumers past the reliable timeout (or, in a live stream,
 * the lag budget: pf_producer_set_live_max_lag()) are demoted or
 * disconnected on the way (client_event, dispatched before returning).
 *
 * Returns: 0 ready; -ETIMEDOUT (@timeout_ms passed); -ECANCELED (flushing,
 * pf_producer_set_flushing()); -EPIPE (closed).
 *
 * Since: 0.1
 */
  PF_API int pf_producer_wait_ready (pf_producer * p, int timeout_ms);

/**
 * pf_producer_reclaim_stalled:
 *
 * For a publisher whose frame memory is exhausted (every slot held):
 * disconnects every consumer, whatever its delivery, that holds frames and
 * has released none for the reliable timeout (no bound: nothing happens),
 * which gives its frames back. Each is reported (client_event
 * PF_CLIENT_EVENT_TIMED_OUT, then client_disconnected with -ETIMEDOUT).
 *
 * Returns: how many were disconnected.
 *
 * Since: 0.1
 */
  PF_API int pf_producer_reclaim_stalled (pf_producer * p);

/**
 * pf_producer_want_releases:
 * @want: 1 when a thread of the caller is about to sleep until a frame is
 *   released (frame_released), 0 when that wait ended
 *
 * A consumer with a frame ring rings the producer's release doorbell only
 * while something waits for a release (docs/protocol.md, 3.10): a
 * publisher takes the releases itself, so a producer that keeps
 * publishing is not woken once per frame for them. pf_producer_wait_ready()
 * says so itself; any other wait for frame_released (a pool of frame
 * slots with none free, a thread waiting for a frame to come back) must
 * call this with 1 before it sleeps and with 0 when it stops waiting, one
 * 0 for each 1 (the calls count). The call with 1 also takes every release
 * published so far, so frame_released may run on the caller's thread
 * before it returns: call it without a lock that frame_released takes, and
 * look again for what was released before sleeping. Releases published
 * after it wake the I/O thread, which runs frame_released.
 *
 * Returns: 0, or -EINVAL (@p NULL).
 *
 * Since: 0.1
 */
  PF_API int pf_producer_want_releases (pf_producer * p, int want);

/**
 * pf_producer_set_flushing:
 *
 * While set, pf_producer_wait_ready() returns -ECANCELED at once, waits in
 * progress included (a sink's unlock). Clear it to wait again (unlock_stop).
 *
 * Since: 0.1
 */
  PF_API void pf_producer_set_flushing (pf_producer * p, int flushing);

/**
 * pf_producer_get_n_clients:
 *
 * Returns: the number of consumers past the handshake (connections still
 * waiting for their HELLO are not counted).
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_producer_get_n_clients (pf_producer * p);

/**
 * pf_producer_get_client_stats:
 *
 * Fills up to @max entries; returns the number of clients.
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_producer_get_client_stats (pf_producer * p,
      pf_client_stats * stats, unsigned int max);

/**
 * pf_producer_get_unsent:
 *
 * Frames published to nobody (no consumer connected or all at their limit).
 *
 * Since: 0.1
 */
  PF_API uint64_t pf_producer_get_unsent (pf_producer * p);

#ifdef __cplusplus
}
#endif
#endif                          /* __PF_PRODUCER_H__ */
