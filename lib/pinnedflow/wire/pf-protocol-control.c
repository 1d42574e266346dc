/* pinnedflow: the wire protocol's control messages (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every message but the FRAME's fields: the encoders of HELLO, STREAM,
 * REFUSE, FRAME_RING, SEGMENT_ADD/REMOVE, DEVICE_SEGMENT_ADD, CAPS, EOS
 * and RELEASE, their
 * parsers, and pf_msg_parse(), which reads any message (a FRAME's fields
 * with pf_msg_frame_parse(), pf-protocol.c). The codec's core (the error
 * text, the header, the FRAME both ways) is pf-protocol.c; the byte
 * helpers they share are pf-codec-private.h. Calls go one way: this file
 * calls pf-protocol.c, never the reverse.
 *
 * Threads: any; no state but the calling thread's error text.
 */
#include "pf-protocol-private.h"
#include "pf-codec-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

PF_STATIC_ASSERT (offsetof (struct pf_msg_hello, session_id) == 32,
    "session_id");
PF_STATIC_ASSERT (offsetof (struct pf_msg_stream, seg_rate) == 32, "seg_rate");
PF_STATIC_ASSERT (offsetof (struct pf_msg_stream, seg_duration) == 96,
    "seg_duration");

size_t
pf_msg_write_hello_full (void *buf, uint16_t version, uint16_t role,
    uint32_t max_held, uint32_t flags, uint64_t session_id)
{
  size_t n =
      pf_msg_write_header (buf, PF_MSG_HELLO, sizeof (struct pf_msg_hello),
      0);

  put32 (buf, OFF (pf_msg_hello, magic), PF_PROTOCOL_MAGIC);
  put16 (buf, OFF (pf_msg_hello, version), version);
  put16 (buf, OFF (pf_msg_hello, role), role);
  put32 (buf, OFF (pf_msg_hello, max_held), max_held);
  put32 (buf, OFF (pf_msg_hello, flags), flags);
  put64 (buf, OFF (pf_msg_hello, session_id), session_id);
  return n;
}

size_t
pf_msg_write_hello (void *buf, uint16_t role, uint32_t max_held,
    uint64_t session_id)
{
  return pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION, role, max_held,
      0, session_id);
}

static uint64_t
double_bits (double d)
{
  uint64_t v;

  memcpy (&v, &d, sizeof (v));
  return v;
}

static double
bits_double (uint64_t v)
{
  double d;

  memcpy (&d, &v, sizeof (d));
  return d;
}

/* The segment fields after seg_rate, in wire order. */
#define N_SEG_U64 7

size_t
pf_msg_write_stream (void *buf, const pf_stream_info * info)
{
  size_t n =
      pf_msg_write_header (buf, PF_MSG_STREAM, sizeof (struct pf_msg_stream),
      0);
  const pf_stream_segment *sg = &info->segment;

  put32 (buf, OFF (pf_msg_stream, flags), info->flags);
  put32 (buf, OFF (pf_msg_stream, delivery), info->delivery);
  if (info->flags & PF_STREAM_HAS_SEGMENT) {
    const uint64_t v[N_SEG_U64] = { sg->base, sg->offset, sg->start,
      sg->stop, sg->time, sg->position, sg->duration
    };
    size_t i;

    put32 (buf, OFF (pf_msg_stream, seg_format), sg->format);
    put32 (buf, OFF (pf_msg_stream, seg_flags), sg->flags);
    put64 (buf, OFF (pf_msg_stream, seg_rate), double_bits (sg->rate));
    put64 (buf, OFF (pf_msg_stream, seg_applied_rate),
        double_bits (sg->applied_rate));
    for (i = 0; i < N_SEG_U64; i++)
      put64 (buf, OFF (pf_msg_stream, seg_base) + 8 * i, v[i]);
  }
  return n;
}

