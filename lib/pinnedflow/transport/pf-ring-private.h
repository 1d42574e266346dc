/* pinnedflow: the frame ring, both halves (internal, not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One memfd per consumer that asked for a ring (docs/protocol.md, 3.10;
 * docs/design.md, "The frame ring"): struct pf_frame_ring and n FRAME
 * entries the producer writes and the consumer reads, then, from the next
 * page, struct pf_release_ring and n seqs the consumer writes and the
 * producer reads. The producer makes it (pf_ring_create ()), publishes
 * frames (pf_ring_publish ()) and takes releases
 * (pf_ring_releases_published (), pf_ring_release_get (),
 * pf_ring_releases_taken ()); the consumer checks and maps it
 * (pf_ring_attach ()), takes frames (pf_ring_take (), pf_ring_precedes (),
 * pf_ring_pending ()) and publishes releases (pf_ring_release_push ()).
 * pf-ring.c holds the code and, beside it, the memory-ordering argument and
 * what a hostile peer can and cannot do.
 *
 * What stays with the callers: their counters (each side keeps its own
 * index and never trusts the peer's copy), their locks (pf-producer.c's
 * p->lock, pf-consumer.c's held spinlock), the doorbells (pf-doorbell-private.h,
 * rung and read by the callers), the fds, epoll and the socket, and the
 * words of every error. Nothing here blocks, allocates (but the memfd and
 * its mapping) or takes a lock. Callers: pf-producer-client.c,
 * pf-consumer.c.
 */
#ifndef __PF_RING_PRIVATE_H__
#define __PF_RING_PRIVATE_H__

#include "pf-protocol-private.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- layout (both sides) ---- */

/* Entry @i (any count: taken modulo the ring) of a ring of @mask + 1. */
static inline struct pf_msg_frame *
pf_ring_entry (const struct pf_frame_ring *ring, uint32_t mask, uint64_t i)
{
  return (struct pf_msg_frame *) (void *) (ring + 1) + (i & mask);
}

/* The release ring in the mapping @map of a ring of @n_entries. */
static inline struct pf_release_ring *
pf_ring_release_ring (void *map, uint32_t n_entries)
{
  return (struct pf_release_ring *) (void *) ((uint8_t *) map +
      PF_FRAME_RING_RELEASE_OFFSET (n_entries));
}

/* The entries of a ring for a consumer that may hold @max_frames: the
 * smallest power of two not below it (1 at least), or 0 beyond
 * PF_FRAME_RING_MAX (no ring). */
uint32_t pf_ring_entries_for (unsigned int max_frames);

/* Unmaps a ring of @n_entries (either side). */
void pf_ring_unmap (const void *map, uint32_t n_entries);

/* ---- the producer ---- */

/* A new ring of @n_entries (pf_ring_entries_for ()): a sealed memfd
 * (@memfd, to send) and our mapping of it (@map), header filled in. 0, or
 * a negative errno with nothing left open. */
int pf_ring_create (uint32_t n_entries, int *memfd, void **map);

/* Publishes the encoded FRAME @frame (sizeof (struct pf_msg_frame) bytes,
 * as sent on the socket) as entry *@w (our own count, then advanced),
 * stamped with @sent_before, the messages sent on the socket before it.
 * The caller rings the doorbell next. Never full: see pf-ring.c. */
void pf_ring_publish (struct pf_frame_ring *ring, uint32_t mask, uint64_t * w,
    const void *frame, uint32_t sent_before);

/* The releases published, in *@w: 0, or -EPROTO when more than the ring
 * holds are beyond @r, those taken (a hostile consumer). */
int pf_ring_releases_published (const struct pf_release_ring *rel,
    uint32_t mask, uint64_t r, uint64_t * w);
/* The seq of release @i (between the caller's count and *w above): any
 * value, to be checked as a RELEASE message is. */
uint64_t pf_ring_release_get (const struct pf_release_ring *rel,
    uint32_t mask, uint64_t i);
/* Gives back the release entries before @r (after they were read). */
void pf_ring_releases_taken (struct pf_release_ring *rel, uint64_t r);
/* The release doorbell on demand (PF_RELEASE_RING_ON_DEMAND, which
 * pf_ring_create () announces): sets (@want 1) or clears the ring's
 * release_want, which the consumer reads after each release it publishes
 * and rings only while it is set. After setting it on every ring, the
 * caller calls pf_ring_release_want_fence () once, then takes the
 * releases (pf_ring_releases_published ()) before it sleeps: either it
 * sees a release or its consumer rings for it. */
void pf_ring_release_want (struct pf_frame_ring *ring, int want);
void pf_ring_release_want_fence (void);

/* ---- the consumer ---- */

/* Checks what a FRAME_RING handed over (@fds: the memfd, the frame
 * doorbell, the release doorbell; still the caller's) and maps the memfd
 * in *@map. 0, or -EPROTO with *@what saying why (nothing mapped). */
int pf_ring_attach (const struct pf_msg_frame_ring *m, const int fds[3],
    void **map, const char **what);

/* What pf_ring_take () found. */
enum pf_ring_take_result
{
  PF_RING_NOT_FRAME = -2,       /* entry *r is not a FRAME: out holds it */
  PF_RING_OVERRUN = -1,         /* more published than the ring holds */
  PF_RING_EMPTY = 0,
  PF_RING_TAKEN = 1,            /* *out is entry *r, *r advanced */
  PF_RING_SOCKET_FIRST = 2,     /* published, but socket messages sent
                                 * before it are still to be read */
};

/* The entry at *@r, copied into @out unless more than @recvd socket
 * messages (the HELLO included) were sent before it. *@w: the entries
 * published. */
int pf_ring_take (const struct pf_frame_ring *ring, uint32_t mask,
    uint64_t * r, uint32_t recvd, struct pf_msg_frame *out, uint64_t * w);

/* 1 if the producer of the ring mapped at @map (@n_entries) rings the
 * release doorbell on demand only (PF_RELEASE_RING_ON_DEMAND): read once,
 * at attach; 0 (a producer before it) means after every release. */
int pf_ring_release_on_demand (const void *map, uint32_t n_entries);

/* 1 if an entry beyond @r is published (a read of write_seq). */
int pf_ring_pending (const struct pf_frame_ring *ring, uint64_t r);

/* 1 if entry @r is published and was published before the socket message
 * number @recvd + 1 (just read) was sent: it goes first. */
int pf_ring_precedes (const struct pf_frame_ring *ring, uint32_t mask,
    uint64_t r, uint32_t recvd);

/* Publishes release @seq as *@w (our own count, then advanced): 1, or 0
 * when the ring is full (or its read_seq is forged): send a RELEASE. The
 * caller serializes the writers and rings the release doorbell next. */
int pf_ring_release_push (struct pf_release_ring *rel, uint32_t mask,
    uint64_t * w, uint64_t seq);
/* After a pf_ring_release_push () that returned 1, to a producer that
 * rings on demand: 1 if it wants the release doorbell rung now (a fence,
 * then a load of its release_want). */
int pf_ring_release_ring_needed (const struct pf_frame_ring *ring);

#ifdef __cplusplus
}
#endif
#endif /* __PF_RING_PRIVATE_H__ */
