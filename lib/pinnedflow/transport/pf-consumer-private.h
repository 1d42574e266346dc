/* pinnedflow: the consumer's internals, shared by its three files
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf-consumer-segments.c: the segment table (SEGMENT_ADD, SEGMENT_REMOVE,
 * the budget of what stays mapped) and consumer_fail (), which ends a
 * connection and drops the table. pf-consumer.c: receiving (the socket,
 * the frame ring's consumer half through pf-ring-private.h, the doorbell,
 * delivery) and releasing, any thread. pf-consumer-connect.c: connecting,
 * the HELLO exchange, the retries until a producer listens, and the
 * consumer's life (made by connecting, unmade by the last unref).
 * Not installed.
 *
 * The calls go one way, down this list, never back up:
 *   pf-consumer-connect.c -> pf-consumer.c -> pf-consumer-segments.c
 * (pf-consumer-connect.c calls pf-consumer-segments.c too). Each file
 * declares below what it offers the files above it; none calls a file
 * above it, through this header or otherwise.
 *
 * Threads: see pf-consumer.c. The fields marked "receive thread only" are
 * touched by one thread at a time: the one that connects until the
 * consumer is returned, then the one that calls pf_consumer_receive ().
 */
#ifndef __PF_CONSUMER_PRIVATE_H__
#define __PF_CONSUMER_PRIVATE_H__

#include <pinnedflow/pf-consumer.h>

#include "pf-protocol-private.h"
#include "pf-socket-private.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* A release that cannot be sent for this long means a stuck producer
 * (SO_SNDTIMEO, set by pf-consumer-connect.c; reported by pf-consumer.c). */
#define SEND_TIMEOUT_MS 5000

struct cseg
{
  uint64_t wire_id;
  pf_segment *seg;
  /* a device segment: its device address here (imported), or refused
   * (not importable here: its frames are released unseen) */
  uint64_t device_base;
  int device_refused;
  struct cseg *next;
};

/* The fields every frame touches come first, together (issue 13: every
 * frame starts with cold caches at paced rates; they were spread over
 * five places in ~13 KiB, between the error text, the caps and the parsed
 * message), then the receive buffer, whose first 256 bytes a FRAME
 * fills, then what only the handshake, errors, caps and segments use. */
struct pf_consumer
{
  atomic_int refcount;
  int fd;
  /* 0, or the negative errno that ended it: written under the lock
   * (atomically, with the error text before it), read without it */
  int broken;
  int write_closed;             /* the producer hung up: no more releases,
                                 * but what it sent before is still read;
                                 * written as broken is */
  pthread_mutex_t lock;

  /* c->held_spin */
  atomic_flag held_spin;
  uint64_t *held;
  unsigned int n_held, cap_held;
  /* the release ring (in the frame ring's memfd; set once by the receiving
   * thread before any frame, so before any release) */
  struct pf_release_ring *rel;
  uint64_t rel_w;               /* releases published, under held_spin */
  int rel_doorbell;             /* -1 without a ring */
  /* the frame ring whose release_want says when to ring the release
   * doorbell (a producer that announced PF_RELEASE_RING_ON_DEMAND), or
   * NULL: after every release. Set with rel. */
  const struct pf_frame_ring *rel_want;

  uint32_t max_held;
  int v2;                       /* made by a _with() call */

  /* receive thread only */
  /* The frame ring (PF_MSG_FRAME_RING; NULL: FRAMEs on the socket) and
   * what orders it with the socket: ctl_recvd counts the packets read
   * from the socket, the HELLO included; a packet read while a ring entry
   * that precedes it is pending waits in the stash. */
  const struct pf_frame_ring *ring;     /* pf-ring-private.h */
  uint32_t ring_mask;
  uint64_t ring_r;
  int doorbell;                 /* the ring's doorbell (our end), or -1;
                                 * closed early if the producer closes its */
  unsigned int doorbell_owed;   /* entries taken, their rings not read */
  int wait_fd;                  /* what pf_consumer_get_fd() returns */
  uint32_t ctl_recvd;
  uint64_t last_seq;
  int have_seq;
  uint32_t caps_seq;
  int eos_seen;                 /* EOS was the last stream message */
  struct cseg *segs;
  pf_consumer_stats stats;
  pf_stream_info stream;        /* the producer's last STREAM */
  /* the packet received; a FRAME is read in place (see handle_packet) */
  union
  {
    uint8_t bytes[PF_MAX_MSG_SIZE];
    struct pf_msg_frame frame;
  } rbuf;