size_t
pf_msg_write_refuse (void *buf, uint32_t reason, uint32_t limit)
{
  size_t n =
      pf_msg_write_header (buf, PF_MSG_REFUSE, sizeof (struct pf_msg_refuse),
      0);

  put32 (buf, OFF (pf_msg_refuse, reason), reason);
  put32 (buf, OFF (pf_msg_refuse, limit), limit);
  return n;
}

size_t
pf_msg_write_frame_ring (void *buf, uint32_t n_entries)
{
  size_t n = pf_msg_write_header (buf, PF_MSG_FRAME_RING,
      sizeof (struct pf_msg_frame_ring), 3);

  put32 (buf, OFF (pf_msg_frame_ring, n_entries), n_entries);
  put32 (buf, OFF (pf_msg_frame_ring, entry_size),
      sizeof (struct pf_msg_frame));
  put64 (buf, OFF (pf_msg_frame_ring, size), PF_FRAME_RING_SIZE (n_entries));
  put64 (buf, OFF (pf_msg_frame_ring, release_offset),
      PF_FRAME_RING_RELEASE_OFFSET (n_entries));
  return n;
}

void
pf_msg_stream_to_info (const struct pf_msg_stream *m, pf_stream_info * info)
{
  memset (info, 0, sizeof (*info));
  info->flags = m->flags;
  info->delivery = m->delivery;
  if (!(m->flags & PF_STREAM_HAS_SEGMENT))
    return;
  info->segment.format = m->seg_format;
  info->segment.flags = m->seg_flags;
  info->segment.rate = bits_double (m->seg_rate);
  info->segment.applied_rate = bits_double (m->seg_applied_rate);
  info->segment.base = m->seg_base;
  info->segment.offset = m->seg_offset;
  info->segment.start = m->seg_start;
  info->segment.stop = m->seg_stop;
  info->segment.time = m->seg_time;
  info->segment.position = m->seg_position;
  info->segment.duration = m->seg_duration;
}

size_t
pf_msg_write_segment_add (void *buf, uint64_t segment_id, uint64_t size)
{
  size_t n = pf_msg_write_header (buf, PF_MSG_SEGMENT_ADD,
      sizeof (struct pf_msg_segment_add), 1);

  put64 (buf, OFF (pf_msg_segment_add, segment_id), segment_id);
  put64 (buf, OFF (pf_msg_segment_add, size), size);
  return n;
}

PF_STATIC_ASSERT (offsetof (struct pf_msg_device_segment_add, device_uuid)
    == 48, "device_uuid");

/* What a receiver requires of a DEVICE_SEGMENT_ADD's fields (@m in host
 * order): 0, or -EPROTO with pf_msg_error() set. The encoder applies it
 * too (pf_msg_write_device_segment_add ()). */
static int
device_segment_check (const struct pf_msg_device_segment_add *m)
{
  static const uint8_t zero_uuid[16];
  uint64_t g = m->granularity;

  if (m->segment_id == 0)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment id 0");
  if (g < PF_DEVICE_GRANULARITY_MIN || g > PF_DEVICE_GRANULARITY_MAX ||
      (g & (g - 1)) != 0)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        ": granularity %" PRIu64 " (a power of two, %u..%" PRIu64 ")",
        m->segment_id, g, PF_DEVICE_GRANULARITY_MIN, PF_DEVICE_GRANULARITY_MAX);
  if (m->size == 0 || m->size > PF_DEVICE_SEGMENT_MAX || m->size % g != 0)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        ": size %" PRIu64 " (a non-zero multiple of the granularity %"
        PRIu64 ", at most %" PRIu64 ")", m->segment_id, m->size, g,
        PF_DEVICE_SEGMENT_MAX);
  if (m->handle_type != PF_DEVICE_HANDLE_POSIX_FD)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        ": handle type %u (only %u, a POSIX fd)", m->segment_id,
        m->handle_type, PF_DEVICE_HANDLE_POSIX_FD);
  if (m->flags != 0)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        ": flags 0x%x, must be 0", m->segment_id, m->flags);
  if (memcmp (m->device_uuid, zero_uuid, sizeof (zero_uuid)) == 0)
    return pf_msg_fail (-EPROTO, "DEVICE_SEGMENT_ADD: segment %" PRIu64
        ": device UUID all zero", m->segment_id);
  return 0;
}

