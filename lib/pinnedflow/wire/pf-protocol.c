/* pinnedflow: the wire protocol (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Encoders and the stateless, bounds-checked parser, and the FRAME's own
 * pair: pf_msg_frame_encode() (a pf_producer_frame to the wire) beside
 * pf_msg_frame_decode() (the wire to a pf_consumer_frame), both applying
 * the one statement of a FRAME's rules, frame_check(). Every field is read
 * and written through the little-endian helpers below at the offset the
 * struct gives it (the structs have no padding: their sizes are asserted),
 * so the code does not depend on the host byte order or on alignment of
 * @buf; a FRAME, every frame, is the host struct on a little-endian host
 * and is encoded and checked in place there (frame_fields_copy ()).
 *
 * Threads: any. The encoders and the decoders are pure but for the error
 * text, which each failing call leaves in the calling thread
 * (pf_msg_error ()).
 */
#include "pf-protocol-private.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Offsets of the pf_msg_frame fields, checked against the documented ones. */
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, seq) == 16, "seq");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, chunks) == 32, "chunks");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, pts) == 128, "pts");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, buffer_flags) == 184,
    "buffer_flags");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, width) == 192, "width");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, plane_offset) == 208,
    "plane_offset");
PF_STATIC_ASSERT (offsetof (struct pf_msg_frame, plane_stride) == 240,
    "plane_stride");
PF_STATIC_ASSERT (offsetof (struct pf_msg_hello, session_id) == 32,
    "session_id");
PF_STATIC_ASSERT (offsetof (struct pf_msg_stream, seg_rate) == 32, "seg_rate");
PF_STATIC_ASSERT (offsetof (struct pf_msg_stream, seg_duration) == 96,
    "seg_duration");

static __thread char last_error[256];

static int fail (int err, const char *fmt, ...)
    __attribute__((format (printf, 2, 3)));

static int
fail (int err, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (last_error, sizeof (last_error), fmt, ap);
  va_end (ap);
  return err;
}

const char *
pf_msg_error (void)
{
  return last_error;
}

