/* pinnedflow: the producer's internals, shared by its files
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf-producer.c: the producer object, announced segments, the public API.
 * pf-producer-io.c: its I/O thread, the deferred callbacks and its end
 * (close, free). pf-producer-client.c: one consumer's state machine.
 * pf-producer-pacing.c: a live stream's lag budget and penalties.
 * pf-producer-domains.c: one frame in several memory domains
 * (pf_producer_publish_domains(), issue 32).
 * Calls go one way only, down this list (a file calls those below it,
 * never one above): pf-producer-domains.c -> pf-producer.c -> pf-producer-io.c ->
 * pf-producer-client.c -> pf-producer-pacing.c; what a lower file needs of
 * the producer (the event lists, the wake-up) is inline here.
 * Not installed. Every struct below is guarded by pf_producer.lock (see
 * pf-producer.c for the lock order); the functions declared here are called
 * with it held unless said otherwise.
 */
#ifndef __PF_PRODUCER_PRIVATE_H__
#define __PF_PRODUCER_PRIVATE_H__

#include <pinnedflow/pf-producer.h>

#include "pf-protocol-private.h"
#include "pf-socket-private.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

/* Control messages (never dropped) waiting for a full socket to drain. A
 * consumer that lets this many pile up is disconnected. */
#define MAX_CTL_QUEUE 256
/* pframes made with the producer (2 x max_client_frames, at most this) */
#define SPARE_FRAMES_MAX 512
#define LISTEN_BACKLOG 16
/* Connections beyond this are accepted and closed at once. */
#define MAX_CLIENTS 256
/* A connection that has not sent its HELLO by then is closed, so that idle
 * connections cannot take every one of the MAX_CLIENTS places. */
#define HANDSHAKE_TIMEOUT_NS UINT64_C (5000000000)

/* The release doorbell on demand (pf-producer-release.c): with a client
 * on a ring and nothing published for this long, the I/O thread takes the
 * releases and asks for the doorbell until the next publish.
 * PINNEDFLOW_RELEASE_IDLE_MS in the environment changes it (0: never; the
 * tests that must see a release come through the doorbell alone). */
#define RELEASE_IDLE_NS UINT64_C (500000000)

/* GstBufferFlags' DELTA_UNIT: a frame that is not a key frame. */
#define PF_BUFFER_FLAG_DELTA_UNIT 0x2000u
/* Drops of one client are reported at most this often (the first at once). */
#define DROP_REPORT_INTERVAL_NS UINT64_C (1000000000)

/* Live pacing (pf-producer-pacing.c): a live stream's lag budget refills
 * at 1/2^LAG_REFILL_SHIFT of real time (1/32: about 3 %). */
#define LAG_REFILL_SHIFT 5
/* A consumer process (uid and pid) demoted in a live stream gets
 * newest-frame delivery on every connection for this long after. */
#define LIVE_PENALTY_NS UINT64_C (60000000000)
/* ... remembered for at most this many processes (the oldest forgotten) */
#define MAX_PENALTIES 64

/* A process demoted in a live stream (pf-producer-pacing.c). */
struct penalty
{
  uint32_t uid;
  int32_t pid;
  uint64_t until;               /* monotonic ns; 0: a free entry */
};

#define TOKEN_WAKE UINT64_C (0)
#define TOKEN_LISTEN UINT64_MAX
/* client id | TOKEN_RELEASES: that client's release doorbell */
#define TOKEN_RELEASES (UINT64_C (1) << 62)

enum client_state
{
  CLIENT_HANDSHAKE,             /* accepted, waiting for its HELLO */
  CLIENT_ACTIVE,                /* gets segments, caps and frames */
  CLIENT_DEAD,                  /* to be reaped by the I/O thread */
};

/* A published frame that at least one client holds. Once released it
 * carries its own release callback (event_list.released) and is then kept
 * on p->spare for the next publish: no allocation per frame (and
 * pf_producer_new() makes 2 x max_client_frames of them up front, so that
 * a new high of frames out allocates none either). */
struct pframe
{
  uint64_t seq;
  void *token;
  unsigned int holders;
  struct pframe *prev, *next;
};

struct held
{
  uint64_t seq;
  struct pframe *frame;
};

struct ctlmsg
{
  struct ctlmsg *next;
  int fd;                       /* our own dup, or -1 */
  size_t len;
  uint8_t data[];
};