  /* a socket packet that a ring entry precedes (rare: see receive_event) */
  uint8_t *stash;
  size_t stash_len;
  int stash_fds[PF_SOCKET_MAX_RECV_FDS];
  unsigned int stash_n_fds;

  /* removed by the producer but still used by frames: they stay mapped, so
   * they count against the budget until the last frame lets go */
  struct cseg *retired;
  pf_consumer_budget budget;    /* with the defaults filled in */
  uint64_t session_id;
  uint32_t requested;           /* enum pf_delivery asked in our HELLO */
  /* device segments (receive thread only): asked for in our HELLO, how
   * they are imported, what was refused */
  int want_device;
  pf_consumer_device_import_func device_import;
  void *device_import_data;
  uint64_t device_skipped;
  uint32_t device_refused;
  char device_error[256];
  char error[256];
  char caps[PF_MAX_CAPS_LEN + 1];
  struct pf_msg msg;
};

/* ms since @start (CLOCK_MONOTONIC). */
static inline int
now_ms_since (const struct timespec *start)
{
  struct timespec now;

  clock_gettime (CLOCK_MONOTONIC, &now);
  return (int) ((now.tv_sec - start->tv_sec) * 1000 +
      (now.tv_nsec - start->tv_nsec) / 1000000);
}

/* Remaining ms of @timeout_ms since @start; -1 means forever. */
static inline int
remaining (int timeout_ms, const struct timespec *start)
{
  int left;

  if (timeout_ms <= 0)
    return timeout_ms < 0 ? -1 : 0;
  left = timeout_ms - now_ms_since (start);
  return left > 0 ? left : 0;
}

/* ---- pf-consumer-segments.c ---- */

/* Ends the connection (receive thread): records the first error (under
 * c->lock), shuts the socket down, drops the segment table. Returns the
 * error to report. */
int consumer_fail (pf_consumer * c, int err, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));
/* Drops the segment table, the retired segments included (frames out
 * keep their own references). */
void consumer_drop_segments (pf_consumer * c);
/* Drops the removed segments no frame uses any more (receive thread). */
void consumer_prune_retired (pf_consumer * c);
/* Fills in the defaults of a budget's zero fields. */
void consumer_budget_fill_defaults (pf_consumer_budget * b);
/* The announced segment of wire id @wire_id, or NULL. */
struct cseg *consumer_find_seg (pf_consumer * c, uint64_t wire_id);
/* SEGMENT_ADD (owns @fd) and SEGMENT_REMOVE: 0, or what consumer_fail ()
 * returned. */
int consumer_handle_segment_add (pf_consumer * c,
    const struct pf_msg_segment_add *m, int fd);
int consumer_handle_segment_remove (pf_consumer * c, uint64_t wire_id);
/* DEVICE_SEGMENT_ADD (owns @fd): 0 (imported or refused, see struct cseg),
 * or what consumer_fail () returned. */
int consumer_handle_device_segment_add (pf_consumer * c,
    const struct pf_msg_device_segment_add *m, int fd);

/* ---- pf-consumer.c ---- */

/* Waits until @fd is readable (1), @timeout_ms passed (0), or @cancel_fd
 * (if >= 0) became readable (-ECANCELED). */
int consumer_wait_readable (int fd, int cancel_fd, int timeout_ms);
/* One packet into c->rbuf, waiting up to @timeout_ms (0: only what is
 * queued, with a single recvmsg and no poll). -ETIMEDOUT when nothing
 * came. */
ssize_t consumer_recv_packet (pf_consumer * c, int timeout_ms, int cancel_fd,
    int *fds, unsigned int *n_fds, const char **why);

#endif /* __PF_CONSUMER_PRIVATE_H__ */