/* Little-endian accessors at a byte offset: no alignment assumed. */
static inline void
put16 (void *buf, size_t off, uint16_t v)
{
  v = htole16 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline void
put32 (void *buf, size_t off, uint32_t v)
{
  v = htole32 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline void
put64 (void *buf, size_t off, uint64_t v)
{
  v = htole64 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline uint16_t
get16 (const void *buf, size_t off)
{
  uint16_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le16toh (v);
}

static inline uint32_t
get32 (const void *buf, size_t off)
{
  uint32_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le32toh (v);
}

static inline uint64_t
get64 (const void *buf, size_t off)
{
  uint64_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le64toh (v);
}

#define OFF(type, field) offsetof (struct type, field)

/* The fields of a FRAME after its header, as runs of little-endian integers
 * at their offsets. The struct's offsets are the wire's (no padding, sizes
 * asserted), so one table serves the encoder and the parser. */
struct field_run
{
  uint16_t offset;
  uint8_t width;                /* bytes of one integer: 4 or 8 */
  uint8_t count;
};

#define RUN(field, width, count) { OFF (pf_msg_frame, field), width, count }
static const struct field_run frame_fields[] = {
  RUN (seq, 8, 1),
  RUN (caps_seq, 4, 2),         /* caps_seq, n_chunks */
  RUN (chunks, 8, 3 * PF_MAX_CHUNKS),   /* segment_id, offset, size each */
  RUN (pts, 8, 7),              /* pts .. send_time */
  RUN (buffer_flags, 4, 6),     /* buffer_flags .. reserved */
  RUN (plane_offset, 8, PF_MAX_PLANES),
  RUN (plane_stride, 4, PF_MAX_PLANES),
};

#undef RUN

PF_STATIC_ASSERT (OFF (pf_msg_frame, send_time) == OFF (pf_msg_frame, pts) +
    6 * 8, "pts .. send_time are 7 consecutive 64-bit fields");
PF_STATIC_ASSERT (OFF (pf_msg_frame, plane_offset) ==
    OFF (pf_msg_frame, buffer_flags) + 6 * 4,
    "buffer_flags .. reserved are 6 consecutive 32-bit fields");
PF_STATIC_ASSERT (OFF (pf_msg_frame, plane_stride) + PF_MAX_PLANES * 4 ==
    sizeof (struct pf_msg_frame), "plane_stride ends the frame");

/* Copies the FRAME fields from @src to @dst, swapping each between host
 * and little-endian order (the same operation both ways): encodes when @dst
 * is the wire buffer, decodes when @src is. @dst may be @src (in place). */
static void
frame_fields_copy (void *dst, const void *src)
{
  size_t r;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (dst == src)
    return;                     /* host order is the wire's */
#endif
  for (r = 0; r < sizeof (frame_fields) / sizeof (frame_fields[0]); r++) {
    const struct field_run *f = &frame_fields[r];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* host order is the wire's: a run is copied whole (one FRAME is
     * encoded and parsed per frame on each side; field by field this was
     * ~740 instructions a copy) */
    memcpy ((uint8_t *) dst + f->offset, (const uint8_t *) src + f->offset,
        (size_t) f->width * f->count);
#else
    size_t k;

    /* one side is in host order, the other little-endian: each integer is
     * read raw and byte-swapped once (put64 (get64 ()) would swap twice,
     * i.e. copy host order onto the wire) */
    for (k = 0; k < f->count; k++) {
      size_t o = f->offset + k * f->width;

      if (f->width == 8) {
        uint64_t v;

        memcpy (&v, (const uint8_t *) src + o, sizeof (v));
        v = htole64 (v);
        memcpy ((uint8_t *) dst + o, &v, sizeof (v));
      } else {
        uint32_t v;

        memcpy (&v, (const uint8_t *) src + o, sizeof (v));
        v = htole32 (v);
        memcpy ((uint8_t *) dst + o, &v, sizeof (v));
      }
    }
#endif
  }
}

/* The header alone, over whatever @buf holds. */
static void
put_header (void *buf, uint32_t type, size_t size, uint32_t n_fds)
{
  put32 (buf, OFF (pf_msg_header, type), type);
  put32 (buf, OFF (pf_msg_header, size), (uint32_t) size);
  put32 (buf, OFF (pf_msg_header, n_fds), n_fds);
  put32 (buf, OFF (pf_msg_header, reserved), 0);
}

static size_t
write_header (void *buf, uint32_t type, size_t size, uint32_t n_fds)
{
  memset (buf, 0, size);
  put_header (buf, type, size, n_fds);
  return size;
}

size_t
pf_msg_write_hello_full (void *buf, uint16_t version, uint16_t role,
    uint32_t max_held, uint32_t flags, uint64_t session_id)
{
  size_t n = write_header (buf, PF_MSG_HELLO, sizeof (struct pf_msg_hello),
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
  size_t n = write_header (buf, PF_MSG_STREAM, sizeof (struct pf_msg_stream),
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
  size_t n = write_header (buf, PF_MSG_REFUSE, sizeof (struct pf_msg_refuse),
      0);

  put32 (buf, OFF (pf_msg_refuse, reason), reason);
  put32 (buf, OFF (pf_msg_refuse, limit), limit);
  return n;
}

size_t
pf_msg_write_frame_ring (void *buf, uint32_t n_entries)
{
  size_t n = write_header (buf, PF_MSG_FRAME_RING,
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
  size_t n = write_header (buf, PF_MSG_SEGMENT_ADD,
      sizeof (struct pf_msg_segment_add), 1);

  put64 (buf, OFF (pf_msg_segment_add, segment_id), segment_id);
  put64 (buf, OFF (pf_msg_segment_add, size), size);
  return n;
}

size_t
pf_msg_write_segment_remove (void *buf, uint64_t segment_id)
{
  size_t n = write_header (buf, PF_MSG_SEGMENT_REMOVE,
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
  n = write_header (buf, PF_MSG_CAPS, sizeof (struct pf_msg_caps) + len, 0);
  put32 (buf, OFF (pf_msg_caps, caps_seq), caps_seq);
  put32 (buf, OFF (pf_msg_caps, length), (uint32_t) len);
  memcpy ((uint8_t *) buf + sizeof (struct pf_msg_caps), caps, len);
  return n;
}

size_t
pf_msg_write_eos (void *buf)
{
  return write_header (buf, PF_MSG_EOS, sizeof (struct pf_msg_header), 0);
}

size_t
pf_msg_write_release (void *buf, uint64_t seq)
{
  size_t n = write_header (buf, PF_MSG_RELEASE,
      sizeof (struct pf_msg_release), 0);

  put64 (buf, OFF (pf_msg_release, seq), seq);
  return n;
}

uint64_t
pf_monotonic_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * UINT64_C (1000000000) + (uint64_t) ts.tv_nsec;
}

static const char *
type_name (uint32_t type)
{
  switch (type) {
    case PF_MSG_HELLO:
      return "HELLO";
    case PF_MSG_SEGMENT_ADD:
      return "SEGMENT_ADD";
    case PF_MSG_SEGMENT_REMOVE:
      return "SEGMENT_REMOVE";
    case PF_MSG_CAPS:
      return "CAPS";
    case PF_MSG_FRAME:
      return "FRAME";
    case PF_MSG_EOS:
      return "EOS";
    case PF_MSG_RELEASE:
      return "RELEASE";
    case PF_MSG_STREAM:
      return "STREAM";
    case PF_MSG_REFUSE:
      return "REFUSE";
    case PF_MSG_FRAME_RING:
      return "FRAME_RING";
    default:
      return NULL;
  }
}

static void
read_header (const void *buf, struct pf_msg_header *h)
{
  h->type = get32 (buf, OFF (pf_msg_header, type));
  h->size = get32 (buf, OFF (pf_msg_header, size));
  h->n_fds = get32 (buf, OFF (pf_msg_header, n_fds));
  h->reserved = get32 (buf, OFF (pf_msg_header, reserved));
}

/* A fixed-size message of the wrong size. */
static int
wrong_size (const char *name, size_t len, size_t want)
{
  return fail (-EPROTO, "%s: size %zu, want %zu", name, len, want);
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
    return fail (-EPROTO, "HELLO: %zu bytes, too short", len);
  m->magic = get32 (buf, OFF (pf_msg_hello, magic));
  m->version = get16 (buf, OFF (pf_msg_hello, version));
  m->role = get16 (buf, OFF (pf_msg_hello, role));
  if (m->magic != PF_PROTOCOL_MAGIC)
    return fail (-EPROTONOSUPPORT, "HELLO: bad magic 0x%08x (want 0x%08x)",
        m->magic, PF_PROTOCOL_MAGIC);
  if (m->version != PF_PROTOCOL_VERSION)
    return fail (-EPROTONOSUPPORT,
        "HELLO: protocol version %u not supported (this is version %u)",
        m->version, PF_PROTOCOL_VERSION);
  if (len != sizeof (struct pf_msg_hello))
    return fail (-EPROTO, "HELLO: size %zu, want %zu", len,
        sizeof (struct pf_msg_hello));
  m->max_held = get32 (buf, OFF (pf_msg_hello, max_held));
  m->flags = get32 (buf, OFF (pf_msg_hello, flags));
  m->session_id = get64 (buf, OFF (pf_msg_hello, session_id));
  if (m->role != PF_ROLE_PRODUCER && m->role != PF_ROLE_CONSUMER)
    return fail (-EPROTO, "HELLO: unknown role %u", m->role);
  if (m->role == PF_ROLE_PRODUCER && m->flags != 0)
    return fail (-EPROTO, "HELLO: producer flags 0x%x, must be 0", m->flags);
  if (m->role == PF_ROLE_CONSUMER && ((m->flags & ~(PF_HELLO_DELIVERY_MASK |
                  PF_HELLO_FRAME_RING | PF_HELLO_FRAME_RING_EVENTFD)) ||
          (m->flags & PF_HELLO_DELIVERY_MASK) > PF_DELIVERY_NEWEST_FRAME))
    return fail (-EPROTO, "HELLO: consumer flags 0x%x (a delivery 0..2 "
        "and the FRAME_RING bits, nothing else)", m->flags);
  if (m->role == PF_ROLE_PRODUCER && m->max_held == 0)
    return fail (-EPROTO, "HELLO: producer announces max_held 0");
  if (m->role == PF_ROLE_PRODUCER && m->session_id == 0)
    return fail (-EPROTO, "HELLO: producer announces session id 0");
  if (m->role == PF_ROLE_CONSUMER && (m->max_held != 0 || m->session_id != 0))
    return fail (-EPROTO, "HELLO: consumer sets max_held/session_id (must "
        "be 0)");
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
    return wrong_size ("SEGMENT_ADD", len, sizeof (struct pf_msg_segment_add));
  m->hdr = *h;
  m->segment_id = get64 (buf, OFF (pf_msg_segment_add, segment_id));
  m->size = get64 (buf, OFF (pf_msg_segment_add, size));
  m->flags = get32 (buf, OFF (pf_msg_segment_add, flags));
  m->reserved = get32 (buf, OFF (pf_msg_segment_add, reserved));
  if (m->segment_id == 0)
    return fail (-EPROTO, "SEGMENT_ADD: segment id 0");
  if (m->size == 0)
    return fail (-EPROTO, "SEGMENT_ADD: size 0");
  if (m->flags != 0 || m->reserved != 0)
    return fail (-EPROTO, "SEGMENT_ADD: flags/reserved not zero");
  return 0;
}

static int
parse_segment_remove (const void *buf, size_t len,
    const struct pf_msg_header *h, struct pf_msg_segment_remove *m)
{
  if (len != sizeof (struct pf_msg_segment_remove))
    return wrong_size ("SEGMENT_REMOVE", len,
        sizeof (struct pf_msg_segment_remove));
  m->hdr = *h;
  m->segment_id = get64 (buf, OFF (pf_msg_segment_remove, segment_id));
  if (m->segment_id == 0)
    return fail (-EPROTO, "SEGMENT_REMOVE: segment id 0");
  return 0;
}

/* The only message of variable size: the caps text follows the struct. */
static int
parse_caps (const void *buf, size_t len, struct pf_msg *msg)
{
  uint32_t length;
  const char *text;

  if (len < sizeof (struct pf_msg_caps))
    return fail (-EPROTO, "CAPS: %zu bytes, too short", len);
  msg->u.caps.caps_seq = get32 (buf, OFF (pf_msg_caps, caps_seq));
  length = get32 (buf, OFF (pf_msg_caps, length));
  if (length == 0 || length > PF_MAX_CAPS_LEN)
    return fail (-EPROTO, "CAPS: length %u (1..%u allowed)", length,
        PF_MAX_CAPS_LEN);
  if (len != sizeof (struct pf_msg_caps) + length)
    return fail (-EPROTO, "CAPS: length %u does not match size %zu",
        length, len);
  text = (const char *) buf + sizeof (struct pf_msg_caps);
  if (memchr (text, '\0', length) != NULL)
    return fail (-EPROTO, "CAPS: NUL byte inside the caps text");
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
    return wrong_size ("EOS", len, sizeof (struct pf_msg_header));
  return 0;
}

/* Any seq: whether the consumer holds it is the producer's to check. */
static int
parse_release (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_release *m)
{
  if (len != sizeof (struct pf_msg_release))
    return wrong_size ("RELEASE", len, sizeof (struct pf_msg_release));
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
    return wrong_size ("STREAM", len, sizeof (struct pf_msg_stream));
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
    return fail (-EPROTO, "STREAM: unknown flags 0x%x", m->flags);
  if (m->delivery != PF_DELIVERY_EVERY_FRAME &&
      m->delivery != PF_DELIVERY_NEWEST_FRAME)
    return fail (-EPROTO, "STREAM: delivery %u (1 or 2)", m->delivery);
  if ((m->flags & PF_STREAM_DEMOTED) && m->delivery != PF_DELIVERY_NEWEST_FRAME)
    return fail (-EPROTO, "STREAM: demoted but delivery %u", m->delivery);
  if (!(m->flags & PF_STREAM_HAS_SEGMENT)) {
    static const uint8_t zero[sizeof (struct pf_msg_stream) -
        OFF (pf_msg_stream, seg_format)];

    if (memcmp ((const uint8_t *) buf + OFF (pf_msg_stream, seg_format),
            zero, sizeof (zero)) != 0)
      return fail (-EPROTO, "STREAM: segment fields set without a segment");
    return 0;
  }
  if (m->seg_format == 0)
    return fail (-EPROTO, "STREAM: segment format 0");
  if (!is_rate (m->seg_rate) || !is_rate (m->seg_applied_rate))
    return fail (-EPROTO, "STREAM: segment rate not finite and non-zero");
  return 0;
}

static int
parse_refuse (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_refuse *m)
{
  if (len != sizeof (struct pf_msg_refuse))
    return wrong_size ("REFUSE", len, sizeof (struct pf_msg_refuse));
  m->hdr = *h;
  m->reason = get32 (buf, OFF (pf_msg_refuse, reason));
  m->limit = get32 (buf, OFF (pf_msg_refuse, limit));
  if (m->reason != PF_REFUSE_TOO_MANY_CONSUMERS
      && m->reason != PF_REFUSE_FELL_BEHIND)
    return fail (-EPROTO, "REFUSE: unknown reason %u", m->reason);
  return 0;
}

static int
parse_frame_ring (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_frame_ring *m)
{
  uint32_t n;

  if (len != sizeof (struct pf_msg_frame_ring))
    return wrong_size ("FRAME_RING", len, sizeof (struct pf_msg_frame_ring));
  m->hdr = *h;
  m->n_entries = n = get32 (buf, OFF (pf_msg_frame_ring, n_entries));
  m->entry_size = get32 (buf, OFF (pf_msg_frame_ring, entry_size));
  m->size = get64 (buf, OFF (pf_msg_frame_ring, size));
  m->release_offset = get64 (buf, OFF (pf_msg_frame_ring, release_offset));
  if (n == 0 || n > PF_FRAME_RING_MAX || (n & (n - 1)) != 0)
    return fail (-EPROTO, "FRAME_RING: %u entries (a power of two, "
        "1..%u)", n, PF_FRAME_RING_MAX);
  if (m->entry_size != sizeof (struct pf_msg_frame))
    return fail (-EPROTO, "FRAME_RING: entries of %u bytes, must be %zu",
        m->entry_size, sizeof (struct pf_msg_frame));
  if (m->release_offset != PF_FRAME_RING_RELEASE_OFFSET (n) ||
      m->size != PF_FRAME_RING_SIZE (n))
    return fail (-EPROTO, "FRAME_RING: size %" PRIu64 " or release "
        "offset %" PRIu64 " does not match %u entries", m->size,
        m->release_offset, n);
  return 0;
}

/* The header of a packet of @len bytes with @n_fds fds attached: a known
 * type, the size the packet has, no reserved bits, the fds its type
 * carries. 0 with @h filled, or -EPROTO. */
static int
check_header (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg_header *h)
{
  const char *name;
  uint32_t want_fds = 0;

  if (len < sizeof (struct pf_msg_header))
    return fail (-EPROTO, "message of %zu bytes, shorter than a header", len);
  if (len > PF_MAX_MSG_SIZE)
    return fail (-EPROTO, "message of %zu bytes, larger than %zu", len,
        (size_t) PF_MAX_MSG_SIZE);
  read_header (buf, h);
  if ((name = type_name (h->type)) == NULL)
    return fail (-EPROTO, "unknown message type %u", h->type);
  if (h->size != len)
    return fail (-EPROTO, "%s: header says %u bytes, packet has %zu", name,
        h->size, len);
  if (h->reserved != 0)
    return fail (-EPROTO, "%s: header reserved field not zero", name);
  if (h->type == PF_MSG_SEGMENT_ADD)
    want_fds = 1;
  else if (h->type == PF_MSG_FRAME_RING)
    want_fds = 3;
  if (h->n_fds != want_fds)
    return fail (-EPROTO, "%s: header announces %u fds, must be %u", name,
        h->n_fds, want_fds);
  if (n_fds != want_fds)
    return fail (-EPROTO, "%s: %u fds attached, must be %u", name, n_fds,
        want_fds);
  return 0;
}

/* ---- FRAME: the encoder, the rules, the decoder -------------------------
 * One FRAME per frame each way, so these three are the frame's path
 * (docs/design.md, "The path of one frame", steps 4 and 6): the producer
 * encodes with pf_msg_frame_encode(), the consumer decodes with
 * pf_msg_frame_decode(), and both apply frame_check(), the one statement
 * of what a FRAME's fields must be. pf_msg_parse() reads a FRAME with the
 * same two pieces (tests and fuzzers use it); pf_msg_write_frame() writes
 * any fields unchecked, for tests that forge what a hostile peer sends. */

/* A received frame (pf_consumer_frame) is laid out as the FRAME's fields
 * from seq on, the message's reserved field where the frame has padding:
 * the decoder copies a checked (host order) FRAME into it in one piece,
 * instead of filling it field by field (issue 13, every frame). */
#define SAME_AS_MSG(field) PF_STATIC_ASSERT (offsetof (pf_consumer_frame, \
        field) == offsetof (struct pf_msg_frame, field) - \
    offsetof (struct pf_msg_frame, seq), "pf_consumer_frame." #field)
SAME_AS_MSG (seq);
SAME_AS_MSG (caps_seq);
SAME_AS_MSG (n_chunks);
SAME_AS_MSG (chunks);
SAME_AS_MSG (pts);
SAME_AS_MSG (dts);
SAME_AS_MSG (duration);
SAME_AS_MSG (offset);
SAME_AS_MSG (offset_end);
SAME_AS_MSG (clock_pts);
SAME_AS_MSG (send_time);
SAME_AS_MSG (buffer_flags);
SAME_AS_MSG (meta_flags);
SAME_AS_MSG (width);
SAME_AS_MSG (height);
SAME_AS_MSG (n_planes);
SAME_AS_MSG (plane_offset);
SAME_AS_MSG (plane_stride);
PF_STATIC_ASSERT (offsetof (pf_consumer_frame, plane_offset) ==
    offsetof (pf_consumer_frame, n_planes) + 8, "one hole, for reserved");
PF_STATIC_ASSERT (sizeof (pf_consumer_frame) == sizeof (struct pf_msg_frame) -
    offsetof (struct pf_msg_frame, seq), "pf_consumer_frame size");
PF_STATIC_ASSERT (sizeof (pf_frame_chunk) == sizeof (struct pf_msg_chunk)
    && offsetof (pf_frame_chunk, segment_id) ==
    offsetof (struct pf_msg_chunk, segment_id)
    && offsetof (pf_frame_chunk, offset) ==
    offsetof (struct pf_msg_chunk, offset)
    && offsetof (pf_frame_chunk, size) == offsetof (struct pf_msg_chunk, size),
    "pf_frame_chunk");
#undef SAME_AS_MSG

/* What a receiver requires of a FRAME's fields (@f in host order), the
 * checks that need no state: 0, or -EPROTO with pf_msg_error() set. The
 * encoder applies it to what it is about to send, so a producer never
 * sends what its consumers would refuse, with the receiver's words for
 * why. */
static int
frame_check (const struct pf_msg_frame *f)
{
  uint64_t total = 0;
  unsigned int i;

  if (f->n_chunks < 1 || f->n_chunks > PF_MAX_CHUNKS)
    return fail (-EPROTO, "FRAME %" PRIu64 ": %u chunks (1..%u allowed)",
        f->seq, f->n_chunks, PF_MAX_CHUNKS);
  for (i = 0; i < PF_MAX_CHUNKS; i++) {
    const struct pf_msg_chunk *c = &f->chunks[i];

    if (i >= f->n_chunks) {
      if (c->segment_id || c->offset || c->size)
        return fail (-EPROTO, "FRAME %" PRIu64 ": unused chunk %u not zero",
            f->seq, i);
      continue;
    }
    if (c->segment_id == 0)
      return fail (-EPROTO, "FRAME %" PRIu64 ": chunk %u has segment id 0",
          f->seq, i);
    if (c->size == 0)
      return fail (-EPROTO, "FRAME %" PRIu64 ": chunk %u is empty", f->seq, i);
    if (c->offset > UINT64_MAX - c->size)
      return fail (-EPROTO, "FRAME %" PRIu64 ": chunk %u offset %" PRIu64
          " + size %" PRIu64 " overflows", f->seq, i, c->offset, c->size);
    if (total > UINT64_MAX - c->size)
      return fail (-EPROTO, "FRAME %" PRIu64 ": total size overflows", f->seq);
    total += c->size;
  }
  if (f->reserved != 0)
    return fail (-EPROTO, "FRAME %" PRIu64 ": reserved field not zero", f->seq);
  if (f->meta_flags & ~(uint32_t) PF_FRAME_HAS_VIDEO_META)
    return fail (-EPROTO, "FRAME %" PRIu64 ": unknown meta flags 0x%x",
        f->seq, f->meta_flags);
  if (f->n_planes > PF_MAX_PLANES)
    return fail (-EPROTO, "FRAME %" PRIu64 ": %u planes (at most %u)",
        f->seq, f->n_planes, PF_MAX_PLANES);
  if (!(f->meta_flags & PF_FRAME_HAS_VIDEO_META)) {
    if (f->n_planes || f->width || f->height)
      return fail (-EPROTO, "FRAME %" PRIu64 ": video fields set without "
          "video meta", f->seq);
  } else if (f->n_planes == 0) {
    return fail (-EPROTO, "FRAME %" PRIu64 ": video meta with 0 planes",
        f->seq);
  }
  for (i = 0; i < PF_MAX_PLANES; i++) {
    if (i >= f->n_planes) {
      if (f->plane_offset[i] || f->plane_stride[i])
        return fail (-EPROTO, "FRAME %" PRIu64 ": unused plane %u not zero",
            f->seq, i);
      continue;
    }
    if (f->plane_offset[i] >= total)
      return fail (-EPROTO, "FRAME %" PRIu64 ": plane %u offset %" PRIu64
          " outside the frame (%" PRIu64 " bytes)", f->seq, i,
          f->plane_offset[i], total);
    if (f->plane_stride[i] == INT32_MIN)
      return fail (-EPROTO, "FRAME %" PRIu64 ": plane %u stride invalid",
          f->seq, i);
  }
  return 0;
}

size_t
pf_msg_write_frame (void *buf, const struct pf_msg_frame *f)
{
  size_t n = write_header (buf, PF_MSG_FRAME, sizeof (struct pf_msg_frame),
      0);

  frame_fields_copy (buf, f);
  return n;
}

int
pf_msg_frame_encode (struct pf_msg_frame *m, const pf_producer_frame * frame,
    uint64_t seq, uint32_t caps_seq, uint64_t send_time)
{
  unsigned int i;

  last_error[0] = '\0';
  /* unused chunks and planes, and reserved, are zero: all zeroed first
   * (a constant size), the used ones written over; what a caller left in
   * unused entries is not looked at (pf_producer_frame says to zero it) */
  memset (m, 0, sizeof (*m));
  m->seq = seq;
  m->caps_seq = caps_seq;
  m->n_chunks = frame->n_chunks;
  for (i = 0; i < frame->n_chunks && i < PF_MAX_CHUNKS; i++) {
    m->chunks[i].segment_id = frame->chunks[i].segment_id;
    m->chunks[i].offset = frame->chunks[i].offset;
    m->chunks[i].size = frame->chunks[i].size;
  }
  m->pts = frame->pts;
  m->dts = frame->dts;
  m->duration = frame->duration;
  m->offset = frame->offset;
  m->offset_end = frame->offset_end;
  m->clock_pts = frame->clock_pts;
  m->send_time = send_time;
  m->buffer_flags = frame->buffer_flags;
  m->meta_flags = frame->meta_flags;
  m->width = frame->width;
  m->height = frame->height;
  m->n_planes = frame->n_planes;
  if (frame->meta_flags & PF_FRAME_HAS_VIDEO_META) {
    for (i = 0; i < frame->n_planes && i < PF_MAX_PLANES; i++) {
      m->plane_offset[i] = frame->plane_offset[i];
      m->plane_stride[i] = frame->plane_stride[i];
    }
  }
  if (frame_check (m) < 0)
    return -EINVAL;
  /* to the wire's order in place: nothing to do on a little-endian host,
   * where the struct is the bytes sent (issue 13: the only copy of the
   * frame's fields, made straight into what is sent) */
  put_header (m, PF_MSG_FRAME, sizeof (*m), 0);
  frame_fields_copy (m, m);
  return 0;
}

static int
parse_frame (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_frame *f)
{
  if (len != sizeof (struct pf_msg_frame))
    return wrong_size ("FRAME", len, sizeof (struct pf_msg_frame));
  f->hdr = *h;
  frame_fields_copy (f, buf);
  return frame_check (f);
}

int
pf_msg_frame_decode (const void *buf, size_t len, unsigned int n_fds,
    pf_consumer_frame * frame)
{
  struct pf_msg_header h;
  struct pf_msg_frame copy;
  const struct pf_msg_frame *f = &copy;
  int res;

  last_error[0] = '\0';
  if (buf == NULL || len < sizeof (struct pf_msg_header) ||
      get32 (buf, OFF (pf_msg_header, type)) != PF_MSG_FRAME)
    return -ENOMSG;
  if ((res = check_header (buf, len, n_fds, &h)) < 0)
    return res;
  if (len != sizeof (struct pf_msg_frame))
    return wrong_size ("FRAME", len, sizeof (struct pf_msg_frame));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* the packet is the host struct (the caller's own copy, not shared
   * memory): checked in place, copied once, into @frame */
  if ((uintptr_t) buf % _Alignof (struct pf_msg_frame) == 0)
    f = buf;
  else
#endif
  {
    copy.hdr = h;
    frame_fields_copy (&copy, buf);
  }
  if ((res = frame_check (f)) < 0)
    return res;
  memcpy (frame, &f->seq, sizeof (*frame));
  return 0;
}

int
pf_msg_parse (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg *msg)
{
  struct pf_msg_header h;
  int res;

  last_error[0] = '\0';
  if (buf == NULL || msg == NULL)
    return fail (-EINVAL, "no buffer");
  memset (msg, 0, offsetof (struct pf_msg, u));
  if (len >= sizeof (struct pf_msg_header))
    msg->type = get32 (buf, OFF (pf_msg_header, type));
  if ((res = check_header (buf, len, n_fds, &h)) < 0)
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
      return parse_frame (buf, len, &h, &msg->u.frame);
    case PF_MSG_EOS:
      return parse_eos (len);
    case PF_MSG_RELEASE:
      return parse_release (buf, len, &h, &msg->u.release);
    case PF_MSG_STREAM:
      return parse_stream (buf, len, &h, &msg->u.stream);
    case PF_MSG_REFUSE:
      return parse_refuse (buf, len, &h, &msg->u.refuse);
    case PF_MSG_FRAME_RING:
      return parse_frame_ring (buf, len, &h, &msg->u.frame_ring);
    default:
      return fail (-EPROTO, "unknown message type %u", h.type);
  }
}