struct client
{
  /* What publish and a RELEASE touch, first (issue 13: each frame starts
   * with cold caches, so fewer lines touched is less latency). */
  enum client_state state;
  int fd;
  int need_key;                 /* skips DELTA_UNIT frames until a key frame */
  int wants_device;             /* its HELLO set PF_HELLO_DEVICE_SEGMENTS */
  int has_domain;               /* it sent a DOMAIN: domain_uuid */
  uint8_t domain_uuid[16];
  unsigned int n_held, cap_held;
  struct held *held;            /* grows up to max_client_frames */
  uint64_t *segs;               /* segment ids announced to this client */
  unsigned int n_segs, cap_segs;
  struct ctlmsg *q_head, *q_tail;
  /* The frame ring (PF_MSG_FRAME_RING), or NULL: FRAMEs on the socket. */
  struct pf_frame_ring *ring;
  uint32_t ring_mask;
  uint64_t ring_w;              /* entries published (the shared write_seq
                                 * is only written, never read back) */
  int doorbell;                 /* our end of its doorbell (pf-doorbell-private.h), or -1 */
  struct pf_release_ring *rel;  /* in the same memfd: the consumer writes */
  uint64_t rel_r;               /* releases taken from it */
  uint64_t rel_rings;           /* rings read from its release doorbell,
                                 * all told (client_read_releases ()) */
  int rel_doorbell;             /* our end: the consumer rings it, or -1 */
  int held_want;                /* its release_want set because it holds
                                 * more than half its limit after a publish
                                 * (pf-producer-release.c) */
  uint32_t ctl_sent;            /* messages put on the socket (sent or
                                 * queued), the HELLO included */
  uint64_t blocked_since;       /* ns a waiter found it full; 0 after a release */
  uint64_t progress_ns;         /* its last release, or when it began to hold */
  struct client *next;
  /* stats.delivery mirrors info.delivery (client_update_stream() sets
   * both): the per-frame paths read it here, next to the counters they
   * update, and info stays cold */
  pf_client_stats stats;
  pf_client_info info;
  /* Delivery: info.requested from the HELLO, info.delivery in force. */
  int demoted;                  /* after the reliable timeout: for good */
  unsigned int q_len;
  int want_out;
  uint64_t hello_deadline;      /* CLIENT_HANDSHAKE: monotonic ns */
  int connected_notified;
  /* Drop reports (rate-limited) */
  uint64_t drops_unreported;
  uint64_t next_drop_report;    /* ns */
};

/* A segment announced by this producer: attached to the pf_segment. */
struct pseg
{
  pf_producer *p;               /* a reference */
  uint64_t id;
  uint64_t size;
  int fd;                       /* our dup; -1 once the producer closed */
  /* a device segment (pf_segment_get_device ()): its DEVICE_SEGMENT_ADD,
   * checked when the segment was first published; sent only to the
   * clients that asked (client.wants_device) */
  int is_device;
  struct pf_msg_device_segment_add dmsg;
  struct pseg *prev, *next;
};

/* Deferred callback. */
struct event
{
  enum
  { EV_CONNECTED, EV_DISCONNECTED, EV_CLIENT_EVENT } type;
  pf_client_info info;
  pf_client_event cev;          /* EV_CLIENT_EVENT */
  struct event *next;
};

struct pf_producer
{
  atomic_int refcount;
  pthread_mutex_t lock;
  /* What publish and wait_ready touch, next to the lock (issue 13: fewer
   * cache lines per frame). */
  int closed;
  unsigned int max_client_frames;
  /* 1: pf_producer_wait_ready() may return 0 without the lock (not
   * flushing or closed, no every-frame client at its limit). Set by a
   * wait_ready that found so under the lock; cleared, under the lock, by
   * whatever can change it: a publish that filled a client, a delivery
   * change, flushing, close. Read without the lock. */
  atomic_int ready_fast;
  uint32_t caps_seq;
  struct client *clients;
  /* publish's last segment and its pseg (lookup_psegs(), pf-producer.c):
   * an identity key only, cleared by pseg_destroy() */
  const pf_segment *cached_seg;
  struct pseg *cached_pseg;
  struct pframe *frames;
  struct pframe *spare;         /* released pframes, for reuse */
  uint64_t seq;
  uint64_t unsent;

  char *path;
  pf_socket_file file;
  unsigned int max_clients;     /* 0: no limit */
  pf_producer_callbacks cb;
  uint64_t session_id;

  int listen_fd, epoll_fd, wake_fd;
  int listen_paused;            /* out of fds: accept after a reap */
  uint64_t listen_resume_ns;    /* ... or at this time */
  pthread_t thread;
  int thread_started;
  int quit;

  unsigned int n_clients;       /* in the list, any state */
  uint32_t next_client_id;
  struct pseg *segs;
  char *caps;
  char *host_caps;              /* NULL, or what clients that did not ask for
                                 * device segments get (pf_producer_set_caps_full) */

