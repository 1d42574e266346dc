/* pinnedflow: the frame ring, both halves (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The shared memory of one producer-consumer pair and every access to it:
 * the layout, publishing and taking FRAMEs (producer -> consumer),
 * publishing and taking releases (consumer -> producer), and the order of
 * the index updates. The callers (pf-producer-client.c, pf-consumer.c) keep
 * their counters, locks, doorbells, fds and error messages;
 * pf-ring-private.h says which side calls what.
 *
 * Atomics: the GCC/Clang __atomic builtins, and only them. The indexes are
 * plain uint64_t fields of a wire layout (struct pf_frame_ring and struct
 * pf_release_ring, pf-wire-private.h) that two processes map; the builtins are
 * defined on such plain objects, where C11's atomic_* functions want
 * objects declared _Atomic (a cast of a uint64_t * to _Atomic uint64_t * is
 * outside what the standard promises). Both processes must see one and the
 * same lock-free instruction: an atomic emulated with a lock (libatomic)
 * would take a lock of our process only, hence the assertion below.
 * Every load and store of a shared index or release seq, and of the one
 * entry field read in place (hdr.reserved), is such an atomic with its
 * order named; each is marked "SYNC POINT n" with the access it pairs
 * with (the iceoryx2 style). The entries themselves are copied with
 * memcpy (): SYNC POINTs 1 and 2 order them. ThreadSanitizer checks the
 * pairs at run time (tools/tsan.sh: the transport, shm and bridge suites).
 *
 * Cache lines (issue 31): the release ring's write_seq (the consumer's)
 * and read_seq (the producer's) share a line. Moving the producer's
 * read_seq into the frame ring's header line (one line per writer) was
 * measured with shm-bench and gained nothing (docs/results.md, "Data
 * races, atomics and the release doorbell"): each side reads the other's
 * indexes once per frame anyway, at a few thousand frames a second at
 * most, so the wire layout stays as it was.
 *
 *   SYNC POINT 1  frame write_seq: producer's RELEASE store
 *                 (pf_ring_publish ()) / consumer's ACQUIRE loads
 *                 (pf_ring_take (), pf_ring_pending (), pf_ring_precedes ()).
 *   SYNC POINT 2  release write_seq: consumer's RELEASE store
 *                 (pf_ring_release_push ()) / producer's ACQUIRE load
 *                 (pf_ring_releases_published ()).
 *   SYNC POINT 3  read_seq: producer's RELEASE store
 *                 (pf_ring_releases_taken ()) / consumer's ACQUIRE load
 *                 (pf_ring_release_push ()).
 *   SYNC POINT 4  the release doorbell on demand (issue 35): the
 *                 producer's store of release_want, SEQ_CST fence, load of
 *                 the release write_seq (pf_ring_release_want (),
 *                 pf_ring_release_want_fence (), then
 *                 pf_ring_releases_published ()) / the consumer's store of
 *                 write_seq, SEQ_CST fence, load of release_want
 *                 (pf_ring_release_push (), pf_ring_release_ring_needed ()).
 *   Relaxed: a release seq slot (stored by the consumer before SYNC POINT
 *   2's store, loaded by the producer after its load) and an entry's
 *   hdr.reserved (stored by the producer before SYNC POINT 1's store,
 *   loaded in place by the consumer after its load): the SYNC POINT orders
 *   them; atomic only so that a hostile peer's concurrent write is a
 *   defined value, never a data race.
 *
 * The ordering argument (the rings are single-producer, single-consumer):
 *
 * Frames. The producer (under p->lock: one writer) copies the FRAME into
 * entry w mod n, stamps it, then stores write_seq = w + 1 with RELEASE
 * order (pf_ring_publish ()). The consumer (its receiving thread: one
 * reader) loads write_seq with ACQUIRE order, then copies entry r mod n
 * (pf_ring_take ()). The load that sees w + 1 synchronizes with the store
 * of w + 1, so every byte of entry w written before that store is visible:
 * an honest producer's entry is never seen torn. Its slot is not written
 * again before the consumer read it: entry w + n shares the slot of entry
 * w, and the consumer reads entries in order, so with entry w unread the n
 * entries w .. w + n - 1 are unread, their n frames unreleased (an honest
 * consumer cannot release a frame it has not read), and the producer sends
 * no client more than max_held <= n (pf_ring_entries_for ()) frames. And
 * the consumer's copy of entry w happens before its release of that frame,
 * which happens before the producer takes the release (the release ring's
 * RELEASE store and ACQUIRE load below, or a RELEASE message's send and
 * receive) and so before it writes the slot again. The producer never
 * reads write_seq back (its count is its own), so a consumer that writes
 * it changes nothing on the producer's side.
 *
 * Releases, the other way round. The consumer (writers serialized by its
 * held spinlock) loads read_seq with ACQUIRE order: every slot before it
 * was read by the producer before the producer's RELEASE store of it, so
 * the indexes below read_seq + n are free. It writes the seq into slot w mod
 * n, then stores write_seq = w + 1 with RELEASE order
 * (pf_ring_release_push ()). The producer (its I/O thread, under p->lock)
 * loads write_seq with ACQUIRE order, reads the seqs before it, then
 * stores read_seq with RELEASE order (pf_ring_releases_published (),
 * pf_ring_release_get (), pf_ring_releases_taken ()): the slot is free
 * only after it was read. Here too each side keeps its own count: the
 * consumer never reads the release ring's write_seq back, the producer
 * never reads its read_seq back.
 *
 * The doorbells (pf-doorbell-private.h) only wake the other side: no ordering
 * rests on them. A ring is rung after the index store, and the woken side
 * reads the index; a ring lost (a full doorbell) or early (the entry taken
 * before its byte came) is made up for by the callers (the consumer's
 * doorbell_settle () and doorbell_drain (), the producer's level-triggered
 * epoll).
 *
 * The release doorbell on demand (issue 35). A publisher takes the
 * releases itself before it judges a consumer's room, so the release
 * doorbell matters only to a producer thread that sleeps until a release
 * comes. A producer that says so in the release ring's flags
 * (PF_RELEASE_RING_ON_DEMAND, written before the memfd is sent) keeps
 * release_want (in the frame ring's header: the line the producer writes,
 * not the consumer's write_seq line) set while such a thread waits, and
 * the consumer rings only while it is set. The lost wake-up this could
 * cause is ruled out by a Dekker pair, each side a store, a SEQ_CST fence
 * and a load of the other's word (SYNC POINT 4): the producer stores
 * want = 1, fences, then loads write_seq and takes the releases before it
 * sleeps; the consumer stores write_seq (SYNC POINT 2), fences, then loads
 * want. By the fences' total order, one of the two loads sees the other
 * side's store: the producer takes the release, or the consumer sees want
 * and rings, which wakes the producer's I/O thread (which takes it). The
 * want store is relaxed and its load is relaxed: they carry no data, the
 * release's seq is ordered by SYNC POINT 2 as before. Clearing want needs
 * no fence: a consumer that still sees it set rings once too often, which
 * costs a wake-up and is counted like any ring. A consumer that does not
 * ring when asked (or a producer that never clears want) hurts only the
 * sleeper's latency: the producer's waits are bounded by its timeouts
 * (reliable timeout, the loan's slices) and by its idle rescan
 * (pf-producer-release.c), never by a ring.
 *
 * A hostile peer writes what it likes, whenever it likes, into the whole
 * mapping; the memfd is sealed against shrinking, so it cannot take the
 * pages away (SIGBUS) either: the producer seals its own memfd
 * (pf_ring_create ()) and the consumer checks the seal (pf_ring_attach ()).
 * What the other values can do:
 * - An index that went back, or jumped more than n ahead: w - r, unsigned,
 *   is then over n; the frame side fails the connection (PF_RING_OVERRUN),
 *   the release side too (-EPROTO); the consumer reads a read_seq ahead of
 *   its own count as a full ring and sends a RELEASE message instead.
 * - A slot written while it is read: the consumer copies the entry out
 *   first and checks only its copy (the type here, the rest as a socket
 *   FRAME is, handle_packet () in pf-consumer.c): a torn or forged entry
 *   is a FRAME that fails a check or points into segments that were
 *   announced and into their bounds, and nothing can change between the
 *   check and the use. The producer loads each release seq once (a
 *   relaxed atomic load: a defined value, whatever the consumer does
 *   meanwhile) and checks it as a RELEASE message (it must be a frame the
 *   consumer holds).
 * - The stamp (hdr.reserved, the socket messages sent before the entry):
 *   read twice by the consumer, once in place, relaxed, only to decide
 *   whether a socket packet waits in the stash (pf_ring_precedes ()), and
 *   once in the copy, which decides (pf_ring_take ()); one that claims
 *   more messages than ever come fails the connection (pf-consumer.c).
 * Neither side ever blocks on, or spins on, a value the other wrote.
 */