size_t
pf_msg_write_device_segment_add_unchecked (void *buf,
    const struct pf_msg_device_segment_add *m)
{
  size_t n = pf_msg_write_header (buf, PF_MSG_DEVICE_SEGMENT_ADD,
      sizeof (struct pf_msg_device_segment_add), 1);

  put64 (buf, OFF (pf_msg_device_segment_add, segment_id), m->segment_id);
  put64 (buf, OFF (pf_msg_device_segment_add, size), m->size);
  put64 (buf, OFF (pf_msg_device_segment_add, granularity), m->granularity);
  put32 (buf, OFF (pf_msg_device_segment_add, handle_type), m->handle_type);
  put32 (buf, OFF (pf_msg_device_segment_add, flags), m->flags);
  memcpy ((uint8_t *) buf + OFF (pf_msg_device_segment_add, device_uuid),
      m->device_uuid, sizeof (m->device_uuid));
  return n;
}

size_t
pf_msg_write_device_segment_add (void *buf,
    const struct pf_msg_device_segment_add *m)
{
  pf_msg_error_clear ();
  if (device_segment_check (m) < 0)
    return 0;
  return pf_msg_write_device_segment_add_unchecked (buf, m);
}

size_t
pf_msg_write_segment_remove (void *buf, uint64_t segment_id)
{
  size_t n = pf_msg_write_header (buf, PF_MSG_SEGMENT_REMOVE,
      sizeof (struct pf_msg_segment_remove), 0);

  put64 (buf, OFF (pf_msg_segment_remove, segment_id), segment_id);
  return n;
}

size_t
pf_msg_write_caps (void *buf, uint32_t caps_seq, const char *caps)
{
  size_t len = strlen (caps), n;

  if (len > PF_MAX_CAPS_LEN)
    return 0;
  n = pf_msg_write_header (buf, PF_MSG_CAPS, sizeof (struct pf_msg_caps) + len,
      0);
  put32 (buf, OFF (pf_msg_caps, caps_seq), caps_seq);
  put32 (buf, OFF (pf_msg_caps, length), (uint32_t) len);
  memcpy ((uint8_t *) buf + sizeof (struct pf_msg_caps), caps, len);
  return n;
}

size_t
pf_msg_write_eos (void *buf)
{
  return pf_msg_write_header (buf, PF_MSG_EOS, sizeof (struct pf_msg_header),
      0);
}

size_t
pf_msg_write_domain (void *buf, const uint8_t device_uuid[16])
{
  size_t n = pf_msg_write_header (buf, PF_MSG_DOMAIN,
      sizeof (struct pf_msg_domain), 0);

  put32 (buf, OFF (pf_msg_domain, flags), 0);
  put32 (buf, OFF (pf_msg_domain, reserved), 0);
  memcpy ((uint8_t *) buf + OFF (pf_msg_domain, device_uuid), device_uuid, 16);
  return n;
}

size_t
pf_msg_write_release (void *buf, uint64_t seq)
{
  size_t n = pf_msg_write_header (buf, PF_MSG_RELEASE,
      sizeof (struct pf_msg_release), 0);

  put64 (buf, OFF (pf_msg_release, seq), seq);
  return n;
}

/* Each parse_<type>() below gets a packet whose header pf_msg_parse()
 * checked (@h: type, size = @len, fd count, reserved field), checks the
 * rest and fills in its member of struct pf_msg: 0, or a negative errno
 * with pf_msg_error() set. */