  /* Delivery */
  pthread_cond_t cond;          /* CLOCK_MONOTONIC: a client may have room */
  unsigned int n_waiters;       /* in pf_producer_wait_ready() */
  /* The release doorbell on demand (pf-producer-release.c): the waits for
   * a release (a blocked wait_ready, pf_producer_want_releases (), the
   * idle I/O thread); while not 0, every ring's release_want is set */
  unsigned int want_releases;
  int idle_want;                /* the I/O thread's one, until a publish */
  uint64_t last_publish_ns;     /* monotonic ns of the last publish */
  uint64_t publish_gap_ns;      /* running mean of the gaps between them */
  uint64_t idle_scan_ns;        /* ... and of the last idle rescan */
  uint64_t idle_ns;             /* RELEASE_IDLE_NS, or the environment's
                                 * PINNEDFLOW_RELEASE_IDLE_MS; 0: never */
  int flushing;
  int live;
  int reliable_timeout_ms;      /* -1: no bound */
  int reliable_action;
  /* Live pacing (pf-producer-pacing.c): the lag budget of every-frame
   * consumers in a live stream (-1: none, strict), what is spent of it
   * (as of lag_at) and the processes demoted lately. */
  int live_max_lag_ms;
  uint64_t lag_ns, lag_at;
  struct penalty penalties[MAX_PENALTIES];
  int have_segment;
  pf_stream_segment segment;

  /* Why pf_producer_publish () last refused a frame (pf_producer_get_error
   * (), "" before): written under the lock, by the publishing thread */
  char error[256];
};

/* Why client_reliable_timeout() is called. */
enum reliable_why
{
  RELIABLE_TIMEOUT,             /* one wait past the reliable timeout */
  RELIABLE_LIVE_LAG,            /* a live stream's lag budget spent */
};

struct event_list
{
  struct event *head, *tail;
  struct pframe *released, *released_tail;      /* in release order */
};

/* ---- event lists and the wake-up: inline, so that the files below
 * pf-producer.c (pf-producer-io.c, pf-producer-client.c) need not call
 * back up into it ---- */

/* A new entry at the end of @l, or NULL (out of memory: the notification
 * is lost). */
static inline struct event *
producer_append_event (struct event_list *l, int type)
{
  struct event *e = calloc (1, sizeof (*e));

  if (e == NULL)
    return NULL;
  e->type = type;
  if (l->tail)
    l->tail->next = e;
  else
    l->head = e;
  l->tail = e;
  return e;
}

/* Queues a client_connected/_disconnected callback for after unlocking. */
static inline void
producer_push_event (struct event_list *l, int type,
    const pf_client_info * info)
{
  struct event *e = producer_append_event (l, type);

  if (e != NULL)
    e->info = *info;
}

/* Queues a client_event callback. */
static inline void
producer_push_client_event (struct event_list *l, const pf_client_event * cev)
{
  struct event *e = producer_append_event (l, EV_CLIENT_EVENT);

  if (e != NULL)
    e->cev = *cev;
}

/* Wakes the I/O thread (it reaps dead clients, re-reads deadlines). */
static inline void
producer_wake (pf_producer * p)
{
  uint64_t one = 1;
  ssize_t r;

  if (p->wake_fd >= 0)
    r = write (p->wake_fd, &one, sizeof (one));
  (void) r;
}

/* ---- pf-producer.c ---- */

/* The announced segment of each of @n @segments in @ps (p->lock held; it
 * is dropped and taken again on a miss): 0 or a negative errno. */
int producer_lookup_psegs (pf_producer * p, unsigned int n,
    pf_segment * const *segments, struct pseg **ps);
/* After the lookups (p->lock held): -EPIPE if closed, else 0 with *@now
 * the clock and the releases taken (release_publish ()). */
int producer_publish_start (pf_producer * p, uint64_t * now);
/* Each chunk of @frame inside the segment @ps names: 0 with *@total its
 * bytes, or -EINVAL with p->error set. */
int producer_chunks_check (pf_producer * p, const pf_producer_frame * frame,
    struct pseg *const *ps, uint64_t * total);

/* ---- pf-producer-io.c ---- */

/* The I/O thread (pthread_create() argument: @data is the producer); it
 * takes p->lock itself. */
void *io_thread (void *data);
/* Without p->lock: runs the callbacks collected in @l, then gives the
 * released pframes back to p->spare (under the lock). */
void io_dispatch_events (pf_producer * p, struct event_list *l);
/* Without p->lock, on the last reference: pf_producer_close(), then frees
 * @p. */
void io_producer_free (pf_producer * p);