#include "pf-ring-private.h"

#include "pf-doorbell-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

PF_STATIC_ASSERT (__atomic_always_lock_free (sizeof (uint64_t), 0),
    "the ring's indexes need lock-free 64-bit atomics");

/* ---- layout ---- */

uint32_t
pf_ring_entries_for (unsigned int max_frames)
{
  uint32_t n = 1;

  while (n < max_frames && n < PF_FRAME_RING_MAX)
    n <<= 1;
  return n < max_frames ? 0 : n;
}

void
pf_ring_unmap (const void *map, uint32_t n_entries)
{
  munmap ((void *) map, PF_FRAME_RING_SIZE (n_entries));
}

/* ---- the producer ---- */

int
pf_ring_create (uint32_t n_entries, int *memfd, void **map)
{
  size_t bytes = PF_FRAME_RING_SIZE (n_entries);
  struct pf_frame_ring *h;
  void *m;
  int fd, res;

  *memfd = -1;
  *map = NULL;
  fd = memfd_create ("pinnedflow-frame-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return -errno;
  if (ftruncate (fd, (off_t) bytes) < 0 ||
      fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    res = -errno;
    close (fd);
    return res;
  }
  m = mmap (NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    res = -errno;
    close (fd);
    return res;
  }
  h = m;
  h->magic = PF_FRAME_RING_MAGIC;
  h->n_entries = n_entries;
  /* the release doorbell on demand (SYNC POINT 4): before the memfd is
   * sent, so the consumer finds it there from the start */
  pf_ring_release_ring (m, n_entries)->flags = PF_RELEASE_RING_ON_DEMAND;
  *memfd = fd;
  *map = m;
  return 0;
}

void
pf_ring_publish (struct pf_frame_ring *ring, uint32_t mask, uint64_t * w,
    const void *frame, uint32_t sent_before)
{
  /* our own count: the consumer can write the shared one */
  uint64_t i = (*w)++;
  struct pf_msg_frame *e = pf_ring_entry (ring, mask, i);

  memcpy (e, frame, sizeof (*e));
  /* relaxed: ordered by SYNC POINT 1 below; the consumer may read it in
   * place (pf_ring_precedes ()) */
  __atomic_store_n (&e->hdr.reserved, sent_before, __ATOMIC_RELAXED);
  /* SYNC POINT 1 (store): the entry, then the index that publishes it;
   * pairs with the consumer's ACQUIRE loads of write_seq */
  __atomic_store_n (&ring->write_seq, i + 1, __ATOMIC_RELEASE);
}

int
pf_ring_releases_published (const struct pf_release_ring *rel, uint32_t mask,
    uint64_t r, uint64_t * w)
{
  /* SYNC POINT 2 (load): pairs with the consumer's RELEASE store of
   * write_seq (pf_ring_release_push ()): the seqs before it are written */
  *w = __atomic_load_n (&rel->write_seq, __ATOMIC_ACQUIRE);
  if (*w - r > (uint64_t) mask + 1)
    return -EPROTO;
  return 0;
}

uint64_t
pf_ring_release_get (const struct pf_release_ring *rel, uint32_t mask,
    uint64_t i)
{
  const uint64_t *seqs = (const uint64_t *) (const void *) (rel + 1);

  /* relaxed: ordered by SYNC POINT 2; pairs with the consumer's relaxed
   * store of the slot (pf_ring_release_push ()) */
  return __atomic_load_n (&seqs[i & mask], __ATOMIC_RELAXED);
}

void
pf_ring_release_want (struct pf_frame_ring *ring, int want)
{
  /* SYNC POINT 4 (store): ordered before the releases taken next by
   * pf_ring_release_want_fence (); pairs with the consumer's load in
   * pf_ring_release_ring_needed () */
  __atomic_store_n (&ring->release_want, want ? 1u : 0u, __ATOMIC_RELAXED);
}

void
pf_ring_release_want_fence (void)
{
  /* SYNC POINT 4 (fence): the want stores above, then the loads of
   * write_seq (pf_ring_releases_published ()) that follow; the consumer
   * fences between its store of write_seq and its load of want */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
}

void
pf_ring_releases_taken (struct pf_release_ring *rel, uint64_t r)
{
  /* SYNC POINT 3 (store): the seqs before @r were read, their slots are
   * free; pairs with the consumer's ACQUIRE load of read_seq
   * (pf_ring_release_push ()) */
  __atomic_store_n (&rel->read_seq, r, __ATOMIC_RELEASE);
}

/* ---- the consumer ---- */

int
pf_ring_attach (const struct pf_msg_frame_ring *m, const int fds[3],
    void **map, const char **what)
{
  const struct pf_frame_ring *h;
  struct stat st;
  void *p;
  int seals;

  *map = NULL;
  /* (pf_msg_parse () checked n_entries, entry_size, size and
   * release_offset against each other) */
  if (fstat (fds[0], &st) < 0 || !S_ISREG (st.st_mode) ||
      (uint64_t) st.st_size < m->size) {
    *what = "the ring is not a file of the size announced";
    return -EPROTO;
  }
  seals = fcntl (fds[0], F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
    *what = "the ring is not sealed against shrinking";
    return -EPROTO;
  }
  /* sockets of our own: nothing the producer does with its ends can
   * make a MSG_DONTWAIT send or receive on ours block */
  if (pf_doorbell_check (fds[1]) < 0 || pf_doorbell_check (fds[2]) < 0) {
    *what = "a doorbell is not a stream socket";
    return -EPROTO;
  }
  p = mmap (NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  if (p == MAP_FAILED) {
    *what = "the ring cannot be mapped";
    return -EPROTO;
  }
  h = p;
  if (h->magic != PF_FRAME_RING_MAGIC || h->n_entries != m->n_entries) {
    munmap (p, m->size);
    *what = "the ring's header does not match";
    return -EPROTO;
  }
  *map = p;
  return 0;
}

int
pf_ring_release_on_demand (const void *map, uint32_t n_entries)
{
  const struct pf_release_ring *rel =
      pf_ring_release_ring ((void *) map, n_entries);

  /* relaxed: written by the producer before it sent the memfd; atomic
   * only so that a concurrent write is a defined value */
  return (__atomic_load_n (&rel->flags, __ATOMIC_RELAXED) &
      PF_RELEASE_RING_ON_DEMAND) != 0;
}

int
pf_ring_take (const struct pf_frame_ring *ring, uint32_t mask, uint64_t * r,
    uint32_t recvd, struct pf_msg_frame *out, uint64_t * w)
{
  /* SYNC POINT 1 (load): pairs with the producer's RELEASE store of
   * write_seq (pf_ring_publish ()): the entries before it are written */
  *w = __atomic_load_n (&ring->write_seq, __ATOMIC_ACQUIRE);
  if (*w == *r)
    return PF_RING_EMPTY;
  if (*w - *r > (uint64_t) mask + 1)
    return PF_RING_OVERRUN;
  /* copied out before anything is checked: the producer can write it */
  memcpy (out, pf_ring_entry (ring, mask, *r), sizeof (*out));
  if (out->hdr.type != PF_MSG_FRAME)
    return PF_RING_NOT_FRAME;
  if (out->hdr.reserved > recvd)
    return PF_RING_SOCKET_FIRST;
  /* what a socket FRAME has there (handle_packet () checks it) */
  out->hdr.reserved = 0;
  (*r)++;
  return PF_RING_TAKEN;
}

int
pf_ring_pending (const struct pf_frame_ring *ring, uint64_t r)
{
  /* SYNC POINT 1 (load): as in pf_ring_take () */
  return __atomic_load_n (&ring->write_seq, __ATOMIC_ACQUIRE) != r;
}

int
pf_ring_precedes (const struct pf_frame_ring *ring, uint32_t mask,
    uint64_t r, uint32_t recvd)
{
  /* SYNC POINT 1 (load): as in pf_ring_take () */
  uint64_t w = __atomic_load_n (&ring->write_seq, __ATOMIC_ACQUIRE);
  uint32_t before;

  if (w == r)
    return 0;
  /* relaxed: ordered by SYNC POINT 1; pairs with the producer's relaxed
   * store in pf_ring_publish () */
  before = __atomic_load_n (&pf_ring_entry (ring, mask, r)->hdr.reserved,
      __ATOMIC_RELAXED);
  return before <= recvd;
}

int
pf_ring_release_push (struct pf_release_ring *rel, uint32_t mask,
    uint64_t * w, uint64_t seq)
{
  /* room if it has (it always has with an honest producer: what it has
   * not taken it counts as held); a read_seq ahead of ours reads as full */
  /* SYNC POINT 3 (load): pairs with the producer's RELEASE store of
   * read_seq (pf_ring_releases_taken ()): the slots before it were read */
  uint64_t r = __atomic_load_n (&rel->read_seq, __ATOMIC_ACQUIRE);
  uint64_t *seqs = (uint64_t *) (void *) (rel + 1);

  if (*w - r > mask)
    return 0;
  /* relaxed: ordered by SYNC POINT 2 below; pairs with the producer's
   * relaxed load (pf_ring_release_get ()) */
  __atomic_store_n (&seqs[*w & mask], seq, __ATOMIC_RELAXED);
  /* SYNC POINT 2 (store): the seq, then the index that publishes it;
   * pairs with the producer's ACQUIRE load of write_seq
   * (pf_ring_releases_published ()) */
  __atomic_store_n (&rel->write_seq, ++*w, __ATOMIC_RELEASE);
  return 1;
}

int
pf_ring_release_ring_needed (const struct pf_frame_ring *ring)
{
  /* SYNC POINT 4 (fence): our store of write_seq
   * (pf_ring_release_push ()), then the load of want; the producer fences
   * between its store of want and its load of write_seq
   * (pf_ring_release_want_fence ()): either it sees our release, or we see
   * its want (Dekker) */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  /* SYNC POINT 4 (load): pairs with pf_ring_release_want () */
  return __atomic_load_n (&ring->release_want, __ATOMIC_RELAXED) != 0;
}