static int
parse_hello (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_hello *m)
{
  m->hdr = *h;
  if (len < OFF (pf_msg_hello, role) + 2)
    return pf_msg_fail (-EPROTO, "HELLO: %zu bytes, too short", len);
  m->magic = get32 (buf, OFF (pf_msg_hello, magic));
  m->version = get16 (buf, OFF (pf_msg_hello, version));
  m->role = get16 (buf, OFF (pf_msg_hello, role));
  if (m->magic != PF_PROTOCOL_MAGIC)
    return pf_msg_fail (-EPROTONOSUPPORT,
        "HELLO: bad magic 0x%08x (want 0x%08x)", m->magic, PF_PROTOCOL_MAGIC);
  if (m->version != PF_PROTOCOL_VERSION)
    return pf_msg_fail (-EPROTONOSUPPORT,
        "HELLO: protocol version %u not supported (this is version %u)",
        m->version, PF_PROTOCOL_VERSION);
  if (len != sizeof (struct pf_msg_hello))
    return pf_msg_fail (-EPROTO, "HELLO: size %zu, want %zu", len,
        sizeof (struct pf_msg_hello));
  m->max_held = get32 (buf, OFF (pf_msg_hello, max_held));
  m->flags = get32 (buf, OFF (pf_msg_hello, flags));
  m->session_id = get64 (buf, OFF (pf_msg_hello, session_id));
  if (m->role != PF_ROLE_PRODUCER && m->role != PF_ROLE_CONSUMER)
    return pf_msg_fail (-EPROTO, "HELLO: unknown role %u", m->role);
  if (m->role == PF_ROLE_PRODUCER && m->flags != 0)
    return pf_msg_fail (-EPROTO, "HELLO: producer flags 0x%x, must be 0",
        m->flags);
  if (m->role == PF_ROLE_CONSUMER && ((m->flags & ~PF_HELLO_CONSUMER_FLAGS)
          || (m->flags & PF_HELLO_DELIVERY_MASK) > PF_DELIVERY_NEWEST_FRAME))
    return pf_msg_fail (-EPROTO,
        "HELLO: consumer flags 0x%x (a delivery 0..2 "
        "and the FRAME_RING and DEVICE_SEGMENTS bits, nothing else)", m->flags);
  if (m->role == PF_ROLE_PRODUCER && m->max_held == 0)
    return pf_msg_fail (-EPROTO, "HELLO: producer announces max_held 0");
  if (m->role == PF_ROLE_PRODUCER && m->session_id == 0)
    return pf_msg_fail (-EPROTO, "HELLO: producer announces session id 0");
  if (m->role == PF_ROLE_CONSUMER && (m->max_held != 0 || m->session_id != 0))
    return pf_msg_fail (-EPROTO,
        "HELLO: consumer sets max_held/session_id (must " "be 0)");
  return 0;
}

static int
is_rate (uint64_t bits)
{
  double d = bits_double (bits);

  return d == d && d != 0.0 && d - d == 0.0;    /* not NaN, 0 or infinite */
}

static int
parse_segment_add (const void *buf, size_t len,
    const struct pf_msg_header *h, struct pf_msg_segment_add *m)
{
  if (len != sizeof (struct pf_msg_segment_add))
    return pf_msg_wrong_size ("SEGMENT_ADD", len,
        sizeof (struct pf_msg_segment_add));
  m->hdr = *h;
  m->segment_id = get64 (buf, OFF (pf_msg_segment_add, segment_id));
  m->size = get64 (buf, OFF (pf_msg_segment_add, size));
  m->flags = get32 (buf, OFF (pf_msg_segment_add, flags));
  m->reserved = get32 (buf, OFF (pf_msg_segment_add, reserved));
  if (m->segment_id == 0)
    return pf_msg_fail (-EPROTO, "SEGMENT_ADD: segment id 0");
  if (m->size == 0)
    return pf_msg_fail (-EPROTO, "SEGMENT_ADD: size 0");
  if (m->flags != 0 || m->reserved != 0)
    return pf_msg_fail (-EPROTO, "SEGMENT_ADD: flags/reserved not zero");
  return 0;
}

