/* pinnedflow: the consumer's segment table and how a connection fails
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The segments a producer announced (SEGMENT_ADD: imported read-only from
 * the fd it sent, pf_segment_import ()) and removed (SEGMENT_REMOVE), with
 * the removed ones that frames still use (c->retired: they stay mapped, so
 * they count against the budget until the last frame lets go). Every
 * segment is checked against the budget (pf_consumer_set_budget ()) before
 * anything is mapped. Receive thread only (the budget calls too, as
 * pf-consumer.h says).
 *
 * consumer_fail () ends a connection: the first error wins (written under
 * c->lock, read atomically without it by pf_consumer_release ()), the
 * socket is shut down (so the producer reclaims everything at once; the fd
 * stays open until the last unref) and the table is dropped (frames out
 * keep their own segment references).
 *
 * The bottom of the consumer's three files: it calls neither of the others
 * (pf-consumer-private.h).
 */
#include "pf-consumer-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void
free_list (struct cseg **list)
{
  struct cseg *s, *next;

  for (s = *list; s != NULL; s = next) {
    next = s->next;
    pf_segment_unref (s->seg);
    free (s);
  }
  *list = NULL;
}

void
consumer_drop_segments (pf_consumer * c)
{
  free_list (&c->segs);
  free_list (&c->retired);
}

/* Drops the retired segments only we hold (nobody else can take a
 * reference to them): unmapped now (a device segment's mapping with it). */
void
consumer_prune_retired (pf_consumer * c)
{
  struct cseg **l, *s;

  for (l = &c->retired; (s = *l) != NULL;) {
    if (pf_segment_get_refcount (s->seg) == 1) {
      *l = s->next;
      pf_segment_unref (s->seg);
      free (s);
      continue;
    }
    l = &s->next;
  }
}

/* What this connection keeps mapped: the announced segments, and the
 * removed ones that frames still use (the others pruned on the way). */
static void
mapped_total (pf_consumer * c, uint64_t * bytes, uint32_t * count)
{
  struct cseg *s;

  *bytes = 0;
  *count = 0;
  consumer_prune_retired (c);
  for (s = c->retired; s != NULL; s = s->next) {
    *bytes += pf_segment_get_size (s->seg);
    (*count)++;
  }
  for (s = c->segs; s != NULL; s = s->next) {
    *bytes += pf_segment_get_size (s->seg);
    (*count)++;
  }
}

void
consumer_budget_fill_defaults (pf_consumer_budget * b)
{
  if (b->max_bytes == 0)
    b->max_bytes = PF_CONSUMER_DEFAULT_MAX_BYTES;
  if (b->max_segments == 0)
    b->max_segments = PF_CONSUMER_DEFAULT_MAX_SEGMENTS;
}

int
pf_consumer_set_budget (pf_consumer * c, const pf_consumer_budget * budget)
{
  if (c == NULL || budget == NULL
      || (budget->flags & ~(PF_CONSUMER_PREFAULT | PF_CONSUMER_LOCK)))
    return -EINVAL;
  c->budget = *budget;
  consumer_budget_fill_defaults (&c->budget);
  return 0;
}

void
pf_consumer_get_budget (pf_consumer * c, pf_consumer_budget * budget)
{
  *budget = c->budget;
}

void
pf_consumer_get_mapped (pf_consumer * c, uint64_t * bytes, uint32_t * count)
{
  uint64_t b;
  uint32_t n;

  mapped_total (c, &b, &n);
  if (bytes)
    *bytes = b;
  if (count)
    *count = n;
}

static int
set_error_locked (pf_consumer * c, int err, const char *fmt, va_list ap)
    __attribute__((format (printf, 3, 0)));

static int
set_error_locked (pf_consumer * c, int err, const char *fmt, va_list ap)
{
  if (c->broken)
    return c->broken;
  vsnprintf (c->error, sizeof (c->error), fmt, ap);
  __atomic_store_n (&c->broken, err, __ATOMIC_RELEASE);
  shutdown (c->fd, SHUT_RDWR);
  return err;
}

/* Ends the connection (receive thread). Returns the error to report. */
int
consumer_fail (pf_consumer * c, int err, const char *fmt, ...)
{
  va_list ap;
  int res;

  va_start (ap, fmt);
  pthread_mutex_lock (&c->lock);
  res = set_error_locked (c, err, fmt, ap);
  pthread_mutex_unlock (&c->lock);
  va_end (ap);
  /* Frames out keep their own segment references. */
  consumer_drop_segments (c);
  return res;
}

