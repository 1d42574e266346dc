/* pinnedflow: the wire codec's core and the FRAME (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The FRAME, both ways: pf_msg_frame_encode() (a pf_producer_frame to the
 * wire) beside pf_msg_frame_decode() (the wire to a pf_consumer_frame),
 * both applying the one statement of a FRAME's rules, frame_check(); and
 * what every message shares: the error text (pf_msg_error()), the header
 * (written, checked). The other messages and pf_msg_parse() are
 * pf-protocol-control.c, which calls this file (never the reverse).
 *
 * Every field is read and written through the little-endian helpers of
 * pf-codec-private.h at the offset the struct gives it (the structs have
 * no padding: their sizes are asserted), so the code does not depend on
 * the host byte order or on alignment of @buf; a FRAME, every frame, is
 * the host struct on a little-endian host and is encoded and checked in
 * place there (frame_fields_copy ()).
 *
 * Threads: any. The codec is pure but for the error text, which each
 * failing call leaves in the calling thread (pf_msg_error ()).
 */
#include "pf-protocol-private.h"
#include "pf-codec-private.h"

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

static __thread char last_error[256];

int
pf_msg_fail (int err, const char *fmt, ...)
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

void
pf_msg_error_clear (void)
{
  last_error[0] = '\0';
}

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

size_t
pf_msg_write_header (void *buf, uint32_t type, size_t size, uint32_t n_fds)
{
  memset (buf, 0, size);
  put_header (buf, type, size, n_fds);
  return size;
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
    case PF_MSG_DEVICE_SEGMENT_ADD:
      return "DEVICE_SEGMENT_ADD";
    case PF_MSG_DOMAIN:
      return "DOMAIN";
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

/* A fixed-size message of the wrong size (pf-codec-private.h). */
int
pf_msg_wrong_size (const char *name, size_t len, size_t want)
{
  return pf_msg_fail (-EPROTO, "%s: size %zu, want %zu", name, len, want);
}

/* The header of a packet of @len bytes with @n_fds fds attached: a known
 * type, the size the packet has, no reserved bits, the fds its type
 * carries. 0 with @h filled, or -EPROTO. */
int
pf_msg_check_header (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg_header *h)
{
  const char *name;
  uint32_t want_fds = 0;

  if (len < sizeof (struct pf_msg_header))
    return pf_msg_fail (-EPROTO, "message of %zu bytes, shorter than a header",
        len);
  if (len > PF_MAX_MSG_SIZE)
    return pf_msg_fail (-EPROTO, "message of %zu bytes, larger than %zu", len,
        (size_t) PF_MAX_MSG_SIZE);
  read_header (buf, h);
  if ((name = type_name (h->type)) == NULL)
    return pf_msg_fail (-EPROTO, "unknown message type %u", h->type);
  if (h->size != len)
    return pf_msg_fail (-EPROTO, "%s: header says %u bytes, packet has %zu",
        name, h->size, len);
  if (h->reserved != 0)
    return pf_msg_fail (-EPROTO, "%s: header reserved field not zero", name);
  if (h->type == PF_MSG_SEGMENT_ADD || h->type == PF_MSG_DEVICE_SEGMENT_ADD)
    want_fds = 1;
  else if (h->type == PF_MSG_FRAME_RING)
    want_fds = 3;
  if (h->n_fds != want_fds)
    return pf_msg_fail (-EPROTO, "%s: header announces %u fds, must be %u",
        name, h->n_fds, want_fds);
  if (n_fds != want_fds)
    return pf_msg_fail (-EPROTO, "%s: %u fds attached, must be %u", name, n_fds,
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
    return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": %u chunks (1..%u allowed)",
        f->seq, f->n_chunks, PF_MAX_CHUNKS);
  for (i = 0; i < PF_MAX_CHUNKS; i++) {
    const struct pf_msg_chunk *c = &f->chunks[i];

    if (i >= f->n_chunks) {
      if (c->segment_id || c->offset || c->size)
        return pf_msg_fail (-EPROTO,
            "FRAME %" PRIu64 ": unused chunk %u not zero", f->seq, i);
      continue;
    }
    if (c->segment_id == 0)
      return pf_msg_fail (-EPROTO,
          "FRAME %" PRIu64 ": chunk %u has segment id 0", f->seq, i);
    if (c->size == 0)
      return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": chunk %u is empty",
          f->seq, i);
    if (c->offset > UINT64_MAX - c->size)
      return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": chunk %u offset %" PRIu64
          " + size %" PRIu64 " overflows", f->seq, i, c->offset, c->size);
    if (total > UINT64_MAX - c->size)
      return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": total size overflows",
          f->seq);
    total += c->size;
  }
  if (f->reserved != 0)
    return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": reserved field not zero",
        f->seq);
  if (f->meta_flags & ~(uint32_t) PF_FRAME_HAS_VIDEO_META)
    return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": unknown meta flags 0x%x",
        f->seq, f->meta_flags);
  if (f->n_planes > PF_MAX_PLANES)
    return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": %u planes (at most %u)",
        f->seq, f->n_planes, PF_MAX_PLANES);
  if (!(f->meta_flags & PF_FRAME_HAS_VIDEO_META)) {
    if (f->n_planes || f->width || f->height)
      return pf_msg_fail (-EPROTO,
          "FRAME %" PRIu64 ": video fields set without " "video meta", f->seq);
  } else if (f->n_planes == 0) {
    return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": video meta with 0 planes",
        f->seq);
  }
  for (i = 0; i < PF_MAX_PLANES; i++) {
    if (i >= f->n_planes) {
      if (f->plane_offset[i] || f->plane_stride[i])
        return pf_msg_fail (-EPROTO,
            "FRAME %" PRIu64 ": unused plane %u not zero", f->seq, i);
      continue;
    }
    if (f->plane_offset[i] >= total)
      return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": plane %u offset %" PRIu64
          " outside the frame (%" PRIu64 " bytes)", f->seq, i,
          f->plane_offset[i], total);
    if (f->plane_stride[i] == INT32_MIN)
      return pf_msg_fail (-EPROTO, "FRAME %" PRIu64 ": plane %u stride invalid",
          f->seq, i);
  }
  return 0;
}

size_t
pf_msg_write_frame (void *buf, const struct pf_msg_frame *f)
{
  size_t n =
      pf_msg_write_header (buf, PF_MSG_FRAME, sizeof (struct pf_msg_frame),
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

int
pf_msg_frame_parse (const void *buf, size_t len, const struct pf_msg_header *h,
    struct pf_msg_frame *f)
{
  if (len != sizeof (struct pf_msg_frame))
    return pf_msg_wrong_size ("FRAME", len, sizeof (struct pf_msg_frame));
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
  if ((res = pf_msg_check_header (buf, len, n_fds, &h)) < 0)
    return res;
  if (len != sizeof (struct pf_msg_frame))
    return pf_msg_wrong_size ("FRAME", len, sizeof (struct pf_msg_frame));
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