static int
parse_device_segment_add (const void *buf, size_t len,
    const struct pf_msg_header *h, struct pf_msg_device_segment_add *m)
{
  if (len != sizeof (struct pf_msg_device_segment_add))
    return pf_msg_wrong_size ("DEVICE_SEGMENT_ADD", len,
        sizeof (struct pf_msg_device_segment_add));
  m->hdr = *h;
  m->segment_id = get64 (buf, OFF (pf_msg_device_segment_add, segment_id));
  m->size = get64 (buf, OFF (pf_msg_device_segment_add, size));
  m->granularity = get64 (buf, OFF (pf_msg_device_segment_add, granularity));
  m->handle_type = get32 (buf, OFF (pf_msg_device_segment_add, handle_type));
  m->flags = get32 (buf, OFF (pf_msg_device_segment_add, flags));
  memcpy (m->device_uuid, (const uint8_t *) buf +
      OFF (pf_msg_device_segment_add, device_uuid), sizeof (m->device_uuid));
  return device_segment_check (m);
}

static int
parse_segment_remove (const void *buf, size_t len,
    const struct pf_msg_header *h, struct pf_msg_segment_remove *m)
{
  if (len != sizeof (struct pf_msg_segment_remove))
    return pf_msg_wrong_size ("SEGMENT_REMOVE", len,
        sizeof (struct pf_msg_segment_remove));
  m->hdr = *h;
  m->segment_id = get64 (buf, OFF (pf_msg_segment_remove, segment_id));
  if (m->segment_id == 0)
    return pf_msg_fail (-EPROTO, "SEGMENT_REMOVE: segment id 0");
  return 0;
}

/* The only message of variable size: the caps text follows the struct. */
static int
parse_caps (const void *buf, size_t len, struct pf_msg *msg)
{
  uint32_t length;
  const char *text;

  if (len < sizeof (struct pf_msg_caps))
    return pf_msg_fail (-EPROTO, "CAPS: %zu bytes, too short", len);
  msg->u.caps.caps_seq = get32 (buf, OFF (pf_msg_caps, caps_seq));
  length = get32 (buf, OFF (pf_msg_caps, length));
  if (length == 0 || length > PF_MAX_CAPS_LEN)
    return pf_msg_fail (-EPROTO, "CAPS: length %u (1..%u allowed)", length,
        PF_MAX_CAPS_LEN);
  if (len != sizeof (struct pf_msg_caps) + length)
    return pf_msg_fail (-EPROTO, "CAPS: length %u does not match size %zu",
        length, len);
  text = (const char *) buf + sizeof (struct pf_msg_caps);
  if (memchr (text, '\0', length) != NULL)
    return pf_msg_fail (-EPROTO, "CAPS: NUL byte inside the caps text");
  msg->u.caps.length = length;
  memcpy (msg->u.caps.text, text, length);
  msg->u.caps.text[length] = '\0';
  return 0;
}

/* A header alone: nothing to fill in. */
static int
parse_eos (size_t len)
{
  if (len != sizeof (struct pf_msg_header))
    return pf_msg_wrong_size ("EOS", len, sizeof (struct pf_msg_header));
  return 0;
}