struct cseg *
consumer_find_seg (pf_consumer * c, uint64_t wire_id)
{
  struct cseg *s;

  for (s = c->segs; s != NULL; s = s->next)
    if (s->wire_id == wire_id)
      return s;
  return NULL;
}

/* Checked before anything is mapped: the segment must fit the budget next
 * to everything this connection keeps mapped. */
static int
check_budget (pf_consumer * c, const struct pf_msg_segment_add *m)
{
  const pf_consumer_budget *b = &c->budget;
  uint64_t bytes;
  uint32_t count;

  mapped_total (c, &bytes, &count);
  if (count >= b->max_segments)
    return consumer_fail (c, -EDQUOT, "SEGMENT_ADD: segment %" PRIu64
        " (%" PRIu64 " bytes) refused: %" PRIu32 " segments are mapped "
        "already, the budget is %" PRIu32 " segments", m->segment_id,
        m->size, count, b->max_segments);
  if (m->size > b->max_bytes || bytes > b->max_bytes - m->size)
    return consumer_fail (c, -EDQUOT, "SEGMENT_ADD: segment %" PRIu64
        " (%" PRIu64 " bytes) refused: with the %" PRIu64 " bytes mapped "
        "already it exceeds the budget of %" PRIu64 " bytes", m->segment_id,
        m->size, bytes, b->max_bytes);
  return 0;
}

static unsigned int
import_flags (const pf_consumer * c)
{
  unsigned int flags = PF_SEGMENT_IMPORT_READONLY;

  if (c->budget.flags & PF_CONSUMER_PREFAULT)
    flags |= PF_SEGMENT_IMPORT_PREFAULT;
  if (c->budget.flags & PF_CONSUMER_LOCK)
    flags |= PF_SEGMENT_IMPORT_LOCK;
  return flags;
}

int
consumer_handle_segment_add (pf_consumer * c,
    const struct pf_msg_segment_add *m, int fd)
{
  struct cseg *s;
  pf_segment *seg;
  int res;

  if (consumer_find_seg (c, m->segment_id)) {
    close (fd);
    return consumer_fail (c, -EPROTO, "SEGMENT_ADD: segment %" PRIu64
        " announced twice", m->segment_id);
  }
  if ((res = check_budget (c, m)) < 0) {
    close (fd);
    return res;
  }
  if ((res = pf_segment_import (fd, m->size, import_flags (c), &seg)) < 0) {
    close (fd);
    return consumer_fail (c, -EPROTO, "SEGMENT_ADD: segment %" PRIu64
        " (%" PRIu64 " bytes) rejected: %s", m->segment_id, m->size,
        pf_segment_import_strerror (res));
  }
  if ((s = calloc (1, sizeof (*s))) == NULL) {
    pf_segment_unref (seg);
    return consumer_fail (c, -ENOMEM, "out of memory");
  }
  s->wire_id = m->segment_id;
  s->seg = seg;
  s->next = c->segs;
  c->segs = s;
  return 0;
}

int
consumer_handle_segment_remove (pf_consumer * c, uint64_t wire_id)
{
  struct cseg **l, *s;

  for (l = &c->segs; *l != NULL; l = &(*l)->next) {
    if ((*l)->wire_id == wire_id) {
      s = *l;
      *l = s->next;
      if (pf_segment_get_refcount (s->seg) == 1) {
        pf_segment_unref (s->seg);
        free (s);
      } else {
        /* frames still use it: keep counting it while they do */
        s->next = c->retired;
        c->retired = s;
      }
      return 0;
    }
  }
  return consumer_fail (c, -EPROTO, "SEGMENT_REMOVE: unknown segment %"
      PRIu64, wire_id);
}

/* ---- device segments (DEVICE_SEGMENT_ADD, docs/protocol.md 3.11) ------
 * The transport knows no CUDA: the fd becomes a pf_segment with no host
 * mapping (pf_segment_new_device ()), which the import function set by
 * the application (the CUDA layer's pf_device_segment_import ()) maps and
 * keeps attached to it. -ENODEV from it, or no function at all, leaves the
 * segment refused: kept in the table (so its frames are checked as any
 * others), its frames released unseen by pf-consumer.c and counted. Any
 * other failure is a producer sending what is no device memory: the
 * connection fails with -EPROTO. */