/* ---- pf-producer-client.c ---- */

struct client *client_new (pf_producer * p, int fd);
/* Marks @c dead with a reason (the first one wins); the I/O thread or
 * pf_producer_close() reaps it. */
void client_fail (pf_producer * p, struct client *c, int error,
    const char *fmt, ...) __attribute__((format (printf, 4, 5)));
int client_flush (pf_producer * p, struct client *c);
int client_send_ctl (pf_producer * p, struct client *c, const void *buf,
    size_t len, int fd);
void client_forget_seg (pf_producer * p, struct client *c, uint64_t id);
void client_send_caps (pf_producer * p, struct client *c);
void client_reap (pf_producer * p, struct client *c, struct event_list *ev);
void client_read (pf_producer * p, struct client *c, struct event_list *ev);
/* @c released @seq: checked (a frame @c holds), then the frame loses a
 * holder; the last one gives it back (@ev). */
void client_handle_release (pf_producer * p, struct client *c, uint64_t seq,
    struct event_list *ev);
/* The releases @c published in its release ring (pf-producer-release.c):
 * after emptying its doorbell (the I/O thread), or as they are (a
 * publisher). */
void client_read_releases (pf_producer * p, struct client *c,
    struct event_list *ev);
void client_take_releases (pf_producer * p, struct client *c,
    struct event_list *ev);
/* The release doorbell on demand (pf-producer-release.c). @delta +1: a
 * wait for a release begins: the rings' release_want set (on the first),
 * then every ring's releases taken (@ev); -1: it ended (cleared on the
 * last). */
void release_want (pf_producer * p, int delta, struct event_list *ev);
/* The I/O thread, each round: ms until the producer counts as idle (no
 * publish for RELEASE_IDLE_NS with a client on a ring), 0 when it is
 * (release_idle () then takes the releases and asks for the doorbell;
 * idle already, it takes them again every RELEASE_IDLE_NS while frames
 * are held), -1: never. */
int release_idle_ms (pf_producer * p, uint64_t * now);
void release_idle (pf_producer * p, struct event_list *ev);
/* The end of a stream (an EOS sent): idle at once, no publish is coming
 * to take the last releases. */
void release_idle_now (pf_producer * p, struct event_list *ev);
/* A publish: the idle want (if any) ends, and the I/O thread is woken
 * to count from now again. */
void release_publish (pf_producer * p, uint64_t now);
/* After a publish reached @c: its release doorbell wanted while it holds
 * more than half of max_client_frames (a memory the producer's
 * application waits for, unseen by us, may be running out), not after. */
void release_held (pf_producer * p, struct client *c, struct event_list *ev);
int client_offer_frame (pf_producer * p, struct client *c,
    const uint8_t * buf, size_t len, struct pseg *const *ps,
    unsigned int n_chunks, struct pframe *f, uint64_t bytes,
    uint32_t buffer_flags, uint64_t now, struct event_list *ev);
/* Recomputes the delivery in force; sends a STREAM when it changed or
 * @force. */
void client_update_stream (pf_producer * p, struct client *c, int force);
/* The reliable timeout (or, @why RELIABLE_LIVE_LAG, a live stream's lag
 * budget) hit @c (blocked for @blocked_ns): demote or disconnect it, as
 * p->reliable_action says; in a live stream its process is penalized
 * (pacing_penalize()). */
void client_reliable_timeout (pf_producer * p, struct client *c,
    uint64_t blocked_ns, int why, struct event_list *ev);
/* Disconnects @c (holding frames, no release for @stalled_ns) with
 * -ETIMEDOUT, reported as PF_CLIENT_EVENT_TIMED_OUT. */
void client_evict_stalled (pf_producer * p, struct client *c,
    uint64_t stalled_ns, struct event_list *ev);

/* ---- pf-producer-pacing.c ---- */

/* ns of the live lag budget left at @now; UINT64_MAX when it does not
 * apply (not live, or no budget: strict). */
uint64_t pacing_budget_left (pf_producer * p, uint64_t now);
/* A wait for every-frame consumers in a live stream lasted from @start to
 * @end: spent from the budget. */
void pacing_spend (pf_producer * p, uint64_t start, uint64_t end);
/* @c was demoted or disconnected in a live stream: its process gets
 * newest-frame delivery for LIVE_PENALTY_NS. */
void pacing_penalize (pf_producer * p, const struct client *c, uint64_t now);
/* 1 when @c's process was demoted in a live stream less than
 * LIVE_PENALTY_NS ago. */
int pacing_penalized (pf_producer * p, const struct client *c, uint64_t now);

#endif /* __PF_PRODUCER_PRIVATE_H__ */