/* Any seq: whether the consumer holds it is the producer's to check. */
static int
parse_domain (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_domain *m)
{
  static const uint8_t zero[16];

  if (len != sizeof (struct pf_msg_domain))
    return pf_msg_wrong_size ("DOMAIN", len, sizeof (struct pf_msg_domain));
  m->hdr = *h;
  m->flags = get32 (buf, OFF (pf_msg_domain, flags));
  m->reserved = get32 (buf, OFF (pf_msg_domain, reserved));
  memcpy (m->device_uuid, (const uint8_t *) buf + OFF (pf_msg_domain,
          device_uuid), 16);
  if (m->flags != 0 || m->reserved != 0)
    return pf_msg_fail (-EPROTO, "DOMAIN: flags 0x%x, reserved 0x%x (must "
        "be 0)", m->flags, m->reserved);
  if (memcmp (m->device_uuid, zero, 16) == 0)
    return pf_msg_fail (-EPROTO, "DOMAIN: device UUID all zero");
  return 0;
}

static int
parse_release (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_release *m)
{
  if (len != sizeof (struct pf_msg_release))
    return pf_msg_wrong_size ("RELEASE", len, sizeof (struct pf_msg_release));
  m->hdr = *h;
  m->seq = get64 (buf, OFF (pf_msg_release, seq));
  return 0;
}

static int
parse_stream (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_stream *m)
{
  size_t i;

  if (len != sizeof (struct pf_msg_stream))
    return pf_msg_wrong_size ("STREAM", len, sizeof (struct pf_msg_stream));
  m->hdr = *h;
  m->flags = get32 (buf, OFF (pf_msg_stream, flags));
  m->delivery = get32 (buf, OFF (pf_msg_stream, delivery));
  m->seg_format = get32 (buf, OFF (pf_msg_stream, seg_format));
  m->seg_flags = get32 (buf, OFF (pf_msg_stream, seg_flags));
  m->seg_rate = get64 (buf, OFF (pf_msg_stream, seg_rate));
  m->seg_applied_rate = get64 (buf, OFF (pf_msg_stream, seg_applied_rate));
  for (i = 0; i < N_SEG_U64; i++) {
    uint64_t v = get64 (buf, OFF (pf_msg_stream, seg_base) + 8 * i);

    memcpy ((uint8_t *) m + OFF (pf_msg_stream, seg_base) + 8 * i, &v, 8);
  }
  if (m->flags & ~(uint32_t) PF_STREAM_FLAGS_ALL)
    return pf_msg_fail (-EPROTO, "STREAM: unknown flags 0x%x", m->flags);
  if (m->delivery != PF_DELIVERY_EVERY_FRAME &&
      m->delivery != PF_DELIVERY_NEWEST_FRAME)
    return pf_msg_fail (-EPROTO, "STREAM: delivery %u (1 or 2)", m->delivery);
  if ((m->flags & PF_STREAM_DEMOTED) && m->delivery != PF_DELIVERY_NEWEST_FRAME)
    return pf_msg_fail (-EPROTO, "STREAM: demoted but delivery %u",
        m->delivery);
  if (!(m->flags & PF_STREAM_HAS_SEGMENT)) {
    static const uint8_t zero[sizeof (struct pf_msg_stream) -
        OFF (pf_msg_stream, seg_format)];

    if (memcmp ((const uint8_t *) buf + OFF (pf_msg_stream, seg_format),
            zero, sizeof (zero)) != 0)
      return pf_msg_fail (-EPROTO,
          "STREAM: segment fields set without a segment");
    return 0;
  }
  if (m->seg_format == 0)
    return pf_msg_fail (-EPROTO, "STREAM: segment format 0");
  if (!is_rate (m->seg_rate) || !is_rate (m->seg_applied_rate))
    return pf_msg_fail (-EPROTO,
        "STREAM: segment rate not finite and non-zero");
  return 0;
}

static int
parse_refuse (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_refuse *m)
{
  if (len != sizeof (struct pf_msg_refuse))
    return pf_msg_wrong_size ("REFUSE", len, sizeof (struct pf_msg_refuse));
  m->hdr = *h;
  m->reason = get32 (buf, OFF (pf_msg_refuse, reason));
  m->limit = get32 (buf, OFF (pf_msg_refuse, limit));
  if (m->reason != PF_REFUSE_TOO_MANY_CONSUMERS
      && m->reason != PF_REFUSE_FELL_BEHIND)
    return pf_msg_fail (-EPROTO, "REFUSE: unknown reason %u", m->reason);
  return 0;
}