int
pf_consumer_set_device_import (pf_consumer * c,
    pf_consumer_device_import_func func, void *user_data)
{
  if (c == NULL)
    return -EINVAL;
  c->device_import = func;
  c->device_import_data = user_data;
  return 0;
}

const char *
pf_consumer_get_device_stats (pf_consumer * c, uint64_t * frames_skipped,
    uint32_t * segments_refused)
{
  if (frames_skipped)
    *frames_skipped = c->device_skipped;
  if (segments_refused)
    *segments_refused = c->device_refused;
  return c->device_error;
}

static void
device_refuse (pf_consumer * c, struct cseg *s, const char *why)
{
  s->device_refused = 1;
  c->device_refused++;
  snprintf (c->device_error, sizeof (c->device_error), "DEVICE_SEGMENT_ADD: "
      "segment %" PRIu64 " refused, its frames are skipped: %s", s->wire_id,
      why);
}

int
consumer_handle_device_segment_add (pf_consumer * c,
    const struct pf_msg_device_segment_add *m, int fd)
{
  struct pf_msg_segment_add as_host = {.segment_id = m->segment_id,
    .size = m->size
  };
  pf_segment_device dev;
  char why[200] = "";
  struct cseg *s;
  pf_segment *seg;
  int res;

  if (!c->want_device) {
    close (fd);
    return consumer_fail (c, -EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        " sent to a consumer that did not ask for device segments",
        m->segment_id);
  }
  if (consumer_find_seg (c, m->segment_id)) {
    close (fd);
    return consumer_fail (c, -EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        " announced twice", m->segment_id);
  }
  /* the same budget as host segments: what a producer makes us map */
  if ((res = check_budget (c, &as_host)) < 0) {
    close (fd);
    return res;
  }
  memset (&dev, 0, sizeof (dev));
  memcpy (dev.uuid, m->device_uuid, sizeof (dev.uuid));
  dev.granularity = m->granularity;
  dev.handle_type = m->handle_type;
  dev.ordinal = -1;
  if ((res = pf_segment_new_device (fd, m->size, &dev, &seg)) < 0) {
    close (fd);
    return consumer_fail (c, res == -ENOMEM ? -ENOMEM : -EPROTO,
        "DEVICE_SEGMENT_ADD: segment %" PRIu64 " rejected: %s",
        m->segment_id, strerror (-res));
  }
  if ((s = calloc (1, sizeof (*s))) == NULL) {
    pf_segment_unref (seg);
    return consumer_fail (c, -ENOMEM, "out of memory");
  }
  s->wire_id = m->segment_id;
  s->seg = seg;
  if (c->device_import == NULL) {
    device_refuse (c, s, "this consumer imports no device memory (no "
        "import function set)");
  } else {
    res = c->device_import (seg, c->device_import_data, &s->device_base, why,
        sizeof (why));
    if (res == -ENODEV) {
      device_refuse (c, s, why);
    } else if (res < 0) {
      /* the mapping, if any, went with the import's failure */
      pf_segment_unref (seg);
      free (s);
      return consumer_fail (c, -EPROTO, "DEVICE_SEGMENT_ADD: segment %"
          PRIu64 " (%" PRIu64 " bytes) rejected: %s", m->segment_id, m->size,
          why[0] ? why : strerror (-res));
    }
  }
  s->next = c->segs;
  c->segs = s;
  return 0;
}

/* pf_consumer_set_domain(): a DOMAIN on the socket (docs/protocol.md,
 * 3.12), blocking as a RELEASE does (the socket's send timeout). */
int
pf_consumer_set_domain (pf_consumer * c, const uint8_t device_uuid[16])
{
  static const uint8_t zero[16];
  uint8_t buf[sizeof (struct pf_msg_domain)];
  size_t len;

  if (c == NULL || device_uuid == NULL || !c->want_device ||
      memcmp (device_uuid, zero, sizeof (zero)) == 0)
    return -EINVAL;
  if (__atomic_load_n (&c->broken, __ATOMIC_ACQUIRE) ||
      __atomic_load_n (&c->write_closed, __ATOMIC_ACQUIRE))
    return -EPIPE;
  len = pf_msg_write_domain (buf, device_uuid);
  return pf_socket_send (c->fd, buf, len, NULL, 0, 0);
}