static int
parse_frame_ring (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_frame_ring *m)
{
  uint32_t n;

  if (len != sizeof (struct pf_msg_frame_ring))
    return pf_msg_wrong_size ("FRAME_RING", len,
        sizeof (struct pf_msg_frame_ring));
  m->hdr = *h;
  m->n_entries = n = get32 (buf, OFF (pf_msg_frame_ring, n_entries));
  m->entry_size = get32 (buf, OFF (pf_msg_frame_ring, entry_size));
  m->size = get64 (buf, OFF (pf_msg_frame_ring, size));
  m->release_offset = get64 (buf, OFF (pf_msg_frame_ring, release_offset));
  if (n == 0 || n > PF_FRAME_RING_MAX || (n & (n - 1)) != 0)
    return pf_msg_fail (-EPROTO, "FRAME_RING: %u entries (a power of two, "
        "1..%u)", n, PF_FRAME_RING_MAX);
  if (m->entry_size != sizeof (struct pf_msg_frame))
    return pf_msg_fail (-EPROTO, "FRAME_RING: entries of %u bytes, must be %zu",
        m->entry_size, sizeof (struct pf_msg_frame));
  if (m->release_offset != PF_FRAME_RING_RELEASE_OFFSET (n) ||
      m->size != PF_FRAME_RING_SIZE (n))
    return pf_msg_fail (-EPROTO, "FRAME_RING: size %" PRIu64 " or release "
        "offset %" PRIu64 " does not match %u entries", m->size,
        m->release_offset, n);
  return 0;
}

int
pf_msg_parse (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg *msg)
{
  struct pf_msg_header h;
  int res;

  pf_msg_error_clear ();
  if (buf == NULL || msg == NULL)
    return pf_msg_fail (-EINVAL, "no buffer");
  memset (msg, 0, offsetof (struct pf_msg, u));
  /* the type of any packet of a possible size, even one refused below
   * (a producer tells a HELLO of another version by it) */
  if (len >= sizeof (struct pf_msg_header) && len <= PF_MAX_MSG_SIZE)
    msg->type = get32 (buf, OFF (pf_msg_header, type));
  if ((res = pf_msg_check_header (buf, len, n_fds, &h)) < 0)
    return res;

  switch (h.type) {
    case PF_MSG_HELLO:
      return parse_hello (buf, len, &h, &msg->u.hello);
    case PF_MSG_SEGMENT_ADD:
      return parse_segment_add (buf, len, &h, &msg->u.segment_add);
    case PF_MSG_SEGMENT_REMOVE:
      return parse_segment_remove (buf, len, &h, &msg->u.segment_remove);
    case PF_MSG_CAPS:
      return parse_caps (buf, len, msg);
    case PF_MSG_FRAME:
      return pf_msg_frame_parse (buf, len, &h, &msg->u.frame);
    case PF_MSG_EOS:
      return parse_eos (len);
    case PF_MSG_RELEASE:
      return parse_release (buf, len, &h, &msg->u.release);
    case PF_MSG_DOMAIN:
      return parse_domain (buf, len, &h, &msg->u.domain);
    case PF_MSG_STREAM:
      return parse_stream (buf, len, &h, &msg->u.stream);
    case PF_MSG_REFUSE:
      return parse_refuse (buf, len, &h, &msg->u.refuse);
    case PF_MSG_FRAME_RING:
      return parse_frame_ring (buf, len, &h, &msg->u.frame_ring);
    case PF_MSG_DEVICE_SEGMENT_ADD:
      return parse_device_segment_add (buf, len, &h,
          &msg->u.device_segment_add);
    default:
      return pf_msg_fail (-EPROTO, "unknown message type %u", h.type);
  }
}
